"""A `jax.jit` function called, with the same NumPy array, outside and inside `jax.enable_x64()`.

Source:
  https://github.com/jax-ml/jax/pull/5488
  https://github.com/jax-ml/jax/issues/5532

The x64 context manager's pull request (jakevdp, reviewed by mattjj) made the
jit caches key on the x64 flag, with this example: `j_svd = jit(jnp.linalg.svd)`
called on `np.random.randn(100, 100)` returns float32, then, under
`enable_x64()`, float64 ("Small change made it so this works even with CPP jit");
#5532 is the follow-up where a cached computation of the other mode was reused.
JAX documents the rule: `jax.jit` keys each trace by the *tracing context*
(`jax.config` values and context managers such as `enable_x64` and
`default_matmul_precision`) before the arguments, and its own explanation
names it first ("Tracing context doesn't match, e.g. due to config or context
manager ... jax_enable_x64 differs: now True and before False"). Measured on
jax 0.10.2: the function traces twice; the second call's array also becomes
float64. Here the `svd` is wrapped in a function of the program's own (JAX's
explanation and traceguard's report leave JAX's own functions out).

Expected:
  function: decompose
  cause: tracing-context
  changed: "jax_enable_x64: value"
  fix: set the option once for the whole program (jax.config.update), or call the function under one value
  fix_keywords: ["jax.config.update", "same value"]
  forbidden_keywords: ["tf.function", "input_signature"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "jax_enable_x64", "aspect": "context"}]
"""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def decompose(a):
    return jnp.linalg.svd(a)


x = np.random.randn(100, 100)
u, s, vt = decompose(x)
print(u.dtype)
with jax.enable_x64():
    u, s, vt = decompose(x)
    print(u.dtype)
