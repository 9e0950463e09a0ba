"""An eager `lax.while_loop` with a jitted body but a `lambda` condition written per call: the lambda traces every call.

Source:
  https://github.com/jax-ml/jax/issues/587
  https://github.com/jax-ml/jax/pull/1394

The reporter (fehiepsi) times `lax.while_loop(lambda x: x < 0, jf, np.array(0.))`
twice, with `jf = jit(f)` already compiled, and both calls take ~20 ms against
0.3 ms for `jf` alone: "while_loop/fori_loop seems not cache the body_fn". The
maintainers' diagnosis (jekbradbury): in op-by-op mode the constructed XLA While
and its function arguments were compiled again for every call; the fix series
ended in #1394 (j-towns), which found the remaining misses came from functions
"freshly created on each call" and passed to the loop, a cache miss by function
identity. Today the body `jf` (one object) is cached, but the reporter's
condition is a new `lambda` at each call site: measured on jax 0.10.2, the
`lambda` traces twice (once per `while_loop` call; "never seen function:
<lambda>" each time), while `jf`'s `f` traces once for `jf(x)` and once more in
the first loop's body trace, then never again. The fix: name the condition once (`def cond(x): return x < 0`) and pass
the same object each call, or jit the whole loop.

The two `lambda`s are two functions (one on each `while_loop` line, two code
objects), each traced once: JAX's own explanation (`jax_explain_cache_misses`,
jax 0.10.2) says "never seen function: <lambda> ... defined at" the first
call's line, then the same for the second's, and relates neither to the other
(no "seen another function defined on the same line"). So the second is a
first trace of its own object, not a change of function object from the first:
the kinds are two `trace`s. (The expectation first asked for a
`function_object` change on the second trace; that was wrong against JAX's
record.) Each trace's report should still say why it costs at every run: the
`lambda` is written in the `while_loop` call, a new object each time that line runs.

Expected:
  function: <lambda>
  cause: control-flow-body
  changed: "(...)"
  fix: define the loop condition once and pass the same function object each call (or jax.jit the code that runs the loop)
  fix_keywords: ["once", "same function", "outside"]
  forbidden_keywords: ["tf.function", "jnp.asarray", "static_argnums"]
  traces: 2
  backend: jax
  kinds: ["trace", "trace"]
"""
import time

import jax.numpy as np
from jax import jit, lax


def f(x):
    return np.mean(x - np.ones(10000))


x = np.array(0.)

t = time.time()
f(x)
print("time to evaluate f       :", time.time() - t)

jf = jit(f)
jf(x)

t = time.time()
jf(x)
print("time to evaluate jitted f:", time.time() - t)

t = time.time()
lax.while_loop(lambda x: x < 0, jf, np.array(0.))
print("time for while_loop f    :", time.time() - t)

t = time.time()
lax.while_loop(lambda x: x < 0, jf, np.array(0.))
print("time for while_loop f    :", time.time() - t)
