"""The question "why does tf.function trace my layer twice?", answered by traceguard.

Run: python examples/why_two_traces.py

`traceguard.TraceAwareLayer` follows `tf.keras`, so this runs on Keras 3, on
tf_keras (TF_USE_LEGACY_KERAS=1) and on the Keras 2 of TensorFlow 2.12-2.15.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import traceguard  # noqa: E402


class EagerLayer(traceguard.TraceAwareLayer):  # was: tf.keras.layers.Layer
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = tf.keras.layers.Dense(32)

    def call(self, inputs):
        print("Tracing")
        return self.dense(inputs)


inputs = tf.random.uniform([60, 28, 28])
eager_layer = EagerLayer()
graph_layer = tf.function(eager_layer)
graph_layer(inputs)
graph_layer(inputs)
print(eager_layer.trace_log.summary())
