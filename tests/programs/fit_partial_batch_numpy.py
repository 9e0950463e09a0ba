"""`fit(x, y)` on NumPy chunks, one of which is not a multiple of the batch size.

Sources:
  https://github.com/tensorflow/tensorflow/issues/49151
  https://github.com/tensorflow/docs/pull/1699

The model is trained incrementally, `model.fit(x_chunk, y_chunk,
batch_size=32)` on each chunk of data as it arrives. Chunks of 64 and 128
samples split into full batches, so Keras feeds the train step a static batch
of 32; the chunk of 70 has a last batch of 6, its batches get a `None` batch
dimension and the train step is traced again ("the reason for re-tracing
might be ... variable batch size (last batch size might be smaller)",
tensorflow#49151; "the tf.function will just retrace new shapes",
tensorflow/docs#1699). It is a one-time cost: Keras 3 traces the relaxed
`None` batch once and reuses it. With NumPy input there is no `drop_remainder`:
the fix is a sample count that is a multiple of `batch_size` (trim or pad the
chunk), or accepting the one extra trace.

Expected:
  function: one_step_on_data | train_function
  cause: shape-batch-partial
  changed: "data: dim 0"
  fix: NumPy input has no drop_remainder - trim/pad the arrays to a multiple of batch_size (or accept one extra trace)
  fix_keywords: ["multiple of", "batch_size", "trim"]
  forbidden_keywords: ["drop_remainder=True"]
  traces: 3
  note: one_step_on_data traces for batch 32, again because Adam creates its slots in the first trace, and once for the chunk of 70 (batch None)
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

rng = np.random.default_rng(0)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")

for chunk_size in (64, 70, 128):  # data arriving in chunks
    x_chunk = rng.normal(size=(chunk_size, 8)).astype("float32")
    y_chunk = rng.normal(size=(chunk_size, 1)).astype("float32")
    model.fit(x_chunk, y_chunk, batch_size=32, epochs=2, verbose=0)
print("done")
