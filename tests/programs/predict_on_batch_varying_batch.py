"""`predict_on_batch` with a batch size that changes on every call.

Source:
  https://github.com/tensorflow/tensorflow/issues/34907

The reporter calls `model.predict_on_batch(np.ones([i, 1]))` for `i` in
`range(1, 300)`; each new batch size traced the predict function again and
TensorFlow printed the retracing warning. The cause is the batch dimension in
the trace key; the fix is a `None` batch dimension. Keras 3 applies it itself
(its predict function is built with `reduce_retracing=True`, measured: one
retrace, `dim 0 1 -> None`, then every size reuses the relaxed graph); for a
user function it is an `input_signature` with `None` or `reduce_retracing=True`. Dropping data (`drop_remainder`) is not a fix for
predictions.

Expected:
  function: predict_function | one_step_on_data_distributed
  cause: shape-batch-predict
  changed: "data | x: dim 0"
  fix: None batch dimension (reduce_retracing=True / input_signature); Keras relaxes it after one retrace
  fix_keywords: ["None", "reduce_retracing", "input_signature", "relax"]
  forbidden_keywords: ["drop_remainder"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(), loss=keras.losses.MeanSquaredError())

for i in range(1, 40):
    model.predict_on_batch(np.ones([i, 1]))
print("done")
