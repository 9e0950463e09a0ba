"""A pytree passed as a static argument and then mutated: `jax.jit` does not miss, and returns the old data.

Source:
  https://github.com/jax-ml/jax/issues/9024

jakevdp's report: a custom pytree class passed through `static_argnums` "will be
treated as static based on the hash of the wrapper class, meaning that changes
to underlying data do not lead to recompilation"; after `m.data += 1` the jitted
`get_data` still returns `[0 1 2 3]`. The maintainers' discussion: this is the
static-argument contract (keyed by `__hash__`/`__eq__`, here the default identity
ones, so the same object is a hit); patrick-kidger defines `__hash__`/`__eq__`
over the data for such classes; otherwise pass the pytree as a regular
(traced) argument. Measured on jax 0.10.2: one trace of the `lambda`;
`jax_explain_cache_misses` reports only its first miss. A negative control: the
user expected a retrace that the backend never made; a report must not claim one.

Expected:
  function: <lambda>
  cause: none-expected
  changed: "(nothing)"
  fix: none for tracing; pass the pytree as a traced argument, or give the class __hash__/__eq__ over its data
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
  set: heldout3
"""
import jax.numpy as jnp
from jax import jit
from jax.tree_util import register_pytree_node


class MyClass:
    def __init__(self, data):
        self.data = data


register_pytree_node(MyClass, lambda v: ((v.data,), None), lambda _, data: MyClass(*data))

m = MyClass(jnp.arange(4))
get_data = lambda x: x.data  # noqa: E731 (the report's own lambda)
jit_get_data = jit(get_data, static_argnums=0)
print(get_data(m))
print(jit_get_data(m))
m.data += 1
print(get_data(m))
print(jit_get_data(m))  # does not trigger a cache miss in the JIT, despite different data
