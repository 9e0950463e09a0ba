"""One process of a two-process `jax.distributed` job on the CPU, on localhost.

Run by tests/stories/test_jax_multi_process.py, one process each: `python jax_multi_process.py
TRACE_FILE PORT PROCESS_ID ROWS...`. The processes train one weight matrix on a batch
sharded across both (`jax.make_array_from_process_local_data`), so each step's gradient
is reduced across the processes (gloo, JAX's CPU collectives); every step is a `jax.jit`
function of the global batch, traced again for a new shape. TRACE_FILE holds `{worker}`,
filled with `process-0` or `process-1` once `jax.distributed.initialize()` ran.

A process given more batches than the other waits in that step's all-reduce for a peer
that never comes: the hang of a real job, which the test ends by killing it.
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import traceguard as tg

trace_file, port, process_id, *rows = sys.argv[1:]
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                           process_id=int(process_id))
mesh = Mesh(np.array(jax.devices()), ("batch",))
sharded, replicated = NamedSharding(mesh, PartitionSpec("batch")), NamedSharding(mesh, PartitionSpec())


@jax.jit
def train_step(weights, batch):
    gradient = jax.grad(lambda w: jnp.mean((batch @ w) ** 2))(weights)
    return weights - 0.01 * gradient


# Replicated from the start, as the step returns it: a weight on one device would be traced again
# once it comes back replicated (a sharding, which the signature does not show).
weights = jax.make_array_from_process_local_data(replicated, np.ones((3, 2), np.float32))
with tg.watch(trace_file=trace_file):
    for count in map(int, rows):
        batch = jax.make_array_from_process_local_data(sharded, np.ones((count, 3), np.float32))
        weights = train_step(weights, batch)
        weights.block_until_ready()
print("done", os.getpid(), flush=True)
jax.distributed.shutdown()
