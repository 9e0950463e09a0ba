"""`python -m traceguard demo`: the "why does tf.function trace my layer twice?" layer, explained."""

from __future__ import annotations

import os
from typing import TextIO

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def run_demo(out: TextIO) -> None:
    """Runs the seed question's layer, prints its trace log, then shows the fix."""
    import tensorflow as tf

    from traceguard import _compat
    from traceguard._layer import TraceAwareLayer

    keras = _compat.keras

    class EagerLayer(TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            print("  print() in call: tracing!", file=out)
            return self.dense(inputs)

    def say(text: str = "") -> None:
        print(text, file=out)

    say(f"traceguard demo on {_compat.describe_versions()}")
    say()
    say("1. The question's layer, subclassing traceguard.TraceAwareLayer:")
    say("   graph_layer = tf.function(EagerLayer()); graph_layer(x); graph_layer(x)")
    x = tf.random.uniform([60, 28, 28])
    layer = EagerLayer()
    graph_layer = tf.function(layer)
    graph_layer(x)
    graph_layer(x)
    say(f"   -> call's body ran {len(layer.trace_log)} times; tf.function's tracing count is "
        f"{graph_layer.experimental_get_tracing_count()}; the second call ran the graph only.")
    say()
    say(layer.trace_log.summary())
    say()
    say("2. The fix: create the variables before wrapping the layer, by calling it once:")
    say("   layer = EagerLayer(); layer(x)   # eagerly: a symbolic pass, then the eager run")
    built = EagerLayer()
    built(x)
    say(f"   -> {len(built.trace_log)} symbolic run, {built.trace_log.eager_calls} eager run.")
    built.trace_log.clear()
    say("   graph_layer = tf.function(layer); graph_layer(x); graph_layer(x)")
    graph_built = tf.function(built)
    graph_built(x)
    graph_built(x)
    say(f"   -> {len(built.trace_log)} run under tf.function; tracing count "
        f"{graph_built.experimental_get_tracing_count()}.")
    say()
    say(built.trace_log.summary())
