"""A jitted function that splits a global PRNG key returns the same number twice: it is not traced again.

Source:
  https://github.com/jax-ml/jax/issues/5206
  https://github.com/jax-ml/jax/pull/4312

The omnistaging design note's example (jax#5206, and mattjj's repro in jax#4312):
`init()` splits a global `key` and draws a normal; called plainly it gives two
different numbers, but after `init = jit(init)` the two calls return the same
number ("!!"). The established explanation (mattjj, jax#4312): "That last call
has repeated randomness but no error, because we aren't re-executing the Python
function and thus aren't actually touching the global Python key": `jit` traced
`init` once, the global `key` was read as a constant (and left holding a
tracer), and the second call reuses the trace. Measured on jax 0.10.2: one trace
of `init`; `jax_explain_cache_misses` reports only its first miss. A negative
control: the surprise is the missing retrace; the fix is to pass the key in and
return the new one (`init(key) -> (key, value)`), not anything about retracing.

Expected:
  function: init
  cause: none-expected
  changed: "(nothing)"
  fix: none for tracing (one trace by design); pass the PRNG key as an argument and return the new key
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
  set: heldout3
"""
from jax import jit, random

key = random.PRNGKey(0)


def init():
    global key
    key, subkey = random.split(key)
    return random.normal(subkey, ())


print(init())
print(init())
init = jit(init)
print(init())
print(init())  # the same number again
