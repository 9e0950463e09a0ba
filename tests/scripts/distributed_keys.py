"""Iterates a MirroredStrategy distributed dataset and calls a tf.function per replica under watch();
prints what traceguard and TensorFlow counted as JSON.

Run in a subprocess by tests/diagnosis/test_distributed_keys.py: logical devices must be set before
TensorFlow initialises its runtime.
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import traceguard as tg  # noqa: E402
from traceguard._record import observers as _observers  # noqa: E402

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def iterate_distributed_dataset(epochs):
    """The documented loop: `tf.data`'s multi-device iterator builds its functions with
    `get_concrete_function` each time the distributed dataset is iterated."""
    dataset = strategy.experimental_distribute_dataset(tf.data.Dataset.range(16).batch(4))
    requested = []

    def note(tracing):
        requested.append((tracing.name, tracing.requested))

    with _observers.listening_to_traces(note), tg.watch() as explanation:
        batches = sum(1 for _ in range(epochs) for _ in dataset)
    return {"batches": batches, "traced": len(requested),
            "requested": sum(1 for _, asked in requested if asked),
            "reported": {runs.function: runs.counts() for runs in explanation.functions.values()}}


@tf.function
def double(x):
    return x * 2.0


def replica_step(x):
    return double(x)


@tf.function
def step(x):
    return strategy.run(replica_step, args=(x,))


def replica_calls():
    """`double` called in each replica of a traced step: TensorFlow keys it by the replica's device."""
    with tg.watch() as explanation:
        step(tf.ones((2,)))
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "double"]
    return {"kinds": [event.kind.value for event in runs.events],
            "changes": [[str(change) for change in event.changes] for event in runs.events],
            "hints": [event.hint for event in runs.events],
            "tracing_count": double.experimental_get_tracing_count()}


print(json.dumps({"dataset": iterate_distributed_dataset(4), "replicas": replica_calls()}))
