"""A custom training step with Adam is traced twice on its first call.

Sources:
  https://github.com/tensorflow/tensorflow/issues/47792
  https://github.com/tensorflow/tensorflow/issues/48851

The reporter's `train_network()` (a `@tf.function` that computes a loss with
`GradientTape` and calls a Keras Adam optimizer's `apply_gradients`, following
the guide's "multiple Keras optimizers" example) "is traced twice" while
`network()` is traced once, with identical inputs. The cause is the one asked
about in #48851 ("tf.function traces twice when creating Variables in the
first call"), TensorFlow's variable lifting: the first trace creates variables
- here Adam's slots - so TensorFlow lifts their initialisers and traces the
function again (measured on TF 2.21: `train_network` 2 traces, `network` 1).
It is a one-time cost; to avoid it create the optimizer's variables before the
first call: `optimizer.build(model.trainable_variables)`.

Expected:
  function: train_network
  cause: optimizer-slots
  changed: "(none - Adam slots created in the first trace)"
  fix: optimizer.build(model.trainable_variables) before the first call (one-time cost)
  fix_keywords: ["optimizer.build", "one-time"]
  forbidden_keywords: ["call the layer once"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
optimizer = keras.optimizers.Adam(1e-3)


@tf.function
def network(x):
    return model(x)


@tf.function
def train_network(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(network(x) - y))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(16, 4)).astype("float32"))
y = tf.constant(rng.normal(size=(16, 1)).astype("float32"))
for step in range(5):
    train_network(x, y)

print("train_network tracing count:", train_network.experimental_get_tracing_count())
print("network tracing count:", network.experimental_get_tracing_count())
