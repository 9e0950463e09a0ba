"""Positional and keyword calls of one `jax.jit` function are different cache keys: three traces.

Source:
  https://github.com/jax-ml/jax/issues/523
  https://github.com/jax-ml/jax/pull/595

The report (skye): calling a jitted `foo(x, foo_power=10)` as `jit_foo(x,
foo_power=11)` and as `jit_foo(x, 11)` behaves differently. The maintainers'
answer, in the pull request that closed it (mattjj): `jit` does not canonicalize
keyword arguments to the formal parameters (inspecting the signature is "way too
brittle", broken by decorators and `functools.partial`), so "these two lines
correspond to different call signatures and hence the latter does not hit the
compilation cache entry from the former": `f(1, 2)`, `f(1, y=2)` and
`f(x=2, y=3)` are three cache keys, while `f(y=4, x=8)` hits `f(x=2, y=3)`'s.
"We don't guarantee cache hits in general, so while this behavior isn't ideal,
it seems okay." This program is the pull request's extended example, unchanged.
Measured on jax 0.10.2: the lambda traces 3 times; `jax_explain_cache_misses`
names the split each time as a pytree difference of the (args, kwargs) pair ("at
input path [0], now tuple of length 1 and before tuple of length 2 ... at input
path [1] ... symmetric difference of key sets: {'y'}", then `{'x'}`). The
fix is to call the function one way throughout (all positional, or all by
keyword); a shape, dtype or value hint is wrong here, since every argument is the
same weakly typed int32 scalar.

Expected:
  function: <lambda>
  cause: call-structure
  changed: "y: call_structure"
  fix: call the jitted function one way throughout (all positional or all by keyword); JAX keys the positional/keyword split
  fix_keywords: ["keyword", "positional"]
  forbidden_keywords: ["tf.function", "jnp.asarray", "static_argnums"]
  traces: 3
  backend: jax
  kinds: ["trace", "retrace", "retrace"]
  changes: [{"argument": "y", "aspect": "call_structure"}, {"argument": "x", "aspect": "call_structure"}]
"""
from jax import jit

f = jit(lambda x, y: x + y)
print(f(1, 2))
print(f(2, 3))  # cache hit
print(f(1, y=2))  # cache miss, re-compiles
print(f(3, y=4))  # cache hit
print(f(5, 6))  # cache hit
print(f(x=2, y=3))  # cache miss, re-compiles
print(f(y=4, x=8))  # cache hit
