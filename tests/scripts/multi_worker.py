"""One worker of a two-worker `tf.distribute.MultiWorkerMirroredStrategy` job on localhost.

Run by tests/stories/test_multi_worker.py, one process per worker, each with its own TF_CONFIG
(as a cluster launcher sets it) and the same command: `python multi_worker.py OUT_DIR
LAST_ROWS`. Every trace file's path names the worker (`{worker}`), and its label is the
worker by default. Three parts, each its own trace file:

- `agree-{worker}.jsonl`: a `tf.function` step under `strategy.run` (a Keras Dense layer, its
  gradients all-reduced across the workers), three batches of 8 rows on every worker;
- `differ-{worker}.jsonl`: the same on a fresh function, but this worker's third batch has
  LAST_ROWS rows (8 on worker 0, 6 on worker 1: a last batch only it gets);
- `fit-{worker}.jsonl` (Keras 2 only): `model.fit` with `TraceMonitor(trace_file=...)`, the
  same data on every worker. Keras 3's `fit` fails under this strategy (docs/multi-worker.md).
"""

import os
import sys
import time

started = time.monotonic()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402
from traceguard.callbacks import TraceMonitor  # noqa: E402

keras = _compat.keras
out, last_rows = sys.argv[1], int(sys.argv[2])
imported = time.monotonic()
strategy = tf.distribute.MultiWorkerMirroredStrategy()
timings = {"import": imported - started, "strategy": time.monotonic() - imported}


def make_step():
    with strategy.scope():
        layer = keras.layers.Dense(2, name="dense")
        layer.build((None, 3))

    @tf.function
    def step(x):
        def replica_step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(layer(x) ** 2)
            gradients = tape.gradient(loss, layer.trainable_weights)
            gradients = tf.distribute.get_replica_context().all_reduce("sum", gradients)
            for variable, gradient in zip(layer.trainable_weights, gradients):
                variable.assign_sub(0.01 * gradient)
            return loss

        return strategy.run(replica_step, args=(x,))

    return step


def train(trace_file, rows):
    began = time.monotonic()
    step = make_step()
    with tg.watch(trace_file=os.path.join(out, trace_file)):
        for batch_rows in rows:
            step(tf.ones((batch_rows, 3)))
    timings[trace_file.split("-")[0]] = time.monotonic() - began


train("agree-{worker}.jsonl", [8, 8, 8])
train("differ-{worker}.jsonl", [8, 8, last_rows])
if not _compat.IS_KERAS_3:
    began = time.monotonic()
    with strategy.scope():
        inputs = keras.Input((3,))
        model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        model.compile(optimizer="sgd", loss="mse")
    monitor = TraceMonitor(trace_file=os.path.join(out, "fit-{worker}.jsonl"))
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 3)), rng.random((64, 2)), batch_size=16, epochs=2, verbose=0,
              callbacks=[monitor])
    timings["fit"] = time.monotonic() - began
print("seconds:", ", ".join(f"{part} {seconds:.1f}" for part, seconds in timings.items()), flush=True)
