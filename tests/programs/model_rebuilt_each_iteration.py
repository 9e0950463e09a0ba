"""A Keras model built, fitted and asked to `predict` in every iteration of a loop.

Sources:
  https://github.com/tensorflow/tensorflow/issues/46012
  https://github.com/tensorflow/tensorflow/issues/42441

The reporter builds a fresh `Sequential` model in `for _ in range(6)`, fits it
and calls `model.predict(X)`; from the fifth iteration TensorFlow warns "5 out
of the last 5 calls to <function Model.make_predict_function.<locals>.
predict_function> triggered tf.function retracing". Nothing about the inputs
changes: each new model has its own new `predict_function` (and train
function) object, and each is traced once; the warning counts them together.
#42441 (same pattern: new models created rapidly) was closed by the
maintainers as expected behaviour, with the workaround `predict_on_batch`
(a `model(x)` call likewise avoids tracing a predict function for a one-off
prediction). The cause is TensorFlow's item (1), a new function per iteration:
reuse the model where the program allows; where new models are the point,
each one's single trace is expected.

Expected:
  function: predict_function | one_step_on_data_distributed
  cause: new-function-object
  changed: "function object: new model each iteration"
  fix: a new model means a new predict_function, traced once each - reuse the model where possible; for one-off inference call model(x) or predict_on_batch
  fix_keywords: ["new function", "reuse", "new model", "model(x)", "predict_on_batch"]
  forbidden_keywords: ["drop_remainder"]
  traces: 6
  kinds: ["trace", "trace", "trace", "trace", "trace", "trace"]
  note: traces counted per code location; each of the 6 predict_function objects is traced once
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras
from keras import Sequential, Input
from keras.layers import Dense

X = np.random.uniform(-1, 1, size=(1, 1000))
y = np.array([[0.7974]])

for _ in range(6):
    model = Sequential([
        Input(shape=(1000,)),
        Dense(1, activation="sigmoid"),
    ])

    model.compile(loss="mse", optimizer="adam")
    model.fit(X, y, batch_size=1, epochs=5, verbose=0)
    print(model.predict(X, verbose=0))
