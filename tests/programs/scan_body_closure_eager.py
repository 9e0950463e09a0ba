"""A `lax.scan` whose body is defined inside the function that runs it, called without `jax.jit`.

Source:
  https://github.com/jax-ml/jax/issues/4811

The reporter's Newton iteration for a square root defines its scan body inside
the function (it closes over `x`) and found one version "orders of magnitudes
slower" than another; while editing the question it turned out that "it seems
that my remark only applied to non-jitted functions". Run eagerly, `lax.scan`
traces its body to a jaxpr and compiles the loop on every call whose body
object it has not seen, and a body defined inside the caller is a new object
at every call (JAX's tracing cache is keyed by the function object). The fix is
to jit the caller once (then the body is traced only when the caller itself
traces), or to define the body once and pass what it reads through the carry.
Measured on jax 0.10.2: `body` is traced 3 times for 3 calls; with
`jax_explain_cache_misses`, "never seen function: body ... maybe the function
is being re-defined repeatedly" at the second and third.

Expected:
  function: body
  cause: control-flow-body
  changed: "function object: a new body per call"
  fix: jax.jit the caller once, or define the body once at module level
  fix_keywords: ["jax.jit", "module level"]
  forbidden_keywords: ["tf.function"]
  traces: 3
  backend: jax
  kinds: ["trace", "retrace", "retrace"]
  changes: [{"aspect": "function_object"}, "*"]
"""
import jax.numpy as jnp
from jax.lax import scan


def sqrt_careful(x):
    def body(val, _):
        new_val = 0.5 * (val + x / val)
        return new_val, None

    res, _ = scan(body, jnp.ones_like(x), jnp.arange(10))
    return res


for value in (2.0, 3.0, 4.0):
    print(sqrt_careful(jnp.float32(value)))
