"""A plain Keras training loop whose last, smaller batch makes TensorFlow trace the step again.

Nothing here imports traceguard. Find the retrace, and its fix, with:

    python -m traceguard run examples/train_loop_partial_batch.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402  # Keras 3, or Keras 2 where tf.keras is Keras 2.

model = keras.Sequential([
    keras.Input((8,)),
    keras.layers.Dense(16, activation="relu", name="hidden"),
    keras.layers.Dense(1, name="output"),
], name="regressor")
model.build((None, 8))
optimizer = keras.optimizers.SGD(learning_rate=0.05)
optimizer.build(model.trainable_variables)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


rng = np.random.default_rng(0)
x = rng.random((70, 8), dtype="float32")
y = x.sum(axis=1, keepdims=True)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)  # Batches of 32, 32, then 6.
for _epoch in range(3):
    for x_batch, y_batch in dataset:
        train_step(x_batch, y_batch)
print(f"train_step traced {train_step.experimental_get_tracing_count()} times in 3 epochs")
