"""The vocabulary every other part speaks: kinds, events, signatures and their changes.

Plain values only: nothing here imports TensorFlow, Keras or JAX, holds a tensor,
a layer or a graph, or builds a sentence for a person to read.
"""
