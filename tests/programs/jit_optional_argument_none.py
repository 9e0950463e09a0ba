"""A jitted function called with an optional argument, then with None: one trace per structure.

Source:
  https://github.com/jax-ml/jax/issues/2720

The reporter was surprised that `h = jax.jit(f)` works for both `h(a, 1.0)` and
`h(a, None)` although `x_in` is not a static argument. The maintainers: "Note that
the _type_ of the second argument changes when going from `1.0` to `None`, not
only its value" (froystig), and "the fact that the type changes here, together
with the fact that JAX API-level functions handle Nones, is the answer"
(mattjj): `None` is an empty pytree, so the input pytree structure differs and
JAX traces once per structure, by design. Measured on jax 0.10.2: `h(a, 1.0)`,
`h(a, None)`, `h(a, 2.0)` trace twice (the third call reuses the first trace);
`jax_explain_cache_misses` says "different input pytree: at input path [0][1],
now <class 'NoneType'> and before pytree leaf, so their Python types differ".

Expected:
  function: f
  cause: structure
  changed: "x_in: structure"
  fix: none needed: one trace per pytree structure (an array, or None) is by design
  fix_keywords: ["None"]
  forbidden_keywords: ["jnp.asarray", "tf.function"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x_in", "aspect": "structure"}]
"""
import jax
import numpy as np


def f(logits, x_in):
    if x_in is None:
        return logits
    else:
        return logits + x_in


h = jax.jit(f)
a = np.random.randn(10).astype("float32").reshape([1, -1])
print(h(a, 1.0))
print(h(a, None))
print(h(a, 2.0))
