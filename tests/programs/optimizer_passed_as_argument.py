"""Two Keras optimizers passed in turn as an argument of one `tf.function`.

Sources:
  https://github.com/tensorflow/tensorflow/issues/27120
  https://github.com/tensorflow/tensorflow/issues/34983

`apply_gradients_once(optimizer, grads, vars)` is a `@tf.function` called
with a `fast_optimizer` and a `slow_optimizer` (two Adam instances). The
second optimizer is a different Python object, so the function is traced
again; that trace creates the second optimizer's variables (iterations and
slots), and a `tf.function` may create variables only on its first trace:
"ValueError: tf.function-decorated function tried to create variables on
non-first call" (TF 2.21: "tf.function only supports singleton tf.Variables
created on the first call"). The guide's answer ("Using with multiple Keras
optimizers"): build each optimizer's variables before the traced call
(`optimizer.build(vars)`), or use one `tf.function` per optimizer.

Expected:
  function: apply_gradients_once
  cause: optimizer-slots
  changed: "optimizer: a different object"
  fix: build every optimizer before the call (optimizer.build(var_list)) or one tf.function per optimizer
  fix_keywords: ["optimizer.build", "build", "per optimizer"]
  raises: ValueError
  traces: 3
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

fast_optimizer = keras.optimizers.Adam(learning_rate=1e-3)
slow_optimizer = keras.optimizers.Adam(learning_rate=1e-3 * 1e-9)


@tf.function
def apply_gradients_once(optimizer, grads, vars):
    grads = [grads]
    optimizer.apply_gradients(zip(grads, vars))


def apply_grads(use_fast, grads_per_model, vars):
    for i in range(2):
        if use_fast:
            apply_gradients_once(fast_optimizer, grads_per_model[i], vars[i])
        else:
            apply_gradients_once(slow_optimizer, grads_per_model[i], vars[i])


def compute_loss(w, x, y):
    r = (w * x - y) ** 2
    return tf.reduce_mean(r)


x = np.array(np.random.default_rng(0).normal(size=(32, 1)), dtype=np.float32)
y = 2 * x
ws = [tf.Variable(1.0), tf.Variable(2.0)]
grads_per_model = []
for w in ws:
    with tf.GradientTape() as tape:
        loss = compute_loss(w, x, y)
    grads_per_model.append(tape.gradient(loss, w))

apply_grads(True, grads_per_model, [[ws[0]], [ws[1]]])
apply_grads(False, grads_per_model, [[ws[0]], [ws[1]]])
print("never reached on TF 2.21")
