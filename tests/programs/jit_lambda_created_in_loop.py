"""`jax.jit(lambda ...)` made anew in every iteration of a loop: a trace per iteration.

Source:
  https://github.com/jax-ml/jax/issues/9288

The JAX tutorial's "Don't do this!" example calls `jax.jit(...)` inside a while
loop. The reporter found that jitting the named function in the loop hits the
cache (see `jit_same_function_rewrapped_in_loop.py`), while "if I switch this to a
lambda function, it is indeed being compiled every iteration", and the
tutorial was changed to use the lambda. JAX keys its cache on the wrapped
function: a lambda written inside the loop is a new function object each time,
so every `jax.jit` of it starts with an empty cache. The fix is to create the
jitted function once, outside the loop. Measured on jax 0.10.2: 3 traces for
n = 3; `jax_explain_cache_misses` says at each "never seen function: <lambda>
... but seen another function defined on the same line; maybe the function is
being re-defined repeatedly, preventing caching?".

Expected:
  function: <lambda>
  cause: new-function-object
  changed: "function object: a new lambda per iteration"
  fix: jit the function once, outside the loop, and call that jitted function in the loop
  fix_keywords: ["once", "outside"]
  forbidden_keywords: ["tf.function"]
  traces: 3
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
"""
import jax


def unjitted_loop_body(prev_i):
    print("i am being jitted")
    return prev_i + 1


def g_inner_jitted_poorly(x, n):
    i = 0
    while i < n:
        # Don't do this!
        i = jax.jit(lambda x: unjitted_loop_body(x))(i)
    return x + i


print(g_inner_jitted_poorly(10, 3))
