"""Two `get_concrete_function` traces, then a call that fits one of them: no third trace today.

Source:
  https://github.com/tensorflow/tensorflow/issues/48229

The reporter traced `unique_numpy` for `TensorSpec((None,), tf.int32)` and for
`TensorSpec((None,), tf.int64)` with `get_concrete_function`, then called it with
`tf.constant([0, 2], dtype=tf.int32)` and found a third concrete function "while
it should have re used the tf.TensorSpec(shape=(None,), dtype=tf.int32) trace"
(TF 2.4). Since TensorFlow's tracing was rebuilt on `TraceType` subtyping, a call
whose argument is a subtype of a traced signature (`int32[2]` of `int32[None]`)
reuses that graph. Measured on TF 2.21: 2 traces, both requested by
`get_concrete_function` (the second for the int64 dtype), and the call traces
nothing. A negative control for the call: the report must not claim a third
trace, and should say the two traces were asked for.

Expected:
  function: unique_numpy
  cause: dtype
  changed: "arr: dtype"
  fix: none needed: each get_concrete_function asked for its own trace; the call reuses the int32[None] graph
  fix_keywords: ["get_concrete_function"]
  forbidden_keywords: ["reduce_retracing=True", "drop_remainder", "jax.jit"]
  traces: 2
  backend: tensorflow
  kinds: ["trace", "retrace"]
  changes: [{"argument": "arr", "aspect": "dtype"}]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf


@tf.function()  # Setting experimental relax shapes does not change the result
def unique_numpy(arr):
    unique_val, unique_inverse = tf.unique(arr)
    return unique_val


# We trace two functions.
unique_numpy.get_concrete_function(tf.TensorSpec(shape=(None,), dtype=tf.int32))
unique_numpy.get_concrete_function(tf.TensorSpec(shape=(None,), dtype=tf.int64))
print(unique_numpy.pretty_printed_concrete_signatures())  # 2 signatures available
unique_numpy(tf.constant([0, 2], dtype=tf.int32))
print(' New')
print(unique_numpy.pretty_printed_concrete_signatures())  # still 2 on TF 2.21 (3 on TF 2.4)
print("unique_numpy tracing count:", unique_numpy.experimental_get_tracing_count())
