"""`python -m traceguard demo`: the "why does tf.function trace my layer twice?" layer, explained.

Then the layer's `print`, routed by `side_effects`: once per input signature,
and at every graph execution.
"""

from __future__ import annotations

import linecache
import os
from typing import TextIO

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

KERAS_VERSIONS = (2, 3)


def _flavor_and_base(keras_version: int | None) -> tuple[object, type, str]:
    """The Keras to run on, the trace-aware base class for it, and how users spell that."""
    from traceguard import _compat
    from traceguard._record.layer import TraceAwareLayer, TraceAwareMixin

    if keras_version is None:
        return _compat.DEFAULT_FLAVOR, TraceAwareLayer, "traceguard.TraceAwareLayer"
    if keras_version not in KERAS_VERSIONS:
        raise ValueError(f"`keras_version` expects one of {KERAS_VERSIONS} or None. "
                         f"Received: keras_version={keras_version!r}")
    flavor = _compat.keras2_flavor() if keras_version == 2 else _compat.keras3_flavor()
    if flavor is _compat.DEFAULT_FLAVOR:
        return flavor, TraceAwareLayer, "traceguard.TraceAwareLayer"
    if keras_version == 2:
        from traceguard import keras2

        return flavor, keras2.TraceAwareLayer, "traceguard.keras2.TraceAwareLayer"
    base = type("TraceAwareLayer", (TraceAwareMixin, flavor.layer_base), {})
    return flavor, base, "traceguard.TraceAwareMixin + keras.layers.Layer"


# The demo where no Keras imports: a step fed batches of 8, 8, then 5 rows, run as the user's code
# would be (traceguard reports its users' functions, and a function defined in its own package is
# a library's). One program per engine; each traces the step once per batch size.
PLAIN_PROGRAMS = {
    "jax": """\
import jax
import jax.numpy as jnp

@jax.jit
def step(weights, inputs):
    return jnp.tanh(inputs @ weights).sum()

weights = jnp.ones((4, 3))
for rows in (8, 8, 5):
    step(weights, jnp.ones((rows, 4)))
""",
    "tensorflow": """\
import tensorflow as tf

@tf.function
def step(weights, inputs):
    return tf.reduce_sum(tf.tanh(inputs @ weights))

weights = tf.ones((4, 3))
for rows in (8, 8, 5):
    step(weights, tf.ones((rows, 4)))
""",
}
PLAIN_DEMO_FILE = "traceguard_demo.py"


def run_plain_demo(out: TextIO) -> None:
    """Runs the engine's `PLAIN_PROGRAMS` under `watch()`, and prints the program and its report."""
    from traceguard import _compat
    from traceguard._compat._backend import describe_engine
    from traceguard._diagnosis.watch import watch  # It logs why Keras is not recorded, if installed.

    def say(text: str = "") -> None:
        print(text, file=out)

    say(f"traceguard demo on {describe_engine()}, without Keras: plain {_compat.TRACER}")
    say()
    say(f"A step fed batches of 8, 8, then 5 rows ({PLAIN_DEMO_FILE}):")
    say()
    program = PLAIN_PROGRAMS[_compat.BACKEND]
    for line in program.splitlines():
        say(f"    {line}".rstrip())
    say()
    # Its source where `inspect` looks for it (AutoGraph converts `step` from it), as IPython does.
    linecache.cache[PLAIN_DEMO_FILE] = (len(program), None, program.splitlines(True), PLAIN_DEMO_FILE)
    with watch() as report:
        exec(compile(program, PLAIN_DEMO_FILE, "exec"), {"__name__": "__main__"})  # noqa: S102
    report.title = f"run {PLAIN_DEMO_FILE}"
    say(f"{_compat.TRACER} traced `step` once per batch size; the second call of 8 rows hit its cache:")
    say()
    say(report.summary())


def run_demo(out: TextIO, keras_version: int | None = None) -> None:
    """Runs the seed question's layer, prints its trace log, shows the fix, then routes its print.

    Args:
        out: Where the text goes.
        keras_version: `2` (tf_keras, or `tf.keras` on TensorFlow <= 2.15), `3`,
            or None for the Keras `tf.keras` is. Defaults to `None`.

    Raises:
        ImportError: When the Keras asked for is not installed, naming what to install.
    """
    from traceguard import _compat

    if _compat.DEFAULT_FLAVOR is None and keras_version is None:
        return run_plain_demo(out)  # The installed stack has no Keras: its engine alone.
    if _compat.IS_TORCH:
        raise ImportError("The demo runs on TensorFlow or JAX; on torch (KERAS_BACKEND=torch), record "
                          "your own script instead: `traceguard run script.py`.")
    if _compat.IS_JAX and keras_version != 2:
        from traceguard._demo_jax import run_jax_demo

        _compat.keras3_flavor()  # Without Keras, `--keras 3` fails saying why.
        return run_jax_demo(out)
    import tensorflow as tf

    from traceguard._side_effects.side_effects import side_effects

    flavor, base, base_name = _flavor_and_base(keras_version)
    keras = flavor.keras

    class EagerLayer(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            print("  print() in call: tracing!", file=out)
            return self.dense(inputs)

    class PrintsOnce(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @side_effects(print="once")
        def call(self, inputs):
            print("  print() in call: tracing for", inputs.shape, file=out)
            return self.dense(inputs)

    class PrintsEachStep(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @side_effects(print="tf.print")
        def call(self, inputs):
            print("  print() in call: a batch of", tf.shape(inputs)[0], file=out)
            return self.dense(inputs)

    def say(text: str = "") -> None:
        print(text, file=out)
        out.flush()  # tf.print writes to the process's stdout directly: keep the order.

    say(f"traceguard demo on TensorFlow {tf.__version__} with {flavor.describe()} ({flavor.name})")
    say()
    say(f"1. The question's layer, subclassing {base_name}:")
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
    say("   layer = EagerLayer(); layer(x)   # eagerly: builds the layer and its Dense")
    built = EagerLayer()
    built(x)
    say(f"   -> {built.trace_log.count('symbolic')} symbolic run, {built.trace_log.eager_calls} eager run.")
    built.trace_log.clear()
    say("   graph_layer = tf.function(layer); graph_layer(x); graph_layer(x)")
    graph_built = tf.function(built)
    graph_built(x)
    graph_built(x)
    say(f"   -> {len(built.trace_log)} run under tf.function; tracing count "
        f"{graph_built.experimental_get_tracing_count()}.")
    say()
    say(built.trace_log.summary())
    say()
    say("3. The same print, routed by @traceguard.side_effects(print=\"once\"):")
    say("   graph_layer(x); graph_layer(x); graph_layer(x[:32])")
    once = PrintsOnce()
    graph_once = tf.function(once)
    graph_once(x)
    graph_once(x)
    graph_once(x[:32])
    say(f"   -> printed once per input signature, while call's body ran {len(once.trace_log)} times: "
        f"{', '.join(event.kind.value for event in once.trace_log)}.")
    say()
    say("4. With print=\"tf.print\", print runs with the graph, at every call, with tensor values:")
    say("   graph_layer(x); graph_layer(x); graph_layer(x[:32])")
    each_step = PrintsEachStep()
    graph_each_step = tf.function(each_step)
    for batch in (x, x, x[:32]):
        graph_each_step(batch)
    say(f"   -> printed at each of the 3 calls (call's body ran {len(each_step.trace_log)} times, "
        "to build the graphs).")
