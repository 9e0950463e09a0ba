"""`jit(x.f)()` in a loop: every access makes a new bound method, so JAX traces every call.

Source:
  https://github.com/jax-ml/jax/issues/9672

The reporter contrasted a method decorated with `partial(jit, static_argnums=(0,))`,
compiled once, with a caller that jits the bound method itself,
`for i in range(3): jit(x.f)()`, which "compiles it every time". `x.f` builds
a new bound-method object on each access and `jax.jit` keys its cache on the
function it wraps, so each `jit(x.f)` starts with an empty cache. The
maintainers' answer (tomhennigan): "a common pattern to avoid this is to apply
`jit` ... in the constructor of your object: `self.f = jax.jit(self.f)`". Measured
on jax 0.10.2: 3 traces; `jax_explain_cache_misses` says each time "never seen
function: f ... maybe the function is being re-defined repeatedly".

Expected:
  function: f | X.f
  cause: new-function-object
  changed: "function object: a new bound method per call"
  fix: jit the bound method once (self.f = jax.jit(self.f) in __init__) and call that
  fix_keywords: ["__init__", "once"]
  forbidden_keywords: ["tf.function"]
  traces: 3
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
"""
from jax import jit


class X:
    def f(self):
        print("Recompiling")


x = X()
for i in range(3):
    jit(x.f)()
