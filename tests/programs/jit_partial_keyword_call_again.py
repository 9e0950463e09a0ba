"""`jax.tree_util.Partial(f, parameter=1)(x)` calls a jitted `f` by keyword: a new cache key, a second trace.

Source:
  https://github.com/jax-ml/jax/issues/14183
  https://github.com/jax-ml/jax/pull/595

The reporter jits `some_function(x, parameter)`, calls it as `some_function(1, 1)`,
then builds `Partial(some_function, parameter=1)` and sees the first call of the
partial "compiles again" (and asks whether a `Partial` or a `lambda` always
recompiles). The established rule (mattjj in jax#595, which made `jit` key
keyword arguments instead of treating them as static): `jit` does not map
keyword arguments onto the signature, so `f(1, 2)` and `f(1, y=2)` "correspond
to different call signatures and hence the latter does not hit the compilation
cache entry from the former"; later calls made the same way hit. The `Partial`
is not the cause: it passes `parameter` by keyword. Measured on jax 0.10.2: two
traces of `some_function`; `jax_explain_cache_misses` says "different input
pytree: at input path [0], now tuple of length 1 and before tuple of length 2
... at input path [1] ... symmetric difference of key sets: {'parameter'}".
The fix: call the function one way throughout (here `some_function(1, parameter=1)`
in the first call too, or a `Partial` that binds positionally).

Expected:
  function: some_function
  cause: call-structure
  changed: "parameter: call_structure"
  fix: call the jitted function one way throughout (the same arguments by keyword, or all positionally)
  fix_keywords: ["keyword", "positional"]
  forbidden_keywords: ["tf.function", "jnp.asarray(", "static_argnums"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "parameter", "aspect": "call_structure"}]
  set: heldout3
"""
import jax
from jax.tree_util import Partial


@jax.jit
def some_function(x, parameter):
    return x + parameter


def test_compilation():
    some_function(1, 1)  # compiles
    patial_function = Partial(some_function, parameter=1)
    patial_function(1)  # compiles again
    patial_function(1)
    return


test_compilation()
