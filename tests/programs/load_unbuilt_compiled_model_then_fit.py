"""A compiled but unbuilt Keras model saved, loaded and fit: the train step traces twice, once.

Source:
  https://github.com/keras-team/keras/issues/22618

The reporter saves a `Sequential` model that was compiled (Adam) but never built,
loads it and calls `fit`, and sees `tf.function` retracing warnings. The
reporter's diagnosis: "model variables are created lazily after loading, causing
the training step function to be retraced"; the fix they ask for is to build the
model before saving (or to build it after loading). What TensorFlow does: the
first trace of Keras 3's `one_step_on_data` creates variables (the layers'
weights, built on the first batch, and Adam's slots), so `tf.function` traces the
same signature a second time without variable creation (variable lifting). The
second `fit` reuses that graph. Measured on TF 2.21 + Keras 3.15.1:
`one_step_on_data` traced 2 times (trace, variable retrace), no more in a second
`fit`.

Expected:
  function: one_step_on_data | train_function
  cause: variable-creation
  changed: "(none - the layers' weights and Adam's slots created in the first trace)"
  fix: build the model before saving (model.build or one call on data), or build it after loading and optimizer.build(model.trainable_variables) before fit
  fix_keywords: ["build"]
  forbidden_keywords: ["drop_remainder", "reduce_retracing=True", "jax.jit"]
  traces: 2
  backend: tensorflow
  kinds: ["trace", "variable_retrace"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tempfile

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

# Create compiled but unbuilt model
model = keras.Sequential([
    layers.Dense(8),
    layers.Dense(4)
])
model.compile(optimizer="adam", loss="mse")

# Save without building (to a temporary directory instead of the working directory)
path = os.path.join(tempfile.mkdtemp(), "unbuilt_compiled.keras")
model.save(path)

# Load model
loaded = keras.models.load_model(path)

# Dummy data
x = np.random.randn(2, 16)
y = np.random.randn(2, 4)

# Train
loaded.fit(x, y, epochs=1, verbose=0)
loaded.fit(x, y, epochs=1, verbose=0)
print("done")
