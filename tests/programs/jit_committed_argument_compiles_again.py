"""A committed argument compiles `jax.jit` again without tracing it again.

Source:
  https://github.com/jax-ml/jax/issues/15924
  https://github.com/uwplasma/vmex/pull/321

The reporter's `train_step` compiled more than once after loading pretrained
parameters; the snippet calls a jitted identity `test` on a `jax.Array`, a NumPy
array, `jax.device_put(x_np)` and `jax.device_put(x_np, x_jax.sharding)`, with
`jax_log_compiles` on, and only the last one compiles again. The cause, as JAX
keys it: `device_put` with a sharding (or a device) makes the array *committed*
to it, the others are uncommitted, and a `jit` executable is keyed by each
argument's sharding and committedness ("A jit key includes each argument's
commitment flag. A lane whose first call receives uncommitted arrays and whose
later calls receive committed ones ... compiles twice with identical shapes",
vmex#321). Measured on jax 0.10.2: `test`'s Python body runs once (one "TRACING
CACHE MISS"), and `jax_log_compiles` logs two compilations, the second with
"Argument mapping: (SingleDeviceSharding(device=CpuDevice(id=0) ...),)" where the
first had `UnspecifiedValue`: a compilation without a retrace. The fix: give
every call arguments of one kind (commit them all with `jax.device_put(x,
sharding)`, or none), or pass `in_shardings` to `jax.jit`. A report must not call
the second compilation a retrace of a changed shape, dtype or value (nothing of
the abstract value changed), and should name `x`'s committed sharding as what
the compilation was keyed on.

Expected:
  function: test
  cause: sharding
  changed: "x: sharding"
  fix: give every call arguments of one placement (commit all with jax.device_put(x, sharding), or none), or pass in_shardings to jax.jit
  fix_keywords: ["committed", "device_put", "in_shardings"]
  forbidden_keywords: ["tf.function", "jnp.asarray", "static_argnums"]
  traces: 1
  backend: jax
  kinds: ["trace", "compile"]
  changes: [{"argument": "x", "aspect": "sharding"}]
  note: the backend traces once and compiles twice (jax_log_compiles); the compilation without a trace is the `compile` record in `kinds:`, which `traces:` does not count
"""
import sys
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np


@contextmanager
def print_barrier(name: str):
    print(f"--- ENTER {name} ---", file=sys.stderr)
    yield
    print(f"--- EXIT  {name} ---", file=sys.stderr)


@jax.jit
def test(x):
    return x


if __name__ == '__main__':
    x_jax = jnp.zeros((1,))
    x_np = np.zeros((1,))
    x_np2jax = jax.device_put(x_np)
    x_np2jax_sharded = jax.device_put(x_np, x_jax.sharding)

    jax.config.update("jax_log_compiles", True)

    with print_barrier("jax.Array"):
        test(x_jax)

    with print_barrier("np.ndarray"):
        test(x_np)

    with print_barrier("np.ndarray -> jax.Array"):
        test(x_np2jax)

    with print_barrier("np.ndarray -> jax.Array (with sharding)"):
        test(x_np2jax_sharded)

    jax.config.update("jax_log_compiles", False)
