"""An intermediate `keras.Model` re-created for every inference to read a layer's output.

Source:
  https://github.com/fastmachinelearning/hls4ml/issues/359

hls4ml's profiling helper builds, for each layer, a new
`keras.Model(inputs=model.input, outputs=layer.output)` and calls `predict` on
it, every time it is asked for intermediate outputs. TensorFlow warned "11 out
of the last 11 calls to <function Model.make_predict_function.<locals>.
predict_function> triggered tf.function retracing". The maintainer's diagnosis:
"I *recreate* the intermediate model for every inference, which is definitely
excessive" - create the intermediate models once and reuse them.

Expected:
  function: predict_function | one_step_on_data_distributed
  cause: new-function-object
  changed: "function object: new intermediate keras.Model per call"
  fix: create the intermediate models once (per layer) and reuse them
  fix_keywords: ["once", "reuse", "new function", "new model"]
  forbidden_keywords: ["drop_remainder"]
  traces: 12
  kinds: ["trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace", "trace"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import keras

inputs = keras.Input((10,))
h = keras.layers.Dense(16, activation="relu", name="fc1")(inputs)
h = keras.layers.Dense(16, activation="relu", name="fc2")(h)
outputs = keras.layers.Dense(4, activation="softmax", name="output")(h)
model = keras.Model(inputs, outputs)


def get_ymodel_keras(keras_model, X):
    """Returns each layer's output on X, the way the profiling code did it."""
    trace_output = {}
    for layer in keras_model.layers[1:]:
        temp_model = keras.Model(inputs=keras_model.inputs, outputs=layer.output)
        trace_output[layer.name] = temp_model.predict(X, verbose=0)
    return trace_output


X = np.random.default_rng(0).normal(size=(20, 10)).astype("float32")
for _ in range(4):  # profiling is asked for several times
    outputs_per_layer = get_ymodel_keras(model, X)
print({name: value.shape for name, value in outputs_per_layer.items()})
