"""A custom `@tf.function` training loop over a dataset whose last batch is partial.

Sources:
  https://github.com/tensorflow/docs/pull/1699
  https://github.com/tensorflow/tensorflow/issues/13161

The "TensorFlow 2 quickstart for experts" pattern: `@tf.function def
train_step(images, labels)` called for each batch of `Dataset.batch(32)`. With
a dataset size that is not a multiple of 32 the last batch has a different
shape and `train_step` is traced a second time (MarkDaoust in
tensorflow/docs#1699: "the tf.function will just retrace new shapes"). Fix:
`batch(32, drop_remainder=True)`, or an `input_signature` with a `None` batch
dimension (or `reduce_retracing=True`).

Expected:
  function: train_step
  cause: shape-batch-partial
  changed: "images: dim 0"
  fix: batch(..., drop_remainder=True), or a None batch dimension (input_signature / reduce_retracing)
  fix_keywords: ["drop_remainder", "input_signature", "None"]
  traces: 2
  note: one trace for batch 32, one for the last batch of 8 (200 = 6 * 32 + 8); SGD creates no variables in the trace
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(0)
x_train = rng.uniform(0, 1, size=(200, 28, 28)).astype("float32")
y_train = rng.integers(0, 10, size=(200,))
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(200, seed=0).batch(32)

model = keras.Sequential(
    [keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
)
loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.SGD(0.01)


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


for epoch in range(3):
    for images, labels in train_ds:
        train_step(images, labels)

print("train_step tracing count:", train_step.experimental_get_tracing_count())
