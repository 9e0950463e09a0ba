"""A Python `int` epoch passed to a `tf.function` train step retraces it every epoch.

Sources:
  https://github.com/solaris33/deep-learning-tensorflow-book-code/issues/8
  https://github.com/spmallick/learnopencv/issues/806

The pix2pix training scripts in both reports call `train_step(input_image,
target, epoch)`, a `@tf.function`, from `for epoch in range(EPOCHS)`, where
`epoch` is a Python `int` (used as the summary step; here it is assigned
to a variable, as TensorBoard is not installed). A Python value is part
of the trace key, so each new epoch number builds a new graph and TensorFlow
eventually prints its retracing warning. The reports' established fix (the
TensorFlow guide's "pass tensors instead of Python literals") is to pass the
epoch as a tensor, e.g. `tf.constant(epoch, dtype=tf.int64)`.

Expected:
  function: train_step
  cause: python-value-arg
  changed: "epoch: value"
  fix: pass epoch as a tensor (tf.constant(epoch)) instead of a Python int
  fix_keywords: ["tensor", "tf.constant"]
  traces: 7
  note: 6 epochs give 6 traces, plus one variable-lifting retrace on the first call (Adam slots are created in the first trace)
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

EPOCHS = 6

generator = keras.Sequential(
    [keras.Input((16, 16, 3)), keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
     keras.layers.Conv2D(3, 3, padding="same", activation="tanh")]
)
generator_optimizer = keras.optimizers.Adam(2e-4, beta_1=0.5)
logged_epoch = tf.Variable(0, dtype=tf.int64)  # stands in for the tf.summary step (no TensorBoard here)


@tf.function
def train_step(input_image, target, epoch):
    with tf.GradientTape() as gen_tape:
        gen_output = generator(input_image, training=True)
        gen_l1_loss = tf.reduce_mean(tf.abs(target - gen_output))
    generator_gradients = gen_tape.gradient(gen_l1_loss, generator.trainable_variables)
    generator_optimizer.apply_gradients(zip(generator_gradients, generator.trainable_variables))
    logged_epoch.assign(epoch)
    return gen_l1_loss


rng = np.random.default_rng(0)
images = rng.uniform(-1, 1, (8, 16, 16, 3)).astype("float32")
train_ds = tf.data.Dataset.from_tensor_slices((images, images)).batch(4)

for epoch in range(EPOCHS):
    for input_image, target in train_ds:
        train_step(input_image, target, epoch)

print("train_step tracing count:", train_step.experimental_get_tracing_count())
