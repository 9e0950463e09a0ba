"""A Python int carried through a `jax.jit` loop: today one trace, where the report saw two.

Source:
  https://github.com/jax-ml/jax/issues/3163

The reporter's loop starts with `x = 0` (a Python int) and feeds each result of
the jitted `my_fn(x, y)` back in as `x`, with `y = i` a Python int; a global
counter in the body counts its traces. In 2020 JAX traced twice: the first `x`
was a weakly typed int32 (`ShapedArray(int32[], weak_type=True)`) and the
returned array a strongly typed int32, two different cache keys. The maintainers
kept weak types (they stop a Python scalar from promoting a typed array) and
made them flow through `jit`: the sum of two weakly typed values is weakly typed,
so the returned `x` is a weakly typed int32 array, the same abstract value to
`jax.jit` as the Python int 0, and JAX serves every later call from the first
trace. Measured on jax 0.10.2: the body runs once, the reporter's `assert` holds,
and `jax_explain_cache_misses` reports only the first miss ("never seen
function: my_fn"). A negative control: the report must not invent a retrace
(or a weak-type hint) for the later calls.

Expected:
  function: my_fn
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (JAX serves the weakly typed int32 result from the Python int's trace)
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
"""
import jax
import jax.numpy as np

my_fn_calls = 0


@jax.jit
def my_fn(x, y):
    # side effect to detect multiple tracing
    global my_fn_calls
    my_fn_calls += 1
    print("my_fn")

    return x + y


x = 0

for i in range(10):
    x = my_fn(x, i)

assert(my_fn_calls == 1)  # failed in 2020 (my_fn_calls == 2); holds since weak types flow through jit
print("my_fn traces:", my_fn_calls)
