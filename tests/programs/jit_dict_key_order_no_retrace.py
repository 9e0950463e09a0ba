"""A dict argument with its keys in another order: the same `jax.jit` key, no retrace.

Source:
  https://github.com/jax-ml/jax/issues/4085
  https://github.com/jax-ml/jax/pull/26069

jax#4085 asks why `jax.jit` (and `tree_util`) do not keep a dict's key order;
the maintainers' answer (jakevdp, the JEP in jax#26069 and his comment on the
issue): pytree flattening sorts a dict's keys, so `first_value(x1)` and
`first_value(x2)` with the keys in another order "hit the same function cache";
preserving order would make "any time dicts are used in a JIT-compiled function,
differing key orders would result in cache misses and recompilation". The
function keeps the JEP's example: it returns the first *sorted* key's value both
times. Measured on jax 0.10.2: one trace of `first_value`; `jax_explain_cache_misses`
reports only the first ("never seen function"). A negative control: a report
must not invent a retrace for the reordered dict.

Expected:
  function: first_value
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (dict keys are sorted when flattened; the order is not part of the key)
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
  set: heldout3
"""
import jax
import jax.numpy as jnp


@jax.jit
def first_value(x: dict) -> jax.Array:
    first_key = next(iter(x))
    return x[first_key]


x1 = {"a": jnp.int32(1), "b": jnp.float32(2)}
print(first_value(x1))
x2 = {"b": jnp.float32(2), "a": jnp.int32(1)}
print(first_value(x2))
