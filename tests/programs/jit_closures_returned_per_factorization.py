"""Jitted `project`/`recover` closures returned by a factorisation made per solve: compiled again each time.

Source:
  https://github.com/PlasmaControl/DESC/issues/1191
  https://github.com/PlasmaControl/DESC/pull/1043

DESC's `factorize_linear_constraints` returned two `@jit` closures, `project` and
`recover`, over the null space it computed; with `JAX_LOG_COMPILES=1` the
maintainer saw `project`, `recover` and others compiled "between every
iteration of the outer loop" (#1191). The established cause, from the pull
request that fixed it (f0uriest): "every time you call
`factorize_linear_constraints` you get a new `project/recover` function which
gets compiled each time, since its a new function each time. By making them
classes with jitted methods the compile cache is shared between class instances
so it will only compile once (assuming size/shape does" not change). This
program keeps the two closures (their docstrings are DESC's) on a 3 x 12
constraint, factorised 4 times. Measured on jax 0.10.2: 4 traces of `project`
and 4 of `recover`; `jax_explain_cache_misses`: "never seen function: project",
then "... maybe the function is being re-defined repeatedly" three times.

Expected:
  function: project
  cause: new-function-object
  changed: "function object: a new function per call"
  fix: jit module-level functions (or a class's jitted methods) that take Z and xp as arguments, so the cache is shared
  fix_keywords: ["once", "outside"]
  forbidden_keywords: ["tf.function", "jnp.asarray("]
  traces: 4
  backend: jax
  changes: [{"aspect": "function_object"}, "*"]
  set: heldout3
"""
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def factorize_linear_constraints(A, b):
    Z = jnp.asarray(np.linalg.svd(A)[2][A.shape[0]:].T)
    xp = jnp.asarray(np.linalg.pinv(A) @ b)

    @jax.jit
    def project(x):
        """Project a full state vector into the reduced optimization vector."""
        return jnp.atleast_1d(jnp.squeeze(Z.T @ (x - xp)))

    @jax.jit
    def recover(x_reduced):
        """Recover the full state vector from the reduced optimization vector."""
        return jnp.atleast_1d(jnp.squeeze(xp + Z @ x_reduced))

    return project, recover


rng = np.random.default_rng(0)
A = rng.standard_normal((3, 12))
x = jnp.asarray(rng.standard_normal(12))
for step in range(4):
    b = rng.standard_normal(3)
    project, recover = factorize_linear_constraints(A, b)
    x = recover(project(x))
print(x)
