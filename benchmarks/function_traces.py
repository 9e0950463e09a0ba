"""What the function-trace hook costs per trace, by part, and on 100 retraces.

Usage:  python benchmarks/function_traces.py [--retraces 100] [--repeats 5]

Times, per trace of a plain `tf.function` retraced by a Python int, the hook's start
(the walk to the tf.function and the user's frame, binding the arguments) and its end
(with `FunctionRecords.on_trace`, the record), the fastest of each repetition's median;
then 100 retraces watched and unwatched, alternating, their fastest runs' ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from traceguard._compat import _function_tracing  # noqa: E402
from traceguard._compat.tensorflow import traces as _tf_traces
from traceguard._record.functions import FunctionRecords  # noqa: E402


def _timed(timings: list[float], function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timings.append(time.perf_counter() - start)
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retraces", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()

    @tf.function
    def step(x, i):
        return tf.reduce_sum(x * i)

    x = tf.ones([4])
    calls = iter(range(10**9))

    def retrace(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            step(x, next(calls))
        return time.perf_counter() - start

    starts: list[float] = []
    ends: list[float] = []
    original_begin, original_end = _tf_traces._begin, _function_tracing.end
    retrace(5)  # Warm up TensorFlow.
    watched_runs, plain_runs, start_medians, end_medians = [], [], [], []
    for _ in range(options.repeats):
        records = FunctionRecords()
        _tf_traces._begin = _timed(starts, original_begin)
        _function_tracing.end = _timed(ends, original_end)
        try:
            with _function_tracing.listening(records.on_trace):
                watched_runs.append(retrace(options.retraces))
        finally:
            _tf_traces._begin, _function_tracing.end = original_begin, original_end
        plain_runs.append(retrace(options.retraces))
        start_medians.append(statistics.median(starts))
        end_medians.append(statistics.median(ends))
        starts.clear()
        ends.clear()
    print(f"TensorFlow {tf.__version__}, {options.retraces} retraces x {options.repeats}")
    print(f"hook start per trace:            {min(start_medians) * 1e6:7.1f} us")
    print(f"hook end + record per trace:     {min(end_medians) * 1e6:7.1f} us")
    print(f"one trace (plain, fastest run):  {min(plain_runs) / options.retraces * 1e3:7.2f} ms")
    print(f"watched / plain (fastest runs):  {min(watched_runs) / min(plain_runs):7.3f}")


if __name__ == "__main__":
    main()
