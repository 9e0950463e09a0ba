"""A jitted function tested with `jnp.ones(n)` and then `jnp.arange(n)`: float32 then int32, two traces.

Source:
  https://github.com/jax-ml/jax/issues/4274

In the "How to detect recompilation reason?" thread, a user (bycn) reported being
"confused why my method was recompiling during testing: it was because jnp.ones()
is 'float32' and jnp.arange() is 'int32'". The JAX maintainer's answer (jakevdp):
"`jnp.arange` defaults to the type of the argument you pass it, so
`jnp.arange(10)` has int dtype, while `jnp.arange(10.0)` has float dtype"; the
dtype is part of `jax.jit`'s cache key, so the second input is a new trace. The fix
is to give the test inputs one dtype (`jnp.arange(10.0)`, or `dtype=jnp.float32`,
or `.astype(jnp.float32)`). Measured on jax 0.10.2: `method` traces twice;
`jax_explain_cache_misses` says of the second call "different input types: at x,
now i32[10] and before f32[10]". Same shape, same weak type (neither is weak): only
the dtype differs.

Expected:
  function: method
  cause: dtype
  changed: "x: dtype"
  fix: create the inputs with one dtype (jnp.arange(10.0) or dtype=jnp.float32 / .astype(jnp.float32))
  fix_keywords: ["dtype", "astype", "float32"]
  forbidden_keywords: ["tf.function", "tf.constant", "drop_remainder", "static_argnums"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "dtype"}]
"""
import jax
import jax.numpy as jnp


@jax.jit
def method(x):
    return jnp.sum(x * x) / x.shape[0]


print("ones:", method(jnp.ones(10)))
print("arange:", method(jnp.arange(10)))
print("ones again:", method(jnp.ones(10)))
