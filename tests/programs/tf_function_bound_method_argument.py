"""A bound method passed to a `tf.function` as an argument: a new object per access, a trace per call.

Source:
  https://github.com/tensorflow/tensorflow/issues/31175

The reporter factored a train step out into a method of their model and passed
`model.step` to a `tf.function` that runs the epoch's dataset loop; memory grew
and every epoch retraced the whole loop. "The root cause was that bound instance
methods are not identical `model.step is not model.step`": each attribute access
builds a new bound-method object, and `tf.function` keys a Python object argument
by identity (a weak reference), so every call is a new trace key. The remedy from
the thread: pass the same callable object each time (bind it once,
`step = model.step`), or call the method inside the traced function instead of
passing it. Measured on TF 2.21: 4 epochs, 4 traces of `train_epoch`.
A tensor is no fix: the argument is a function.

Expected:
  function: train_epoch
  cause: object-identity
  changed: "step: identity"
  fix: bind the method once (step = model.step) and pass that same object, or call model.step inside the tf.function
  fix_keywords: ["same", "once"]
  forbidden_keywords: ["tf.constant", "drop_remainder", "jax.jit"]
  traces: 4
  backend: tensorflow
  changes: [{"argument": "step", "aspect": "identity"}, "*"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.zeros([8, 1]))
        self.optimizer_lr = 0.1

    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ self.w - y) ** 2)
        grad = tape.gradient(loss, self.w)
        self.w.assign_sub(self.optimizer_lr * grad)
        return loss


@tf.function
def train_epoch(step, dataset):
    total = 0.0
    for x, y in dataset:
        total += step(x, y)
    return total


rng = np.random.default_rng(0)
features = rng.normal(size=(64, 8)).astype("float32")
labels = features.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
model = Model()
for epoch in range(4):
    train_epoch(model.step, dataset)
print("train_epoch tracing count:", train_epoch.experimental_get_tracing_count())
