"""An output with an explicit mesh sharding fed back into `jax.jit` retraces: the sharding is in the type.

Source:
  https://github.com/jax-ml/jax/issues/31250

The reporter jits `f`, which puts `with_sharding_constraint(x,
NamedSharding(mesh, P()))` on its input, and feeds the output back: `f(x1)` then
`f(x2)` print "trace" twice although both jaxprs are identical and either
executable runs either input. What the backend keys on (JAX's own explanation,
measured on jax 0.10.2 with two CPU devices): `jax.make_mesh` now makes a mesh
with `Explicit` axis types, so the output `x2` carries its mesh in its abstract
type, `i32[]({Explicit: ('device',)})`, where the input `x1` had `i32[]({})`;
"TRACING CACHE MISS ... different input types: * at x, now
i32[]({Explicit: ('device',)}) and before i32[]({})". The third call (`x3`, same
sharding as `x2`) hits. The fix is to give the first call an input of the same
sharding (`jax.device_put(x1, NamedSharding(mesh, P()))`), so every call has one
type; dtype and shape hints are wrong (both are `int32[]`).

Expected:
  function: f
  cause: sharding
  changed: "x: sharding"
  fix: put the first input on the same sharding the function returns (jax.device_put(x1, NamedSharding(mesh, P()))), so every call has one type
  fix_keywords: ["sharding", "device_put"]
  forbidden_keywords: ["tf.function", "jnp.asarray", "static_argnums", "cast"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "sharding"}]
"""
import jax

jax.config.update("jax_num_cpu_devices", 2)

import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

x1 = jnp.array(0, dtype=jnp.int32)
mesh = jax.make_mesh((2,), ('device',))


@jax.jit
def f(x):
    print('trace')
    x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P()))
    x = x + 1
    return x


print('f(x1):')
x2 = f(x1)
print(x2)

print('f(x2):')
x3 = f(x2)
print(x3)

print('f(x3):')
print(f(x3))
