"""A second `fit` whose last batch is smaller: one more trace of Keras's train step.

Run: python examples/fit_partial_batch.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard  # noqa: E402


class Projection(traceguard.TraceAwareLayer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, inputs, training=None):
        return inputs @ self.kernel


rng = np.random.default_rng(0)
inputs = tf.keras.Input((8,))
projection = Projection(4, name="projection")
model = tf.keras.Model(inputs, projection(inputs))
model.compile(optimizer="sgd", loss="mse")
# 64 samples in batches of 32: Keras traces its train step for batches of exactly 32.
model.fit(rng.random((64, 8)), rng.random((64, 4)), batch_size=32, verbose=0)
# 70 samples: two batches of 32, then a batch of 6 -- a new shape, so one more trace.
model.fit(rng.random((70, 8)), rng.random((70, 4)), batch_size=32, verbose=0)
print(projection.trace_log.summary())
