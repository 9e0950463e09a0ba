"""A `tf.function` method with relaxed shapes fed 100 lengths: one relaxing retrace, then none.

Sources:
  https://github.com/tensorflow/tensorflow/issues/34905
  https://github.com/tensorflow/tensorflow/pull/35021

The reporter's method `A.f`, decorated with
`@tf.function(experimental_relax_shapes=True)`, retraced for each of 100 NumPy
arrays of length 0..99, while a plain function with the same option stopped
retracing after its third call. The cause: the option was not passed on to
instance methods; the fix (PR #35021, "Pass experimental_relax_shapes to
instance methods decorated with `tf.function`", approved by alextp) shipped long
ago, and the option is now called `reduce_retracing` (the old name still works).
Measured on TF 2.21: `a.f` traces twice: once for length 0, once more for
length 1 with the length relaxed to `None`, and never again. Nothing further
retraces; a report must not tell to use `reduce_retracing=True`, which is on.

Expected:
  function: f | A.f
  cause: relaxed
  changed: "data: dim 0"
  fix: none needed; the relaxed graph (data: float64[None]) serves every later length; an input_signature with None would avoid the second trace
  fix_keywords: ["None"]
  forbidden_keywords: ["reduce_retracing=True", "experimental_relax_shapes=True", "drop_remainder", "jax.jit"]
  traces: 2
  backend: tensorflow
  kinds: ["trace", "retrace"]
  changes: [{"argument": "data", "aspect": "dim", "axis": 0}]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf


class A:
    @tf.function(experimental_relax_shapes=True)
    def f(self, data):
        return tf.reduce_sum(data)


a = A()
for i in range(100):
    a.f(np.ones(i))
print("A.f tracing count:", a.f.experimental_get_tracing_count())
