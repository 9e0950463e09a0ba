"""The question "why does tf.function trace my layer twice?", answered by traceguard.

Run: python examples/why_two_traces.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard  # noqa: E402


class EagerLayer(traceguard.TraceAwareLayer):  # was: tf.keras.layers.Layer
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(32)

    def call(self, inputs):
        print("Tracing")
        return self.dense(inputs)


inputs = tf.random.uniform([60, 28, 28])
eager_layer = EagerLayer()
graph_layer = tf.function(eager_layer)
graph_layer(inputs)
graph_layer(inputs)
print(eager_layer.trace_log.summary())
