"""Where traceguard's own record of a first result goes: calls and time per body run, by kind.

    python benchmarks/record_profile.py            # a TraceAwareLayer 20-layer model, and the
                                                   # plain one under watch()
    python benchmarks/record_profile.py --models 15

For each body run recorded while a fresh 20-layer model gives its first result in a
`tf.function` (the benchmark's `first_result`), in the process of this script only:

- Python and C calls inside `_begin` and `_finish`, counted with `sys.setprofile`:
  deterministic, unlike time on a shared machine, and what moved the time so far;
- the time of `_begin` and of `_finish` in place (wall clock, between TensorFlow's graph
  building), by where the run was: Keras 3's symbolic pass, a function's first trace of
  the layer, a later trace. Medians over the runs of `--models` first results, after one
  untimed first result;
- the record per run next to its floor, a record stripped to what must be taken while a
  run happens (`overhead.record_floor`), in alternating first results;
- with `--late-signature N`, an experiment: the record per run with each run's input
  signature read later, `N` runs at a time (the arguments kept until then), next to the
  record, in alternating first results. Timing only: the signatures are not used.
  `N` 0 never reads them, the most that reading them later could save.

docs/performance.md ("The record, cut again", "The record's floor", "Reading the signature
later") reads these numbers.
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import overhead  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard._record import recorder as _recorder  # noqa: E402


def aware_first_result(inputs):
    overhead.first_result(overhead.deep_model, overhead.TRACE_AWARE, inputs)


def watched_first_result(inputs):
    model = overhead.deep_model(overhead.PLAIN)
    with tg.watch():
        tf.function(model)(inputs)


def _kind(run):
    context = run.site.context.value
    if context != "graph":
        return context
    return "first trace" if not run.earlier else "later trace"


def count_calls(first, inputs):
    """Python and C calls per recorded run inside `_begin` and `_finish`."""
    calls, runs = collections.Counter(), [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            calls[event] += 1

    def counted(function, counts):
        def counted_function(*args):
            runs[0] += counts
            sys.setprofile(profile)
            try:
                return function(*args)
            finally:
                sys.setprofile(None)
        return counted_function

    begin, finish = _recorder._begin, _recorder._finish
    _recorder._begin, _recorder._finish = counted(begin, 1), counted(finish, 0)
    try:
        first(inputs)
    finally:
        _recorder._begin, _recorder._finish = begin, finish
    # `sys.setprofile(None)` itself is seen as a C call once per patched call.
    return calls["call"] / runs[0], (calls["c_call"] - 2 * runs[0]) / runs[0], runs[0]


def time_by_kind(first, inputs, models):
    """Median `_begin` and `_finish` time per run, by where the run was."""
    times = collections.defaultdict(list)
    clock = time.perf_counter
    begin, finish = _recorder._begin, _recorder._finish
    started = {}

    def timed_begin(*args):
        start = clock()
        run = begin(*args)
        started[id(run)] = clock() - start
        return run

    def timed_finish(run, error):
        kind = _kind(run)  # Before `_finish` lets go of what the run held.
        start = clock()
        finish(run, error)
        times[kind].append((started.pop(id(run)), clock() - start))

    _recorder._begin, _recorder._finish = timed_begin, timed_finish
    try:
        for _ in range(models):
            gc.collect()
            first(inputs)
    finally:
        _recorder._begin, _recorder._finish = begin, finish
    return {kind: np.array(pairs) * 1e6 for kind, pairs in times.items()}


def late_signature_time(first, inputs, batch, models):
    """In-place time per run of the record, and of the record with each run's input signature
    read `batch` runs later (never, for 0), in alternating first results: medians, µs."""
    from traceguard._compat import signature_of

    unread = []

    class Late:  # A run's arguments, kept until its signature is read.
        __slots__ = ("original", "args", "kwargs", "value")

    def late_signature(original, args, kwargs):
        late = Late()
        late.original, late.args, late.kwargs = original, args, kwargs
        unread.append(late)
        if batch and len(unread) >= batch:
            for late in unread:
                late.value = signature_of(late.original, late.args, late.kwargs)
                late.original = late.args = late.kwargs = None
            unread.clear()
        return late

    timed, spent, runs = overhead.in_place_timer()
    begin, finish = _recorder._begin, _recorder._finish
    per_run = {"record": [], "late": []}
    try:
        for _ in range(models):
            for name, read in (("record", signature_of), ("late", late_signature)):
                _recorder.signature_of = read
                _recorder._begin, _recorder._finish = timed(begin, 1), timed(finish, 0)
                gc.collect()
                spent[0], runs[0] = 0.0, 0
                first(inputs)
                _recorder._begin, _recorder._finish = begin, finish
                unread.clear()
                per_run[name].append(spent[0] / runs[0] * 1e6)
    finally:
        _recorder.signature_of = signature_of
        _recorder._begin, _recorder._finish = begin, finish
    return {name: float(np.median(values)) for name, values in per_run.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=9, help="first results timed per case")
    parser.add_argument("--late-signature", type=int, nargs="+", metavar="N",
                        help="only time the record with signatures read N runs later (0: never)")
    args = parser.parse_args()
    inputs = tf.random.uniform((8, 16))
    print(f"TensorFlow {tf.__version__}, Keras {overhead.keras.__version__}; "
          f"load average {os.getloadavg()[0]:.2f}")
    for name, first in (("TraceAwareLayer model", aware_first_result),
                        ("plain model under watch()", watched_first_result)):
        first(inputs)  # Warm: imports, caches, the first tf.function of the process.
        if args.late_signature:
            print(f"\n{name}, per run, alternating first results:")
            for batch in args.late_signature:
                late = late_signature_time(first, inputs, batch, args.models)
                later = f"{batch} runs later" if batch else "never"
                print(f"  record {late['record']:.1f} µs; signatures read {later}: {late['late']:.1f} µs")
            continue
        python, c, runs = count_calls(first, inputs)
        print(f"\n{name}: {runs} body runs, {python:.1f} Python calls and {c:.1f} C calls per run")
        print(f"  {'run':12} {'runs':>5} {'_begin':>8} {'_finish':>8} {'mean total':>11}  (µs, in place)")
        for kind, pairs in sorted(time_by_kind(first, inputs, args.models).items()):
            print(f"  {kind:12} {len(pairs):5d} {np.median(pairs[:, 0]):8.1f} {np.median(pairs[:, 1]):8.1f} "
                  f"{pairs.sum(axis=1).mean():11.1f}")
        floor = overhead.record_floor(functools.partial(first, inputs), args.models)
        print(f"  per run, alternating first results: record {floor['record']:.1f} µs, its floor "
              f"(what must be taken as a run happens) {floor['floor']:.1f} µs")


if __name__ == "__main__":
    main()
