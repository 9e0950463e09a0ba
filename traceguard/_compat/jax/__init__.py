"""The JAX backend: `jax.jit` traces and calls, read from JAX's own tracing cache.

`backend` answers `_compat`'s interface (`_interface.BACKEND_NAMES`) on JAX; `traces` hooks
each `jax.jit` trace, `bodies` every other miss JAX explains below it (scan and loop bodies,
cond branches), `calls` each call's cost, `keys` reads a call's cache key as JAX compares it,
`transforms` JAX's uncached transformations. Nothing here imports TensorFlow (a JAX-only
install has none) or `_compat.tensorflow`; importing this package alone loads nothing.
"""
