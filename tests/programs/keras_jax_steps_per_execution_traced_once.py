"""Keras 3 on JAX with `steps_per_execution`: the train step is traced once, not once per step.

Source:
  https://github.com/keras-team/keras/issues/20411
  https://github.com/keras-team/keras/pull/20412

The report (JAX backend, keras 3.6): with `steps_per_execution=N` the model was
traced N times per compilation ("model retracing count: 5 ... 10 ... 20", with
memory and compile time growing alike), because the JAX trainer unrolled N
calls of `train_step` inside one jitted multi-step function. The fix merged in
#20412 (nicolaspi, reviewed by the Keras team) makes the epoch iterator return an
iterator and runs "a non-jitted for loop that iterates over the execution steps
and makes calls to the inner `train/test/predict_step` function thanks to Jax's
asynchronous dispatch", so the step is traced once whatever N is. This program
is the report's measurement on a small model: a new model per setting,
`steps_per_execution` 1 then 4, counting the model's `call` bodies run under a
JAX tracer during `fit`. Measured with keras 3.15.1 on jax 0.10.2: 3 such runs
for either setting (Keras's symbolic build passes included), and `train_step`
traced once per model: two "TRACING CACHE MISS" lines, each "never seen
function: train_step" (each model makes its own jitted step; Keras's
`wrapped_fn` helper misses 3 times per model while it is built). A negative
control, twice over: the user's concern is fixed, and the second model's trace
is the first trace of a new step function after another model's `fit`, not a
retrace; a report must show two first traces and no retrace.

Expected:
  function: train_step
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (Keras >= 3.7 loops over the execution steps outside jax.jit; each model's step is traced once)
  fix_keywords: []
  forbidden_keywords: []
  traces: 2
  backend: jax
  kinds: ["trace", "trace"]
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

traced_calls = []


class CountingModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(16, activation="relu")
        self.out = layers.Dense(1)

    def call(self, inputs):
        if isinstance(inputs, jax.core.Tracer):
            traced_calls.append(inputs.shape)
        return self.out(self.hidden(inputs))


rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")

for steps_per_execution in [1, 4]:
    traced_calls.clear()
    model = CountingModel()
    model.compile(optimizer="adam", loss="mse", steps_per_execution=steps_per_execution)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    print(f"steps_per_execution = {steps_per_execution}, model traced {len(traced_calls)} times "
          f"(symbolic build passes included): {traced_calls}")
