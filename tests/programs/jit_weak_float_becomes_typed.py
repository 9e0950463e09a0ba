"""A Python float fed to a `jax.jit` lambda, then its typed float32 result: two traces.

Source:
  https://github.com/jax-ml/jax/issues/4274

Asked how to find why a jitted function recompiles, the maintainers (jekbradbury,
with mattjj and jakevdp in the thread) pointed at weak types: "We don't want any
use of Python scalars ... to promote JAX values to higher than expected
precision, so we treat them as 'undecided precision'", so
`f = jax.jit(lambda x: x + np.float32(0.))` called with `x = 0.` and then with
its own result "will compile `f` twice: once with weak type on `x` and once
without. This can be a bit of a gotcha for training loops, and the solution
(for now) is to initialize scalars (e.g. learning rates) used as arguments to
jitted functions as NumPy or `jnp` scalars with explicit type (e.g.
`x = np.float32(0.)`)". This is their snippet. Measured on jax 0.10.2: the
lambda is traced twice; `jax_explain_cache_misses` says of the second call
"different input types: at x, now f32[]{weak_type=False} and before
f32[]{weak_type=True}". Same dtype, same shape: only the weak type differs.

Expected:
  function: <lambda>
  cause: weak-type
  changed: "x: weak_type"
  fix: start from a typed scalar, x = np.float32(0.) (or jnp.float32), so the argument is never weakly typed
  fix_keywords: ["np.float32", "jnp.float32"]
  forbidden_keywords: ["tf.function"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "weak_type"}]
"""
import jax
import numpy as np

x = 0.
f = jax.jit(lambda x: x + np.float32(0.))
y = f(x)
z = f(y)
print("f(x) weak_type:", y.weak_type, "f(y) weak_type:", z.weak_type)
