"""The TensorFlow backend: `tf.function` traces and calls, read from TensorFlow's own record.

`backend` answers `_compat`'s interface (`_interface.BACKEND_NAMES`) on TensorFlow; `traces`
hooks each `tf.function` trace, `calls` each call's cost, `keys` reads a call's cache key as
TensorFlow compares it, `function` and `context` the tf.function and graph being built,
`autograph`, `retracing`, `data_elements` and `replay` one TensorFlow internal each. Nothing
here imports `_compat.jax`; importing this package alone loads nothing.
"""
