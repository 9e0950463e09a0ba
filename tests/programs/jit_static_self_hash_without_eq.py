"""A jitted method with `self` static, whose class defines `__hash__` but not `__eq__`: a trace per object.

Sources:
  https://github.com/jax-ml/jax/issues/28418
  https://github.com/jax-ml/jax/issues/13992

The reporter's `MyClass` marks `self` static (`partial(jax.jit, static_argnums=0)`)
and defines `__hash__` from `self.a` but no `__eq__`, then in a loop creates a
new object, calls `obj.f()`, sets `obj.a = 2` and calls it again. JAX looks static
arguments up by hash and equality; without `__eq__` Python compares objects by
identity, so every new object misses the cache (and a mutated one may hit a stale
entry). The maintainers, on the same pattern (#13992): "Mutating hashed objects
is an antipattern, as object identity should always imply object equality";
JAX's FAQ ("how to use jit with methods") asks a static `self` to define
`__hash__` and `__eq__` from its immutable fields, or to be passed as a pytree.
Measured on jax 0.10.2: 5 traces for 5 objects (one per object; the call after
`obj.a = 2` hits and returns 2, a stale result); `jax_explain_cache_misses` says
"different input pytree: at input path [0][0], now ... Static(val=<MyClass
object at 0x...>) and before ... Static(val=<MyClass object at 0x...>), so the
pytree node metadata does not match". Passing `self` as a traced array
(`jnp.asarray`) is impossible here: it is an object.

Expected:
  function: f | MyClass.f
  cause: static-identity
  changed: "self: identity"
  fix: give MyClass an __eq__ consistent with __hash__ (from immutable fields), or reuse one object, or make it a pytree
  fix_keywords: ["__eq__"]
  forbidden_keywords: ["jnp.asarray", "tf.function"]
  traces: 5
  backend: jax
  changes: [{"argument": "self", "aspect": "identity"}, "*"]
"""
from functools import partial

import jax


class MyClass:
    def __init__(self):
        self.a = 1

    @partial(jax.jit, static_argnums=0)
    def f(self):
        print('tracing')
        return self.a + 1

    def __hash__(self):
        return hash(self.a)


for i in range(5):
    obj = MyClass()
    print(obj.f())
    obj.a = 2
    print(obj.f())
