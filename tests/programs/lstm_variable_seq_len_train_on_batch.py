"""An LSTM trained with `train_on_batch` on sequences of varying length.

Source:
  https://github.com/tensorflow/tensorflow/issues/34025 (comment by sterlingrpi, 2020-08-10: "Using a LSTM model with variable sequence lengths"; bela127, 2020-12-18)

The model takes `Input(shape=(None, features))` and is trained one batch at
a time with `train_on_batch`, each batch with its own sequence length; the
retracing warning names the train function. bela127's answer in the thread:
"a tf-function can only compute the input for a fixed size. If you use
different sized [inputs] the function needs to be traced for every [size]";
pad to a common length (with masking) or bucket the lengths. Keras 3 relaxes
the length to `None` after the first change, so today it costs one retrace. On TensorFlow the
LSTM cell runs inside a `tf.while_loop` body traced within each step, so each
train-step trace also traces the cell's `call` (twice, measured): those cell
runs are part of the step's trace, not extra first traces.

Expected:
  function: one_step_on_data | train_function
  cause: shape-nonbatch
  changed: "data: dim 1"
  fix: pad sequences to a common length with masking, or bucket lengths (bucket_by_sequence_length), or a None length dimension
  fix_keywords: ["pad", "bucket", "None"]
  forbidden_keywords: ["drop_remainder"]
  also: control-flow-body (lstm_cell runs inside the while-loop body of each step trace)
  traces: 2
  note: Keras 3 builds the step with reduce_retracing=True: length 10 is traced, length 14 retraces with dim 1 relaxed to None, later lengths reuse it
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

features = 3
model = keras.Sequential([keras.Input((None, features)), keras.layers.LSTM(8), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")

rng = np.random.default_rng(0)
for length in (10, 14, 10, 20, 25, 14):
    x = rng.normal(size=(4, length, features)).astype("float32")
    y = rng.normal(size=(4, 1)).astype("float32")
    model.train_on_batch(x, y)
print("done")
