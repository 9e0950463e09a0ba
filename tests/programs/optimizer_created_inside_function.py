"""An Adam optimizer constructed inside the `tf.function` that uses it.

Source:
  https://github.com/tensorflow/tensorflow/issues/42183

`@tf.function def run(): tf.keras.optimizers.Adam(0.5).minimize(loss,
var_list=[y_N])` fails with "ValueError: tf.function-decorated function tried
to create variables on non-first call". The first trace creates the
optimizer's variables (its iteration counter and slots), TensorFlow traces
again after lifting them, and the second trace constructs another Adam that
creates new variables. The reporter's own finding and the answer: create the
optimizer (and let it build its variables) outside the `tf.function`.
(Keras 3 optimizers have no `minimize`; the step uses a `GradientTape` and
`apply_gradients`, which is what `minimize` did.)

Expected:
  function: run
  cause: optimizer-slots
  changed: "(none - optimizer variables created in the trace)"
  fix: create the optimizer outside the tf.function (and build it: optimizer.build(var_list))
  fix_keywords: ["outside", "optimizer.build", "optimizer"]
  raises: ValueError
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
import keras

y_N = tf.Variable([1.0, 2.0, 3.0], name="dd")


@tf.function
def loss():
    return -tf.reduce_mean(input_tensor=tf.reduce_sum(input_tensor=tf.math.log(y_N), axis=0))


@tf.function
def run():
    optimizer = keras.optimizers.Adam(0.5)
    with tf.GradientTape() as tape:
        value = loss()
    optimizer.apply_gradients(zip(tape.gradient(value, [y_N]), [y_N]))


run()
print("never reached on TF 2.21")
