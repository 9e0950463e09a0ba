"""A second call of `vmap(jit(f))` timed slower than the first: asynchronous dispatch, not a recompilation.

Source:
  https://openillumi.com/en/en-jax-async-dispatch-benchmark-guide
  https://docs.jax.dev/en/latest/async_dispatch.html

A Stack Overflow question (summarised on the page above) times
`jax.vmap(my_function, in_axes=(0, None))` of a jitted matrix product twice and
finds the second run slower (t_1 = 13.1 s, t_2 = 15.7 s), "The compilation should
be finished, so why is it slowing down?". The answer: JAX dispatches
asynchronously, so `time()` around an unblocked call measures dispatch and the
previous call's work still running, not a new compilation; time with
`.block_until_ready()`. This program keeps the question's code with a smaller
matrix (20000 x 200) and adds the blocked timing. Measured on jax 0.10.2:
`my_function` is traced once (vmap of a jitted function reuses the batched
trace); `jax_explain_cache_misses` reports only "never seen function:
my_function". A negative control: no retrace, whatever the wall-clock says.

Expected:
  function: my_function
  cause: none-expected
  changed: "(nothing)"
  fix: none needed for tracing; time with .block_until_ready()
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: jax
  kinds: ["trace"]
  set: heldout3
"""
from time import time

import jax
import numpy as np


@jax.jit
def my_function(x, y):
    return x @ y


vectorized_function = jax.vmap(my_function, in_axes=(0, None))
shape = (20_000, 200)
x = np.ones(shape)
y = np.ones(shape[1])
start = time()
vectorized_function(x, y)
t_1 = time() - start
start = time()
vectorized_function(x, y)
t_2 = time() - start
print(f'{t_1 = }\n{t_2 = }')
start = time()
vectorized_function(x, y).block_until_ready()
print(f't_3 = {time() - start} (blocked)')
