"""A pytree rebuilt outside `jit` holds Python floats where the jitted one held arrays: weak types miss the cache.

Source:
  https://github.com/genjax-community/genjax/issues/1352
  https://docs.jax.dev/en/latest/type_promotion.html#weak-types

The reporter jits `compile(trace)` and expects that after compiling for the
trace `importance` returned, the trace that `update` returned (same model, same
structure) hits the cache; it prints "compiling" again. The maintainer's answer
(femtomc): "the traces have identical structure, but because you didn't
`jax.jit` the interface methods, the _leaves_ have different types (some are
arrays, some are literal values, and some are array with weak types). If any of
these types (in the leaves of the Pytree) are mismatched, this induces the
cache miss." This program stands in for genjax's traces with dicts: the jitted
`importance` returns typed float32 arrays, the unjitted `update` puts Python
floats in the same places. Measured on jax 0.10.2: `compile` traced twice;
`jax_explain_cache_misses` says "different input types: at trace['args'][0], now
f32[]{weak_type=True} and before f32[]{weak_type=False}" (and `trace['score']`,
`trace['y']`). The fix: build every trace the same way (jit `update` too), or
make the leaves typed (`jnp.float32(...)`/`np.float32(...)`), not Python floats.

Expected:
  function: compile
  cause: weak-type
  changed: "trace: weak_type"
  fix: make the leaves typed arrays (jit update too, or jnp.float32/np.float32 instead of Python floats)
  fix_keywords: ["weak", "float32"]
  forbidden_keywords: ["tf.function"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "trace", "aspect": "weak_type"}]
  set: heldout3
"""
import jax
import jax.numpy as jnp


@jax.jit
def importance(a):
    y = a + 1.0
    return {"args": (a,), "y": y, "score": -0.5 * y * y}


def update(trace, y):
    # not jitted: the new trace holds the Python values it was given
    return {"args": (2.0,), "y": y, "score": -0.5 * y * y}


@jax.jit
def compile(trace):
    print("compiling")
    return 0


trace = importance(jnp.float32(2.0))
trace2 = update(trace, 5.0)
compile(trace)   # prints "compiling"
compile(trace)   # does not print, as expected
compile(trace2)  # prints "compiling" again
