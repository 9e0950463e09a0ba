"""The seed layer's print, routed by traceguard.side_effects: once per signature, or every step.

Run: python examples/print_under_tracing.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard  # noqa: E402


class OnceLayer(traceguard.TraceAwareLayer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(32)

    @traceguard.side_effects(print="once")
    def call(self, inputs):
        print("Tracing for", inputs.shape)  # Once per input signature.
        return self.dense(inputs)


class StepLayer(OnceLayer):
    @traceguard.side_effects(print="tf.print")
    def call(self, inputs):
        print("Batch of", tf.shape(inputs)[0])  # At every call, with the tensor's value.
        return self.dense(inputs)


inputs = tf.random.uniform([60, 28, 28])
for layer in (OnceLayer(), StepLayer()):
    graph_layer = tf.function(layer)
    graph_layer(inputs)
    graph_layer(inputs)
    graph_layer(inputs[:32])
print(layer.trace_log.summary())
