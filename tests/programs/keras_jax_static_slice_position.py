"""A Keras model on JAX whose `call` slices with a static `pos`: one trace per new `pos` value.

Source:
  https://github.com/keras-team/keras/issues/19639

The reporter needed `x[:, :pos]` with `pos` read from the model's inputs, which
`jax.jit` cannot trace (a slice size must be static). The Keras maintainer's
answer (hertschuh): turn `jit_compile` off in `compile()`, "jit the parts that
you can" in a method with `@partial(jax.jit, static_argnums=(0, 2, 3))`, and pass
`pos.item()` as a static argument. This is that code, run as the answer intends,
with `predict` called for positions 2, 3, 2 and 4. A static argument is part of
`jax.jit`'s cache key by value (hash and equality), so each new `pos` value is a
new trace (by design); the same value again reuses it. `self` is static too (the
same model object each time). Measured on jax 0.10.2 + Keras 3.15.1: `jitted_call`
traces 3 times (pos 2, 3, 4); `jax_explain_cache_misses` says "different input pytree:
at input path [0][2], now ... Static(val=3) and before ... Static(val=2), so the
pytree node metadata does not match" (then `Static(val=4)`; JAX 0.10 words a
static argument as a pytree node and names it by position, not by name). Passing `pos` as an array instead would break the slice
(`jnp.asarray` is the wrong fix for a declared-static argument).

Expected:
  function: jitted_call | CustomModel.jitted_call
  cause: static-value
  changed: "pos: value"
  fix: expected once per distinct pos (a static argument); keep the set of pos values small, or pad to a few sizes
  fix_keywords: ["static"]
  forbidden_keywords: ["jnp.asarray", "tf.function", "drop_remainder"]
  traces: 3
  backend: jax
  changes: [{"argument": "pos", "aspect": "value"}, "*"]
"""
import os

os.environ["KERAS_BACKEND"] = "jax"

from functools import partial

import jax
import jax.numpy as jnp
import keras
import numpy as np


class CustomModel(keras.Model):
    def __init__(self, name=None):
        super().__init__(name=name)

    @partial(jax.jit, static_argnums=(0, 2, 3))
    def jitted_call(self, x, pos, num_repeats):
        x_slice = x[:, :pos, :, :]
        x_slice = jnp.repeat(x_slice, num_repeats, axis=2)
        return x_slice

    def call(self, inputs, training=True):
        x, pos = inputs
        return self.jitted_call(x, pos.item(), 2)


x = np.random.rand(1, 5, 4, 3)
model = CustomModel()
model.compile(jit_compile=False)
for position in (2, 3, 2, 4):
    pos = jnp.array([position])
    print(model.predict((x, pos), verbose=0).shape)
