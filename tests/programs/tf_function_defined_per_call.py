"""A `tf.function` defined inside a method, so every call of the method makes a new one.

Source:
  https://github.com/YosefLab/epitome/issues/43

`VariationalPeakModel.run_predictions` defines `@tf.function def
predict_step(inputs)` in its body and then loops over batches. Each call of
`run_predictions` creates a new `predict_step` function object, which has to
be traced again; TensorFlow warned "9 out of the last 9 calls to <function
VariationalPeakModel.run_predictions.<locals>.predict_step> triggered
tf.function retracing". The fix (TensorFlow's own item (1) in the warning):
define the `tf.function` once, outside the method/loop (e.g. in `__init__`).

Expected:
  function: predict_step
  cause: new-function-object
  changed: "function object: new predict_step per run_predictions call"
  fix: define the tf.function once (outside run_predictions, e.g. in __init__) and reuse it
  fix_keywords: ["once", "outside", "new function", "reuse"]
  forbidden_keywords: ["drop_remainder"]
  traces: 10
  kinds: ["trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras


class VariationalPeakModel:
    def __init__(self):
        self.model = keras.Sequential(
            [keras.Input((20,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(5, activation="sigmoid")]
        )

    def run_predictions(self, num_samples, iter_, samples=5):
        @tf.function
        def predict_step(inputs):
            preds = [self.model(inputs, training=True) for _ in range(samples)]
            preds = tf.stack(preds, axis=0)
            return tf.reduce_mean(preds, axis=0), tf.math.reduce_std(preds, axis=0)

        means, stds = [], []
        for _ in range(num_samples // 16):
            mean, std = predict_step(next(iter_))
            means.append(mean)
            stds.append(std)
        return np.concatenate(means), np.concatenate(stds)


rng = np.random.default_rng(0)
data = tf.data.Dataset.from_tensor_slices(rng.normal(size=(64, 20)).astype("float32")).batch(16).repeat()
peak_model = VariationalPeakModel()
iterator = iter(data)
for chromosome in range(10):  # one call per region, as in the evaluation loop
    means, stds = peak_model.run_predictions(32, iterator)
print(means.shape, stds.shape)
