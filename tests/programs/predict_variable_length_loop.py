"""`model.predict` in a loop over inputs whose sequence length (dim 1) varies.

Source:
  https://github.com/tensorflow/tensorflow/issues/38561

A functional model with `Input(shape=(None, ...))` is applied with
`model.predict(t)` to each tensor of a list whose lengths differ; every new
length retraced the predict function ("Unwanted tf.function retracing when
using variable-length inputs"). Workaround given in the thread (and the cause
it names): the traced signature has the length fixed, so wrap the model in a
`tf.function(experimental_relax_shapes=True)` (today `reduce_retracing=True`),
or give it a `None` length dimension via `input_signature`; or pad/bucket to a
few lengths.

Expected:
  function: predict_function | one_step_on_data_distributed
  cause: shape-nonbatch
  changed: "data | x: dim 1"
  fix: a None length dimension (reduce_retracing=True or input_signature with None), or pad/bucket to a few lengths
  fix_keywords: ["None", "reduce_retracing", "input_signature", "pad", "bucket"]
  forbidden_keywords: ["drop_remainder"]
  traces: 2
  note: Keras 3 builds predict_function with reduce_retracing=True, so today it retraces once (length 10 -> 12) and then relaxes dim 1 to None; under TF 2.2 it retraced per length
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

inputs = keras.Input(shape=(None, 4))
x = keras.layers.Conv1D(8, 3, padding="same", activation="relu")(inputs)
outputs = keras.layers.Conv1D(1, 3, padding="same")(x)
model = keras.Model(inputs, outputs)

rng = np.random.default_rng(0)
predict_tensors = [tf.constant(rng.normal(size=(1, n, 4)).astype("float32")) for n in (10, 12, 15, 20, 23, 30, 12)]
for t in predict_tensors:
    _ = model.predict(t, verbose=0)
print("done")
