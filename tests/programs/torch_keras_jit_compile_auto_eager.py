"""Keras 3 on torch with `jit_compile="auto"`: `fit` runs eagerly, nothing is compiled or recompiled.

Source:
  https://github.com/NNPDF/nnpdf/pull/2137
  https://github.com/keras-team/keras/pull/18569

Porting their fitting code to Keras 3, the NNPDF developers found the torch
backend about 4 times slower than TensorFlow and wondered about compilation:
"while jit_compile is set to auto, I think the default for pytorch is False".
That is Keras's established behaviour (keras-team/keras#18569, which enabled
`torch.compile` in the torch trainer: "`jit_compile="auto"` defaults to eager
for the torch backend (`torch.compile` only kicks in if the user explicitly
sets `jit_compile=True`)"). The slowness is eager execution, not
recompilation. A negative control: a report must count no compile or recompile
of Keras's step; it may say that nothing is compiled on torch unless
`jit_compile=True`. Here a small dense model fitted for 2 epochs with the
default `jit_compile="auto"`, CPU.

Expected:
  backend: torch
  function: train_step
  cause: none-expected
  changed: "(nothing)"
  fix: nothing recompiles; jit_compile="auto" means eager on torch - jit_compile=True to compile
  fix_keywords: []
  traces: 0
  kinds: []
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (no frame compile at all), torch 2.14.1, keras 3.15.1
"""
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main():
    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")  # jit_compile="auto"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype("float32")
    y = rng.normal(size=(64, 1)).astype("float32")
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)


if __name__ == "__main__":
    main()
