"""What writing a trace file costs under `watch()`: watched with a trace file / watched without.

Usage:  python benchmarks/trace_file.py               # about 2 minutes on 2 CPU cores
        python benchmarks/trace_file.py --scale 2 --clock cpu

The same runs as `overhead.py`'s "watched" section (a fresh 20-layer model's first
`fit`; a `tf.function` retraced 100 times), each under `watch()` with and without
`trace_file=`, timed by `overhead.py`'s `Timer`: the variants in a fresh random order
every repetition, the ratio of their fastest runs (load only adds time). The control
is a second watched run without a file, so the A/A column shows how far two equal
variants differ here. The target is `overhead.py`'s for watched first results: 1.05.
Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from overhead import CLOCKS, Table, Timer, describe_machine, load_note  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402

keras = _compat.keras


def first_fit(trace_file):
    """A fresh 20-layer plain Keras model's first `fit` on one batch, under `watch()`."""
    model = keras.Sequential([keras.Input((16,))] + [keras.layers.Dense(16) for _ in range(20)])
    model.compile(optimizer="sgd", loss="mse")
    with tg.watch(trace_file=trace_file):
        model.fit(np.ones((32, 16)), np.ones((32, 16)), batch_size=32, verbose=0)


def hundred_retraces(trace_file):
    """A fresh `tf.function` called with 100 Python ints, under `watch()`: 100 traces, 100 lines."""
    step = tf.function(lambda x, k: x * k)
    with tg.watch(trace_file=trace_file):
        for k in range(100):
            step(tf.ones((2,)), k)


def check_trace_file_time(table, timer, directory):
    path = os.path.join(directory, "trace.jsonl")
    runs = [("trace file, watched first fit: 20-layer model", first_fit, 11),
            ("trace file, watched tf.function retraced 100 times", hundred_retraces, 11)]
    for name, run, repetitions in runs:
        timer.compare(table, name, functools.partial(run, path), functools.partial(run, None),
                      functools.partial(run, None), 1.05, repetitions, unit="ms", settle=gc.collect,
                      statistic="fastest")
        with open(path, encoding="utf-8") as file:
            lines = sum(1 for _ in file)
        table.add(f"trace file lines: {name.split(', ', 1)[1]}", lines, "info", True,
                  detail=f"{os.path.getsize(path) / 1024:.0f} KiB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies every timing's number of interleaved repetitions")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="wall: time.perf_counter; cpu: time.process_time")
    arguments = parser.parse_args(argv)
    print(describe_machine())
    print(f"start: {load_note()}; clock {arguments.clock}, repetitions x{arguments.scale:g}")
    started = time.perf_counter()
    table, timer = Table(), Timer(arguments.clock, arguments.scale)
    with tempfile.TemporaryDirectory() as directory:
        check_trace_file_time(table, timer, directory)
    print()
    table.print()
    print(f"\nend: {load_note()}; {time.perf_counter() - started:.0f} s")
    print("all targets met" if table.passed else "TARGET MISSED")
    return 0 if table.passed else 1


if __name__ == "__main__":
    sys.exit(main())
