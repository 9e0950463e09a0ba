"""Python `float` hyperparameters (learning rate, temperature) passed to a `tf.function` step.

Source:
  https://github.com/yerkojahve/Meta-Pseudo-label/issues/1

The trainer calls its `@tf.function` `train_step` in a `while` loop with
`learning_rate`, `temperature` and `cross_entropy_coef` as Python floats that
are annealed as training goes on. Every new value is a new trace key, so the
step is traced again each time the schedule moves, and TensorFlow prints the
retracing warning. The answer given in the report (and the TensorFlow guide it
links): pass them as tensors (`tf.constant`) or keep them in `tf.Variable`s.

Expected:
  function: train_step
  cause: python-value-arg
  changed: "temperature: value"
  fix: pass temperature/learning_rate as tensors (tf.constant or a tf.Variable)
  fix_keywords: ["tensor", "tf.constant", "tf.Variable"]
  traces: 6
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(3)])
optimizer = keras.optimizers.SGD(1e-2)


@tf.function
def train_step(inputs, learning_rate, temperature, cross_entropy_coef):
    optimizer.learning_rate.assign(learning_rate)
    with tf.GradientTape() as tape:
        prediction = model(inputs, training=True)
        reconstruction = tf.reduce_mean(tf.square(prediction - inputs))
        entropy = -tf.reduce_mean(tf.nn.log_softmax(prediction / temperature))
        loss = reconstruction + cross_entropy_coef * entropy
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


rng = np.random.default_rng(0)
batch = tf.constant(rng.normal(size=(32, 3)).astype("float32"))
step, num_steps = 0, 30
learning_rate, temperature, cross_entropy_coef = 1e-2, 1.0, 0.0
while step < num_steps:
    train_step(batch, learning_rate, temperature, cross_entropy_coef)
    step += 1
    if step % 5 == 0:  # anneal every 5 steps, as the trainer does
        temperature = max(0.1, temperature * 0.9)

print("train_step tracing count:", train_step.experimental_get_tracing_count())
