"""A custom `@tf.function` train step fed one variable-length document at a time.

Source:
  https://github.com/tensorflow/tensorflow/issues/38002

Token classification on documents of 100 to 8000 tokens, one document per
batch, through a `Conv1D` model built on `Input(shape=(None, input_dims))`.
The generic `@tf.function def train(x, y)` is traced again for every new
document length and TensorFlow prints "5 out of the last 5 calls to <function
train> triggered tf.function retracing". The cause is the sequence length
(dim 1) in the trace key; the fixes: a `None` length dimension in an
`input_signature` (or `reduce_retracing=True`), or padding/bucketing the
documents to a few lengths.

Expected:
  function: train
  cause: shape-nonbatch
  changed: "x: dim 1"
  fix: input_signature with a None length dimension (or reduce_retracing=True), or pad/bucket documents to a few lengths
  fix_keywords: ["None", "input_signature", "reduce_retracing", "pad", "bucket"]
  forbidden_keywords: ["drop_remainder"]
  traces: 7
  note: 9 documents, 7 distinct lengths
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras
from keras.layers import Conv1D, Input
from keras.models import Model

input_dims = 6
inp = Input(shape=(None, input_dims))
lay = Conv1D(filters=16, kernel_size=5, padding="same", activation="relu")(inp)
out = Conv1D(filters=3, kernel_size=5, activation="softmax", padding="same")(lay)
model = Model(inp, out)
loss_object = keras.losses.SparseCategoricalCrossentropy()
optimizer = keras.optimizers.SGD(0.01)


@tf.function
def train(x, y):
    with tf.GradientTape() as g:
        pred = model(x)
        loss = loss_object(y, pred)
    gradients = g.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


rng = np.random.default_rng(0)
lengths = [120, 350, 800, 95, 1500, 640, 220, 350, 120]
for n in lengths:
    x = tf.constant(rng.normal(size=(1, n, input_dims)).astype("float32"))
    y = tf.constant(rng.integers(0, 3, size=(1, n)))
    train(x, y)

print("train tracing count:", train.experimental_get_tracing_count())
