"""Keras 3 on torch with `jit_compile=True`: graph breaks split the training step into many compiled frames.

Source:
  https://github.com/keras-team/keras/issues/21851
  https://github.com/keras-team/keras/pull/18569
  https://github.com/keras-team/keras/pull/19956

The reporter trained a small autoencoder with Keras 3 on the torch backend and
found `jit_compile=True` much slower than eager. The Keras maintainers'
established cause (kiukchung when enabling `torch.compile` in the torch
trainer: "It is slower than eager because of too many graph breaks"; fchollet:
"This is typically due to graph breaks"): Dynamo cannot trace all of Keras's
step (the `Tensor.backward()` call in `train_step`, the optimizer's Python), so
it breaks the graph and compiles the rest as frames of their own, each with its
own compile cost and guards, and the first epoch pays for all of them. The
expected diagnosis: the compiles of `train_step` and the frames after its
graph breaks (torch's own break reasons), not a shape or value change: the
batch size divides the samples, so no batch changes shape. Here a dense
autoencoder (16 -> 4 -> 16) on 64 samples of 16 features, `batch_size=16`, one
epoch, CPU, Keras's default `torch.compile` (Inductor).

Expected:
  backend: torch
  function: train_step
  cause: graph-break
  changed: "(none - the frames after graph breaks compile on their own)"
  fix: graph breaks (Tensor.backward() in train_step) split the step into frames compiled separately; jit_compile=False (eager) is the Keras default on torch - compile only what traces as one graph
  fix_keywords: ["graph break", "jit_compile"]
  traces: 3
  kinds: ["trace", "trace", "retrace"]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `train_step` with a cache entry: the first, the first compile of its frame after `Tensor.backward()` (torch_dynamo_resume_in_train_step_at_70), and the recompile for `grad is None` after the first step; `one_step_on_data` 1), torch 2.14.1, keras 3.15.1
"""
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main():
    inputs = keras.Input(shape=(16,))
    encoded = keras.layers.Dense(4, activation="relu")(inputs)
    decoded = keras.layers.Dense(16)(encoded)
    autoencoder = keras.Model(inputs, decoded)
    autoencoder.compile(optimizer="adam", loss="mse", jit_compile=True)
    x = np.random.default_rng(0).normal(size=(64, 16)).astype("float32")
    autoencoder.fit(x, x, batch_size=16, epochs=1, verbose=0)


if __name__ == "__main__":
    main()
