"""Keras 3 on JAX with `jit_compile=False`: `fit` runs each step eagerly, nothing is traced or compiled.

Source:
  https://github.com/keras-team/keras/issues/18648
  https://github.com/keras-team/keras-core/pull/838

The reporter compared epoch times of a small dense model across Keras 2, Keras 3
on TensorFlow and Keras 3 on JAX: JAX with `jit_compile=False` took 44 ms per
epoch against 3 ms with `jit_compile=True`. The maintainer (fchollet, in the
`compile()` docstring review): "You can pass `jit_compile=False` with JAX, which
means that the model will train/evaluate/predict in eager execution": the
JAX trainer then calls `train_step` directly, without `jax.jit`, so there is no
tracing cache to hit or miss; each step runs the layers' Python under
`jax.value_and_grad`. The slowness is eager execution, not retracing. Measured
with keras 3.15.1 on jax 0.10.2 (this program, 2 epochs of 4 batches):
`jax_explain_cache_misses` logs no miss of `train_step` (only Keras's
`compute_output_spec` helper `wrapped_fn`, twice, when the model is built). A
negative control: a report must not count retraces of `train_step` or of the
layers; it should say once that nothing is compiled and name `jit_compile=False`
as the setting that caused it (the fix for speed is `jit_compile=True`, the
default on JAX).

Expected:
  function: train_step
  cause: none-expected
  changed: "(nothing)"
  fix: nothing retraces; jit_compile=False runs every step eagerly on JAX - use jit_compile=True (the default) for compiled steps
  fix_keywords: ["jit_compile"]
  forbidden_keywords: []
  traces: 0
  backend: jax
  kinds: []
"""
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

rng = np.random.default_rng(0)
x_train = rng.normal(size=(64, 10)).astype("float32")
y_train = rng.normal(size=(64, 1)).astype("float32")

model = keras.Sequential([
    keras.Input((10,)),
    layers.Dense(32, activation="relu"),
    layers.Dense(32, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer="adam", loss="mse", jit_compile=False)

for epoch in range(2):
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=16, epochs=1, verbose=0)
    print(f"epoch {epoch}: {1000 * (time.perf_counter() - start):.1f} ms")
