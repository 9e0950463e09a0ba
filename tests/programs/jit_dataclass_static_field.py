"""A static field of a registered dataclass is pytree metadata: a new value is a new `jax.jit` key.

Source:
  https://github.com/jax-ml/jax/issues/33043
  https://github.com/ryan112358/mbi/pull/196

The reporter registers `Shape` with `jax.tree_util.register_dataclass`, marks
`idx` static (`field(metadata={"static": True})`) and jits a static method
`area(shape)` that never reads `idx`; a second instance with another `idx` pays
the compilation again. The established cause (the JAX pytree documentation the
report follows, and the mbi pull request that fixed the same cost in a user
project): a static field is the node's auxiliary data, part of the tree
structure, so it is part of `jax.jit`'s cache key by value whether or not the
body uses it; "two measurements/losses that differ only in noise level produced
different cache keys and forced a full recompilation", fixed by making the field
a dynamic leaf. This program keeps the report's class and timings (the
report's `shape.lenght` typo corrected). Measured on jax 0.10.2: `area` traces
twice (s1, then s2); `jax_explain_cache_misses` says "different input pytree: at
input path [0][0], now <class 'Shape'> with pytree metadata (3,) and before ...
(2,), so the pytree node metadata does not match". The fix: make `idx` a data field (a leaf) when the body does not
need it as a Python value; keep it static only if it must set a shape or a branch.

Expected:
  function: area
  cause: static-field
  changed: "shape: static_field"
  fix: a static field is part of the key by value; make idx a data field (leaf) if the body does not need it static, or keep few distinct values
  fix_keywords: ["static"]
  forbidden_keywords: ["tf.function", "jnp.asarray(", "static_argnums"]
  traces: 2
  backend: jax
  kinds: ["trace", "retrace"]
  changes: [{"argument": "shape", "aspect": "static_field"}]
"""
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclass(slots=True)
class Shape:
    length: jax.Array
    idx: int = field(default=1, metadata={"static": True})

    @staticmethod
    @jax.jit
    def area(shape: "Shape") -> jax.Array:
        return shape.length * shape.length


def timed(label, shape):
    start = time.perf_counter()
    area = shape.area(shape)
    area.block_until_ready()
    print(f"{label}: {time.perf_counter() - start:.2e} s")


s1 = Shape(jnp.asarray(10.0), 2)
timed("Compile time s1", s1)
timed("Eval time s1", s1)
s2 = Shape(jnp.asarray(10.0), 3)
timed("Compile time s2", s2)
timed("Eval time s2", s2)
