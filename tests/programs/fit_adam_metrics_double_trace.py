"""Keras 3 `fit` with Adam and a compiled metric traces its train step twice on the first batch.

Sources:
  https://github.com/tensorflow/tensorflow/issues/48851
  https://github.com/tensorflow/tensorflow/issues/47792

A plain functional model compiled with `optimizer="adam"` and
`metrics=["accuracy"]`, fitted on fixed-shape data. The train step is traced,
then traced again for the same input signature: the first trace created
variables - Adam's slots and the accuracy metric's state - so TensorFlow lifted
them and traced a variable-free version (the behaviour asked about in #48851,
"tf.function traces twice when creating Variables in the first call"; #47792
shows it with a Keras Adam optimizer in a custom loop). The layers are built before `fit`; the variables
are not theirs. One-time cost; `model.optimizer.build(model.trainable_variables)`
before `fit` removes the optimizer part (measured: not the metrics part).

Expected:
  function: one_step_on_data | train_function
  cause: optimizer-slots
  changed: "(none - optimizer slots and metric state created in the first trace)"
  fix: one-time cost; model.optimizer.build(model.trainable_variables) before fit removes the Adam part
  fix_keywords: ["optimizer.build", "optimizer", "metric"]
  forbidden_keywords: ["before wrapping it in `tf.function`", "call the layer once"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

rng = np.random.default_rng(0)
x = rng.normal(size=(128, 20)).astype("float32")
y = rng.integers(0, 2, size=(128, 1)).astype("float32")

inputs = keras.Input((20,))
h = keras.layers.Dense(32, activation="relu")(inputs)
outputs = keras.layers.Dense(1, activation="sigmoid")(h)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
print("done")
