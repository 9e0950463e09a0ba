"""What traceguard costs: every figure a ratio traceguard / plain Keras, measured side by side.

Usage:  python benchmarks/overhead.py           # everything, a few minutes on 2 CPU cores
        python benchmarks/overhead.py --quick   # graph identity only (what CI runs)

Each timing interleaves the traceguard and the plain variant repetition by repetition in one
process and compares medians, so drift on a shared machine hits both sides alike. The script
prints one table with the target beside each ratio and exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402

keras = _compat.keras
SEED_SHAPE = (60, 28, 28)


# --- the architectures, each in a traceguard and a plain flavour ----------------------
def seed_layer(base):
    class Seed(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    return Seed()


def side_effect_seed_layer(mode):
    class Seed(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @tg.side_effects(print=mode)
        def call(self, inputs):
            print("seed layer ran")
            return self.dense(inputs)

    return Seed()


def mlp(base, depth=3, width=64):
    class Block(base):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(units, activation="relu")

        def call(self, inputs):
            return self.dense(inputs)

    return keras.Sequential([Block(width) for _ in range(depth)] + [Block(10)])


def transformer_block(base, dim=32, heads=4):
    class TransformerBlock(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.attention = keras.layers.MultiHeadAttention(heads, dim // heads)
            self.norm1 = keras.layers.LayerNormalization()
            self.norm2 = keras.layers.LayerNormalization()
            self.ffn1 = keras.layers.Dense(dim * 2, activation="relu")
            self.ffn2 = keras.layers.Dense(dim)

        def call(self, inputs):
            x = self.norm1(inputs + self.attention(inputs, inputs))
            return self.norm2(x + self.ffn2(self.ffn1(x)))

    return TransformerBlock()


def deep_model(base, depth=20):
    return mlp(base, depth=depth - 1, width=16)


# --- measurements -----------------------------------------------------------------------
def graph_ops(layer, shape):
    concrete = tf.function(layer).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    return collections.Counter(op.type for op in concrete.graph.get_operations())


def interleaved(traced, plain, repetitions):
    """Median seconds of `traced()` and `plain()`, alternating who goes first."""
    times = {traced: [], plain: []}
    for repetition in range(repetitions):
        order = (traced, plain) if repetition % 2 == 0 else (plain, traced)
        for run in order:
            start = time.perf_counter()
            run()
            times[run].append(time.perf_counter() - start)
    return statistics.median(times[traced]), statistics.median(times[plain])


def repeat(function, count):
    def run():
        for _ in range(count):
            function()

    return run


class Table:
    def __init__(self):
        self.rows = []

    def add(self, name, value, target, passed, detail=""):
        self.rows.append((name, value, target, passed, detail))

    def print(self):
        width = max(len(row[0]) for row in self.rows)
        print(f"{'measure':<{width}}  {'ratio':>8}  {'target':>8}  ok    detail")
        for name, value, target, passed, detail in self.rows:
            shown = f"{value:8.3f}" if isinstance(value, float) else f"{value!s:>8}"
            print(f"{name:<{width}}  {shown}  {target:>8}  {'yes' if passed else 'NO ':<4}  {detail}")

    @property
    def passed(self):
        return all(row[3] for row in self.rows)


def check_graph_identity(table):
    x_shape = (8,) + SEED_SHAPE[1:]
    cases = [("seed layer", seed_layer, x_shape), ("MLP", mlp, (8, 16)),
             ("transformer block", transformer_block, (4, 10, 32))]
    for name, build, shape in cases:
        traced = graph_ops(build(tg.TraceAwareLayer), shape)
        plain = graph_ops(build(keras.layers.Layer), shape)
        extra = (traced - plain) + (plain - traced)
        table.add(f"graph ops: {name}", f"+{sum((traced - plain).values())}", "+0", not extra,
                  f"{sum(plain.values())} ops" + (f"; differs: {dict(extra)}" if extra else ""))
    if hasattr(tg, "side_effects"):
        plain = graph_ops(seed_layer(keras.layers.Layer), x_shape)
        for mode in tg.PRINT_MODES:
            traced = graph_ops(side_effect_seed_layer(mode), x_shape)
            extra, missing = traced - plain, plain - traced
            if mode == "tf.print":
                allowed = {"PrintV2", "StringFormat", "Const"}
                ok = not missing and set(extra) <= allowed and extra["PrintV2"] >= 1
            else:
                ok = not extra and not missing
            table.add(f"graph ops: side_effects(print={mode!r})", f"+{sum(extra.values())}",
                      "print ops" if mode == "tf.print" else "+0", ok, ", ".join(sorted(extra)) or "-")


def compare(table, name, traced, plain, target, repetitions, calls=1, unit="us/call"):
    """Adds the median time ratio of `traced()` over `plain()`, each run `calls` times a repetition."""
    t, p = interleaved(repeat(traced, calls), repeat(plain, calls), repetitions)
    scale = 1e6 if unit.startswith("us") else 1e3
    table.add(name, t / p, f"<= {target}", t / p <= target, f"{p / calls * scale:.0f} {unit} plain")


def check_graph_call_time(table, repetitions):
    x = tf.random.uniform(SEED_SHAPE)
    traced, plain = tf.function(seed_layer(tg.TraceAwareLayer)), tf.function(seed_layer(keras.layers.Layer))
    traced(x), plain(x)
    compare(table, "graph call: seed layer", lambda: traced(x), lambda: plain(x), 1.01, repetitions, 50)

    data = np.random.default_rng(0).random((512, 16)).astype("float32")
    labels = np.random.default_rng(1).random((512, 10)).astype("float32")
    models = []
    for base in (tg.TraceAwareLayer, keras.layers.Layer):
        model = mlp(base)
        model.compile(optimizer="sgd", loss="mse")
        model.fit(data, labels, batch_size=64, verbose=0)
        model.predict(data, batch_size=64, verbose=0)
        models.append(model)
    traced_model, plain_model = models
    compare(table, "graph call: model.predict", lambda: traced_model.predict(data, batch_size=64, verbose=0),
            lambda: plain_model.predict(data, batch_size=64, verbose=0), 1.01, repetitions, unit="ms")
    compare(table, "graph call: one fit epoch",
            lambda: traced_model.fit(data, labels, batch_size=64, verbose=0),
            lambda: plain_model.fit(data, labels, batch_size=64, verbose=0), 1.01, repetitions, unit="ms")


def check_eager_call_time(table, repetitions):
    for shape, target in ((SEED_SHAPE, 1.02), ((1, 4), 1.10)):
        x = tf.random.uniform(shape)
        traced, plain = seed_layer(tg.TraceAwareLayer), seed_layer(keras.layers.Layer)
        traced(x), plain(x)
        compare(table, f"eager call: {shape}", functools.partial(traced, x), functools.partial(plain, x),
                target, repetitions, 50)


def check_first_result_time(table, repetitions):
    cases = [("seed layer", seed_layer, tf.random.uniform(SEED_SHAPE)),
             ("20-layer model", deep_model, tf.random.uniform((8, 16)))]
    for name, build, inputs in cases:
        compare(table, f"first result (trace): {name}",
                lambda build=build, inputs=inputs: tf.function(build(tg.TraceAwareLayer))(inputs),
                lambda build=build, inputs=inputs: tf.function(build(keras.layers.Layer))(inputs),
                1.05, repetitions, unit="ms")
        gc.collect()


def check_memory(table, events):
    tiny = tf.random.uniform((1, 4))

    class Tiny(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs

    tiny_layer = Tiny(log_eager=True)
    bound = tiny_layer.trace_log.maxlen
    # Trace allocations from the start, so the events that replace the first ones are
    # compared with traced events, not with memory tracemalloc never saw.
    tracemalloc.start()
    for _ in range(2 * bound):
        tiny_layer(tiny)
    gc.collect()
    before, _ = tracemalloc.get_traced_memory()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(events):
        tiny_layer(tiny)
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    growth_kib = (after - before) / 1024
    ok = len(tiny_layer.trace_log) == bound and growth_kib < 64
    table.add(f"memory: {events} events past the bound", f"{growth_kib:.0f} KiB", "flat", ok,
              f"log holds {len(tiny_layer.trace_log)}, dropped {tiny_layer.trace_log.dropped}; "
              f"peak RSS +{(rss_after - rss_before) / 1024:.1f} MiB")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="graph identity only (for CI)")
    parser.add_argument("--repetitions", type=int, default=31, help="interleaved repetitions per timing")
    arguments = parser.parse_args(argv)
    print(f"traceguard {tg.__version__} on {_compat.describe_versions()}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs")
    table = Table()
    check_graph_identity(table)
    if not arguments.quick:
        check_graph_call_time(table, arguments.repetitions)
        check_eager_call_time(table, arguments.repetitions)
        check_first_result_time(table, max(7, arguments.repetitions // 3))
        check_memory(table, 100_000)
    table.print()
    return 0 if table.passed else 1


if __name__ == "__main__":
    sys.exit(main())
