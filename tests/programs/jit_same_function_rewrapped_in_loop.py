"""`jax.jit(f)` of the same named function in every iteration: JAX traces it once.

Source:
  https://github.com/jax-ml/jax/issues/9288

The JAX tutorial's "Don't do this!" example, `i = jax.jit(unjitted_loop_body)(i)`
inside a while loop, was said to compile every iteration. The reporter showed
that it does not: "the unjitted_loop_body function is actually not being compiled
every iteration, but cached somewhere" (only a lambda written in the loop is; see
`jit_lambda_created_in_loop.py`), and the maintainers changed the tutorial.
`jax.jit` keys its tracing cache on the wrapped Python function, so a new
`jax.jit` wrapper of the same function object shares the cache. Measured on
jax 0.10.2: the body runs once for n = 3; `jax_explain_cache_misses` reports only
the first miss ("never seen function: unjitted_loop_body"). A negative control:
the report must not invent a retrace or a "new function object" per iteration.

Expected:
  function: unjitted_loop_body
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (jax.jit of the same function reuses its cache)
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
"""
import jax


def unjitted_loop_body(prev_i):
    print("i am being jitted")
    return prev_i + 1


def g_inner_jitted_poorly(x, n):
    i = 0
    while i < n:
        # Don't do this!
        i = jax.jit(unjitted_loop_body)(i)
    return x + i


print(g_inner_jitted_poorly(10, 3))
