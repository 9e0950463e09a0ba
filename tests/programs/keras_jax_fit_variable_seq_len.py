"""Keras 3 on JAX: `fit` on a `PyDataset` whose batches have different sequence lengths traces per length.

Sources:
  https://github.com/keras-team/keras/issues/20369
  https://github.com/jax-ml/jax/issues/803

keras#20369's reporter trained a small sequence-to-vector model with `fit` on a
`keras.utils.PyDataset` whose first batches all had different sequence lengths and
saw each unseen length take far longer than the rest. On TensorFlow, Keras 3 traces
that step once with a `None` length (`fit_variable_seq_len.py`, a negative control),
but on the JAX backend the step is a `jax.jit` function with no shape relaxation:
"`jit` will recompile the function for each new set of input shapes. Within any given
JIT-compiled function instance, shapes are fully known" (hawkinsp, jax#803), whose
answer is to "bucket computations into a small number of ... sizes, and to pad ... up
to some bucket size". This is the reporter's generator and model, smaller, with
`KERAS_BACKEND=jax`: 6 batches of lengths 1..6, then 4 of length 6. Measured on
jax 0.10.2 + Keras 3.15.1: `train_step` traces 6 times, once per new length (`fit`
shuffles the batches; `jax_explain_cache_misses`: "different input types: at data[0],
now f32[8,3,8] and before f32[8,6,8]" and so on). Keras's own `wrapped_fn` helper
misses twice as well (out of scope).

Expected:
  function: train_step
  cause: shape-nonbatch
  changed: "data: dim 1"
  fix: pad sequences to a few bucket lengths (or one maximum length) with masking, so the jitted step sees few shapes
  fix_keywords: ["pad", "bucket"]
  forbidden_keywords: ["drop_remainder", "tf.function", "reduce_retracing", "input_signature"]
  traces: 6
  backend: jax
  changes: [{"argument": "data", "aspect": "dim", "axis": 1}, "*"]
"""
import os

os.environ["KERAS_BACKEND"] = "jax"

import keras
import numpy as np

NCLASSES, D_MODEL, BATCH = 3, 8, 8


class DG(keras.utils.PyDataset):
    def __init__(self):
        super().__init__()
        self.n_alternating = 6
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 10

    def __getitem__(self, index):
        length = index + 1 if index < self.n_alternating else self.n_alternating
        x = self.rng.normal(size=(BATCH, length, D_MODEL)).astype("float32")
        y = keras.utils.to_categorical(self.rng.integers(0, NCLASSES, BATCH), NCLASSES)
        return x, y


inputs = keras.Input((None, D_MODEL))
x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
x = keras.layers.GlobalAveragePooling1D()(x)
outputs = keras.layers.Dense(NCLASSES, activation="softmax")(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="categorical_crossentropy")
model.fit(DG(), epochs=1, verbose=0)
print("done")
