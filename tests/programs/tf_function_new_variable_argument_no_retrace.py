"""A new `tf.Variable` passed to a `tf.function` at every call: keyed by its spec, traced once.

Source:
  https://github.com/tensorflow/tensorflow/issues/32748
  https://www.tensorflow.org/guide/function#rules_of_tracing

tensorflow#32748: `foo(tf.Variable(1))` twice failed on the second call in TF 2.0
(an `AttributeError` while TF compared the new variable with the traced one);
the workaround offered was `tf.constant`, and the failure was fixed in later
releases. What TensorFlow keys today (the guide's rules of tracing): a
`tf.Variable` argument by its `VariableSpec` (shape, dtype, and its position
among the call's variables for aliasing), not by identity or value; a new
variable of the same dtype and shape reuses the trace, and the body reads it
through its handle. Measured on TF 2.21: three calls with three new variables
(values 1, 1, 2), `experimental_get_tracing_count()` 1. A negative control: a
new object per call that does *not* retrace, unlike a Python object argument.

Expected:
  function: foo
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (a tf.Variable argument is keyed by its dtype and shape)
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  kinds: ["trace"]
  set: heldout3
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf


@tf.function
def foo(v):
    return v + 1


print(foo(tf.Variable(1)))
print(foo(tf.Variable(1)))
print(foo(tf.Variable(2)))
print("tracing count:", foo.experimental_get_tracing_count())
