"""A `lax.scan` started from a Python scalar carry whose body returns float16: the body traced twice.

Source:
  https://github.com/jax-ml/jax/pull/9046

mattjj's pull request on scan's weak-type handling: with an initial carry of
Python floats (`[0.]`, weakly typed float32) and float16 inputs, the body
returns a float16 carry; scan then promotes the weakly typed carry to float16
and traces the body a second time ("if we make `func` above print something,
then on main it'll print twice"). The pull request was not merged; JAX 0.10.2
still traces twice (jax/_src/lax/control_flow/loops.py, `_promote_weak_typed_input`:
"we compute the jaxpr in two passes"). The fix on the user's side is a typed
initial carry of the type the body returns (`jnp.zeros((), jnp.float16)`). This
is the pull request's example with a carry of one item (longer ones raise on
0.10.2). `jax_explain_cache_misses` says of the second trace "different input
types: at carry[0], now f16[]{weak_type=False} and before f32[]{weak_type=True}".

Expected:
  function: func
  cause: weak-type
  changed: "carry: dtype"
  fix: start the scan from a typed carry of the body's output type, e.g. jnp.zeros((), jnp.float16)
  fix_keywords: ["jnp.zeros", "jnp.float16"]
  forbidden_keywords: ["tf.function"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "carry", "aspect": "dtype"}]
"""
import jax.numpy as jnp
from jax import lax


def func(carry, x):
    print("tracing func")
    new_carry = [carry[0] + x]
    return new_carry, None


init_weak = [0.]
x = jnp.ones(5, dtype='float16')
carry, _ = lax.scan(func, init_weak, x)
print(carry)
