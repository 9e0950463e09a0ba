"""A `jax.jit` function called on a committed array, then again inside `jax.default_device(...)`.

Source:
  https://github.com/uwplasma/vmex/pull/325

A solver's jitted `_block_lane` "compiled once per default-device context, even
when every argument was committed to the same device": the construction solve
ran with no default device, the trial solves inside `jax.default_device(...)`,
and "JAX keys an executable on the `jax.default_device` in effect, so the same
committed call compiled twice". The fix merged there runs the call under
`jax.default_device(None)` when every argument is committed, so every call is
made under the same value. Collected after the tracing-context rule was
written, as a held-out check of it. Measured on jax 0.10.2 (CPU):
`jax_explain_cache_misses` says of the second call "Tracing context doesn't
match ... jax_default_device differs: now cpu:0 and before None"; two traces.

Expected:
  function: lane
  cause: tracing-context
  changed: "jax_default_device: value"
  fix: make every call under the same default device (clear it with jax.default_device(None) around the call), or set it once
  fix_keywords: ["same value", "jax.config.update"]
  forbidden_keywords: ["tf.function", "input_signature", "pad"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "jax_default_device", "aspect": "context"}]
"""
import jax
import jax.numpy as jnp


@jax.jit
def lane(carry):
    return carry * 2 + 1


cpu = jax.devices("cpu")[0]
carry = jax.device_put(jnp.ones(8), cpu)  # Committed to the device.
lane(carry)  # The construction solve: no default device.
with jax.default_device(cpu):  # A trial solve inside a device context.
    lane(carry)
