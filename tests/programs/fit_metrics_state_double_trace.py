"""Keras 3 `fit` with SGD and compiled metrics: the train step is traced twice for the same batch shape.

Sources:
  https://github.com/tensorflow/tensorflow/issues/48851

A functional classifier compiled with `optimizer="sgd"` (no slots) and
`metrics=["accuracy", keras.metrics.AUC()]` is fitted on fixed-shape data. The
train step is traced, then traced again for the same signature: the first
trace created the metrics' state variables (counts, totals, AUC's confusion
buckets), so TensorFlow lifted them and traced once more: TensorFlow's
variable lifting, asked about in #48851 ("tf.function traces twice when
creating Variables in the first call"). That Keras 3's `fit` creates the metric
state inside its first trace was measured on TF 2.21 + Keras 3.15 (no public
thread about it was found). It is a one-time cost per
`fit`; no layer is at fault (they are built), and building the optimizer does
not remove it (measured): the variables are the metrics' state.

Expected:
  function: one_step_on_data | train_function
  cause: metric-state
  changed: "(none - metric state created in the first trace)"
  fix: one-time cost of creating the compiled metrics' state in the first trace; no layer fix applies
  fix_keywords: ["metric", "one-time"]
  forbidden_keywords: ["before wrapping it in `tf.function`", "call the layer once"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")

inputs = keras.Input((4,))
h = keras.layers.Dense(128, activation="relu")(inputs)
outputs = keras.layers.Dense(1, activation="sigmoid")(h)
model = keras.Model(inputs, outputs)
model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy", keras.metrics.AUC(name="auc")])
model.fit(x, y, batch_size=64, epochs=2, verbose=0)
print("done")
