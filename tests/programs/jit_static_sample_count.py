"""A sample count made a static argument of `jax.jit` so it can be a shape: one trace per count.

Source:
  https://github.com/jax-ml/jax/issues/648

The reporter's jitted `sample` drew `N` random indices with `random.randint(key,
(N,), ...)` and failed with "unhashable type: 'JaxprTracer'": a shape cannot be a
traced value. The maintainer's answer (hawkinsp): "Shapes within in `jit` block must
be fully determined by the static arguments"; make `N` static with
`static_argnums`, which "would most likely fix the problem, but `sample` would be
recompiled for each `N`. This may or may not be a problem." A static argument is
part of the cache key by value: each new `N` is a new trace (by design), the same
`N` again reuses it. This program is their function with the fix applied, called
for N = 100, 200, 100, 300. Measured on jax 0.10.2: `sample` traces 3 times;
`jax_explain_cache_misses` names the static argument by position ("at input path
[0][1] ... Static(val=200) and before ... Static(val=100)"). Passing `N` as an
array would bring the original error back, so the fix is to keep the set of counts
small (or draw a fixed maximum and slice/mask outside), not `jnp.asarray`.

Expected:
  function: sample
  cause: static-value
  changed: "N: value"
  fix: expected once per distinct N (a static argument sets a shape); keep few distinct N values, e.g. draw a fixed maximum count and slice
  fix_keywords: ["static"]
  forbidden_keywords: ["jnp.asarray", "tf.function", "drop_remainder"]
  traces: 3
  backend: jax
  changes: [{"argument": "N", "aspect": "value"}, "*"]
"""
from functools import partial

import jax
import jax.numpy as jnp
from jax import random

weights = jnp.linspace(0.0, 1.0, 10)


@partial(jax.jit, static_argnums=(1,))
def sample(key, N):
    idx = random.randint(key, (N,), 0, weights.shape[0])
    return jnp.mean(weights[idx])


key = random.PRNGKey(0)
for n in [100, 200, 100, 300]:
    key, subkey = random.split(key)
    print(n, float(sample(subkey, n)))
