"""A `tf.function` fed SparseTensors of two dense shapes: a trace per dense shape.

Source:
  https://github.com/tensorflow/tensorflow/issues/29198

The reporter saw a SparseTensor's shape become `(None, None)` inside
`tf.function(foo)`. The maintainer (edloper) explained that `tf.function` then
stopped treating a SparseTensor as an opaque Python object (which retraced
"unless the *same* SparseTensor (the identical object) was passed in") and keyed
it by its type spec instead. TensorFlow later kept the static dense shape in that
spec (`SparseTensorSpec(TensorShape([3, 4]), tf.int32)`), so today
`foo` sees `(3, 4)`, two SparseTensors with the same dense shape share a trace,
and a new dense shape is a new trace. This program keeps the reporter's `foo` and
the thread's `a`, `b` (equal) and `c` (here with `dense_shape=[3, 5]`; the thread's
`c` is cut off in the stored copy). Measured on TF 2.21: 2 traces (`a`, then
`c`); `q`'s spec changed in dimension 1.

Expected:
  function: foo
  cause: shape-nonbatch
  changed: "q: dim 1"
  fix: expected once per dense shape; for many shapes, reduce_retracing=True or an input_signature with tf.SparseTensorSpec([3, None], tf.int32)
  fix_keywords: ["SparseTensorSpec", "reduce_retracing", "input_signature"]
  forbidden_keywords: ["drop_remainder", "jax.jit"]
  traces: 2
  backend: tensorflow
  kinds: ["trace", "retrace"]
  changes: [{"argument": "q", "aspect": "dim", "axis": 1}]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

x = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])


def foo(q):
    print(q.shape)
    return tf.sparse.reduce_sum(q)


foo(x)                              # Output: (3, 4)
f = tf.function(foo)
a = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
b = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
c = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 5])
f(a)
f(b)
f(c)
print("foo tracing count:", f.experimental_get_tracing_count())
