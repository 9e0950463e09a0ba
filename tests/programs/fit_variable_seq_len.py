"""`fit` on a `PyDataset` generator whose batches have different sequence lengths (dim 1).

Source:
  https://github.com/keras-team/keras/issues/20369

A transformer sequence-to-vector model (`MultiHeadAttention` on
`Input((None, d_model))`) is trained with `fit` on a custom data generator
whose batches each have their own sequence length; the reporter (TF 2.17,
GPU) saw each unseen length take much longer and suspected retracing ("I do
not get any retracing warnings"). Measured on TF 2.21 + Keras 3 CPU: the
generator's element spec has a `None` length dimension, so `fit` traces its
train step once and the varying lengths do not retrace. This program is a
negative control: a report must not attribute per-length retraces (or suggest
`drop_remainder`) here; the length-dependent cost the reporter saw lies
outside tracing on this stack.

Expected:
  function: one_step_on_data | train_function
  cause: none-expected
  changed: "(nothing)"
  fix: none needed for tracing (the step is traced once with a None length)
  fix_keywords: []
  forbidden_keywords: ["drop_remainder"]
  traces: 1
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

nclasses = 3
d_model = 8


class DataGenerator(keras.utils.PyDataset):
    """Random sequences; each batch has its own length."""

    def __init__(self, lengths, batch_size=4, **kwargs):
        super().__init__(**kwargs)
        self.lengths = lengths
        self.batch_size = batch_size
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, idx):
        n = self.lengths[idx]
        x = self.rng.normal(size=(self.batch_size, n, d_model)).astype("float32")
        y = self.rng.integers(0, nclasses, size=(self.batch_size,))
        return x, y


inputs = keras.Input(shape=(None, d_model))
attention = keras.layers.MultiHeadAttention(num_heads=2, key_dim=d_model)(inputs, inputs)
pooled = keras.layers.GlobalAveragePooling1D()(attention)
outputs = keras.layers.Dense(nclasses, activation="softmax")(pooled)
model = keras.Model(inputs, outputs)
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")

lengths = [5, 7, 9, 11, 13, 15, 17, 19, 21, 23] + [10] * 10
model.fit(DataGenerator(lengths), epochs=1, verbose=0)
print("done")
