"""A `@partial(jit, static_argnums=...)` function defined inside its caller: a new function, traced at every call.

Source:
  https://github.com/jax-ml/jax/issues/2251

In jax#2251 the reporter speeds up a `lax.scan` simulation by jitting
`_pandemic_scan` at module level with `static_argnums=(1, 2, 3)` (141 us per call),
then tries a "local" version where the jitted `_pandemic_scan` is defined inside
`pandemic_scan` and gets 272 ms per call. The answer (shoyer): the locally
defined function is a new Python function at every call of `pandemic_scan`, so
`jit`'s cache, keyed on the function object, never hits: each call traces and
compiles again; define the jitted function once, outside. Measured on jax 0.10.2:
3 calls, 3 traces of `_pandemic_scan` (the scan body `infect`, defined once, is
traced once: its own cache hits); `jax_explain_cache_misses`: "never seen
function: _pandemic_scan", then twice "... maybe the function is being re-defined
repeatedly".

Expected:
  function: _pandemic_scan
  cause: new-function-object
  changed: "function object: a new function per call"
  fix: define the jitted _pandemic_scan once at module level and call it from pandemic_scan
  fix_keywords: ["once", "outside"]
  forbidden_keywords: ["tf.function", "jnp.asarray("]
  traces: 3
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
  set: heldout3
"""
import functools
from typing import NamedTuple

import jax.numpy as np
from jax import jit, lax


class InfectState(NamedTuple):
    x: np.ndarray
    a: np.ndarray


x0 = np.zeros(50)
a = np.full(50, 0.1)


def infect(state, step):
    x = state.x + state.a * step * (1.0 - state.x)
    return InfectState(x, state.a), x.sum()


def pandemic_scan(state, step=1, t=0, T=5):
    @functools.partial(jit, static_argnums=(1, 2, 3))
    def _pandemic_scan(state, step, t, T):
        return lax.scan(infect, InfectState(x0, a), np.full(T, step))

    return _pandemic_scan(state, step, t, T)


for _ in range(3):
    final, totals = pandemic_scan(InfectState(x0, a), T=5)
print(totals)
