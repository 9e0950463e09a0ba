"""`fit` on a `tf.data` pipeline batched without `drop_remainder`: no retrace on Keras 3.

Sources:
  https://github.com/tensorflow/tensorflow/issues/13161
  https://github.com/tensorflow/tensorflow/issues/44578

`Dataset.batch(32)` over 100 elements yields batches of 32, 32, 32 and 4. The
maintainer's answer in #13161: the last batch is smaller by design, and
without `drop_remainder=True` the static batch dimension is unknown (`None`,
as #44578 shows). Keras 3's train step traces on the dataset's element spec,
whose batch dimension is `None`, so the partial batch does not retrace: the
step is traced once. This program is a negative control: a report must not
invent a partial-batch retrace (or a `drop_remainder` hint) here.

Expected:
  function: one_step_on_data | train_function
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (the dataset's batch dimension is already None)
  fix_keywords: []
  forbidden_keywords: ["drop_remainder"]
  traces: 1
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(0)
features = rng.normal(size=(100, 13)).astype("float32")
labels = rng.integers(0, 2, size=(100,)).astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(100, seed=0).batch(32)

model = keras.Sequential(
    [keras.Input((13,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1, activation="sigmoid")]
)
model.compile(optimizer="sgd", loss="binary_crossentropy")
model.fit(train_ds, epochs=3, verbose=0)
print("done")
