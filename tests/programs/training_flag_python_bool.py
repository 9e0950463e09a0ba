"""A shared forward function called with `training=True` and `training=False` as Python bools.

Sources:
  https://github.com/tensorflow/tensorflow/issues/24742
  https://www.tensorflow.org/guide/function

A custom loop uses one `@tf.function` `forward(x, training)` for the
training step and for validation, passing the Python booleans `True` and
`False`. Each value is its own trace (dropout and batch normalisation build
different graphs), so the function is traced twice. The maintainers in
#24742 discuss exactly such hyperparameters (`train=True/False`, `num_layers`):
Python values select different graphs by design. Two traces are expected and
bounded; there is nothing to fix unless the flag took many values (then pass
a tensor).

Expected:
  function: forward
  cause: training-flag
  changed: "training: value"
  fix: none needed - one graph per training value is by design (pass a tensor only if it took many values)
  fix_keywords: ["training"]
  forbidden_keywords: ["drop_remainder"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

model = keras.Sequential(
    [keras.Input((10,)), keras.layers.Dense(32), keras.layers.BatchNormalization(), keras.layers.ReLU(),
     keras.layers.Dropout(0.3), keras.layers.Dense(1)]
)


@tf.function
def forward(x, training):
    return model(x, training=training)


rng = np.random.default_rng(0)
train_x = tf.constant(rng.normal(size=(16, 10)).astype("float32"))
val_x = tf.constant(rng.normal(size=(16, 10)).astype("float32"))
for epoch in range(4):
    for _ in range(3):
        forward(train_x, True)
    forward(val_x, False)

print("forward tracing count:", forward.experimental_get_tracing_count())
