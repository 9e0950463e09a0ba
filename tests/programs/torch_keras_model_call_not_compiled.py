"""Keras 3 on torch: `model(x)` in a custom loop is not compiled, whatever `compile(jit_compile=True)` says.

Source:
  https://github.com/keras-team/keras/issues/19315
  https://github.com/keras-team/keras/issues/21530
  https://github.com/keras-team/keras/pull/18569

The reporter set `jit_compile=True` in `model.compile()` and then called the
model directly, `model(state)`, in a reinforcement-learning loop (as the
keras.io actor-critic example does), and asked whether that call gets the
JIT compilation: "it seems that we lose this nice capability". The Keras
answer (hertschuh, keras-team/keras#21530): `compile()`'s `jit_compile` applies
to the step functions of `fit`, `evaluate` and `predict`; `model(x)` is run
eagerly, not compiled (on torch, keras-team/keras#18569 wraps only those
steps in `torch.compile`). Here a small actor-critic-like model, compiled with
`jit_compile=True`, called 5 times on a state batch. Measured with torch
2.14.1 and keras 3.15.1: no Dynamo frame compiles at all. A negative control:
a report must count no compile or recompile; it may say the calls ran eagerly.

Expected:
  backend: torch
  function: call | dense | actor_critic
  cause: none-expected
  changed: "(nothing)"
  fix: nothing compiles or recompiles - model(x) runs eagerly on torch; jit_compile applies to fit/evaluate/predict (predict_on_batch, or torch.compile(model))
  fix_keywords: []
  traces: 0
  kinds: []
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (no frame compile), torch 2.14.1, keras 3.15.1
"""
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main():
    inputs = keras.Input(shape=(4,))
    common = keras.layers.Dense(16, activation="relu")(inputs)
    action = keras.layers.Dense(2, activation="softmax")(common)
    critic = keras.layers.Dense(1)(common)
    model = keras.Model(inputs=inputs, outputs=[action, critic], name="actor_critic")
    model.compile(optimizer="adam", jit_compile=True)
    rng = np.random.default_rng(0)
    for _ in range(5):
        state = keras.ops.convert_to_tensor(rng.normal(size=(1, 4)).astype("float32"))
        action_probs, critic_value = model(state)


if __name__ == "__main__":
    main()
