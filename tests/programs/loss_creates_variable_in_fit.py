"""A custom loss that creates a Keras variable for its class weights, used in `fit`.

Source:
  https://github.com/dhirajmaji7/Attention-Res-UNet-with-Guided-Decoder-for-Semantic-Segmentation-of-Brain-tumors/issues/1

The loss `gen_dice_loss` calls `weighted_log_loss`, which does `weights =
K.variable(weights)` on every call. `fit` traces its train step, the loss
creates a variable inside the trace, and training fails with "ValueError:
tf.function only supports singleton tf.Variables created on the first call"
raised from `train_function`. The user never wrapped anything in
`tf.function`; Keras's step did. Fix: make the weights a constant
(`K.constant`/`tf.constant`) or create the variable once outside the loss.

Expected:
  function: one_step_on_data | train_function
  cause: variable-creation
  changed: "(none - variable created in the loss)"
  fix: use a constant for the weights (tf.constant / keras.ops.convert_to_tensor) or create the variable once outside the loss
  fix_keywords: ["constant", "once", "outside"]
  forbidden_keywords: ["before wrapping it in `tf.function`"]
  raises: ValueError
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras
from keras import backend as K


def weighted_log_loss(y_true, y_pred):
    weights = np.array([1.0, 5.0, 10.0], dtype="float32")
    weights = keras.Variable(weights)  # the report's K.variable(weights)
    y_pred = keras.ops.clip(y_pred, 1e-7, 1 - 1e-7)
    loss = y_true * keras.ops.log(y_pred) * weights
    return -keras.ops.mean(keras.ops.sum(loss, axis=-1))


def weighted_dice_loss(y_true, y_pred):
    intersection = keras.ops.sum(y_true * y_pred)
    return 1 - (2 * intersection + 1) / (keras.ops.sum(y_true) + keras.ops.sum(y_pred) + 1)


def gen_dice_loss(y_true, y_pred):
    return weighted_dice_loss(y_true, y_pred) + weighted_log_loss(y_true, y_pred)


rng = np.random.default_rng(0)
x = rng.uniform(size=(16, 16, 16, 1)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 3, size=(16, 16, 16)), 3)

inputs = keras.Input((16, 16, 1))
h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
outputs = keras.layers.Conv2D(3, 1, activation="softmax")(h)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss=gen_dice_loss)
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
print("never reached on TF 2.21")
