"""A `tf.function` called with tensors of a new shape builds a new graph; `input_signature` fixes it.

Source:
  https://github.com/tensorflow/tensorflow/issues/33434

The reporter's `@tf.function def add(a, b)` prints "Addition" once per
trace: called with scalars, then with vectors of length 2 (twice, with
different values), it traces twice - once per shape; the values do not matter.
"If the shape of the input tensors varies, it seems TF will create a new graph
every single time" - closed by the reporter: "Found input_signature to solve
this" (`input_signature=[tf.TensorSpec(None, tf.int32)] * 2`, or
`reduce_retracing=True`). Here the length keeps changing, so every call with
a new length traces.

Expected:
  function: add
  cause: shape-nonbatch
  changed: "a: shape"
  fix: input_signature with TensorSpec(shape=None or [None]) (or reduce_retracing=True)
  fix_keywords: ["input_signature", "reduce_retracing", "None"]
  forbidden_keywords: ["drop_remainder"]
  traces: 4
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf


@tf.function
def add(a, b):
    print("Addition")
    return a + b


add(tf.constant(1), tf.constant(2))
add(tf.constant([1, 2]), tf.constant([2, 4]))
add(tf.constant([333, 2]), tf.constant([2, 4444]))
add(tf.constant([1, 2, 3]), tf.constant([4, 5, 6]))
add(tf.constant([1, 2, 3, 4]), tf.constant([4, 5, 6, 7]))
print("add tracing count:", add.experimental_get_tracing_count())
