"""`lax.while_loop` run eagerly with `cond`/`body` closures defined per call: traced and compiled every call.

Source:
  https://github.com/jax-ml/jax/issues/10023
  https://github.com/google-deepmind/optax/issues/1298

The reporter's `f(max)` defines `cond` (reading `max`) and `body` inside the
function and runs `lax.while_loop(cond, body, 0)` outside any `jax.jit`; the
number of live buffers grew with every call ("it isn't a memory leak, but a
cache"). The established cause: a control-flow primitive traces its body
functions to jaxprs through a cache keyed on the function objects, and an eager
`while_loop` compiles the resulting primitive, so closures made anew per call
miss that cache every time ("the closures you're creating aren't particularly
compilation cache friendly ... `jax_explain_cache_misses` should catch the
trouble with caching the while compilation", optax#1298, rdyro). Measured on
jax 0.10.2: three calls trace `cond` 3 times and `body` 3 times; JAX's
explanation: "never seen function: body ... but seen another function defined
on the same line; maybe the function is being re-defined repeatedly". There is
no `jax.jit` anywhere: these are traces of the loop's bodies below the eager
call. The fix: define `cond`/`body` once at module level and carry `max` in the
loop state, or `jax.jit` `f` once (then its bodies are traced once per trace of
`f`).

Expected:
  function: body
  cause: control-flow-body
  changed: "(...)"
  fix: define cond and body once (outside f) and carry max in the loop state, or jax.jit f once so the loop is traced with it
  fix_keywords: ["once", "outside", "jax.jit"]
  forbidden_keywords: ["tf.function", "jnp.asarray", "static_argnums"]
  traces: 3
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
"""
import jax
from jax import lax
from jax import numpy as jnp


def f(max):
    def cond(val):
        return val < max

    def body(val):
        return val + 1
    return lax.while_loop(cond, body, 0)


def print_num_live_buffers():
    print(len(jax.live_arrays()))


for _ in range(3):
    x = jnp.full((), 2)
    f(x)
    print_num_live_buffers()
