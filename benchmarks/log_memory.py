"""Memory of a layer retraced many times: bounded log, flat memory.

Usage: python benchmarks/log_memory.py [--runs 100000] [--functions 500]

1. `--runs` body runs recorded as graph traces, each with a new Python value
   (the worst case: every run is a retrace with a change), through the real
   recorder; traced memory is printed at checkpoints.
2. `--functions` real traces of `tf.function`s created anew each time (the
   "function created in a loop" storm), each running the layer's `call`
   (without Keras's `__call__`, which costs ~40 ms per trace here). A growing
   TensorFlow cache would hide traceguard's share: the functions are dropped.

Prints each checkpoint and the ratio of the last to the first: ~1.0 is flat.
tests/record/test_memory.py is the short version run by CI.
"""

import argparse
import gc
import os
import time
import tracemalloc

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import traceguard as tg  # noqa: E402


class Scaled(tg.TraceAwareLayer):
    def call(self, inputs, k=1):
        return inputs


def live_bytes():
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def report(title, checkpoints, layer):
    print(title)
    for runs, size in checkpoints:
        print(f"  after {runs:>7,} runs: {size / 1024:9.1f} KiB traced")
    first, last = checkpoints[0][1], checkpoints[-1][1]
    print(f"  ratio last/first: {last / first:.3f}   log: {len(layer.trace_log)} events kept, "
          f"{layer.trace_log.dropped:,} dropped")


def recorder_runs(runs, log_size):
    layer = Scaled(trace_log_size=log_size)
    spec = tf.TensorSpec((2, 3))
    marks = sorted({max(runs // 10, 2 * log_size), runs // 4, runs // 2, runs})
    checkpoints = []
    tracemalloc.start()
    started = time.perf_counter()
    with tf.Graph().as_default():
        for k in range(1, runs + 1):
            layer.call(spec, k=k)
            if k in marks:
                checkpoints.append((k, live_bytes()))
    elapsed = time.perf_counter() - started
    tracemalloc.stop()
    report(f"{runs:,} recorded retraces (trace_log_size={log_size}), "
           f"{elapsed / runs * 1e6:.0f} us per run under tracemalloc:", checkpoints, layer)
    assert len(layer.trace_log) == log_size


def functions_created_anew(count, log_size=100):
    layer = Scaled(trace_log_size=log_size)
    x = tf.ones((2, 3))
    marks = sorted({max(count // 4, 2 * log_size), count // 2, count})
    checkpoints = []
    tracemalloc.start()
    started = time.perf_counter()
    for k in range(1, count + 1):
        tf.function(lambda x: layer.call(x))(x)  # A new function each time: one trace each.
        if k in marks:
            checkpoints.append((k, live_bytes()))
    elapsed = time.perf_counter() - started
    tracemalloc.stop()
    report(f"{count:,} tf.functions created anew and traced (trace_log_size={log_size}), "
           f"{elapsed / count * 1e3:.1f} ms per trace under tracemalloc:", checkpoints, layer)
    assert len(layer.trace_log) == log_size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--functions", type=int, default=500)
    parser.add_argument("--trace-log-size", type=int, default=1000)
    args = parser.parse_args()
    print(f"TensorFlow {tf.__version__}, traceguard {tg.__version__}")
    recorder_runs(args.runs, args.trace_log_size)
    functions_created_anew(args.functions)


if __name__ == "__main__":
    main()
