"""Keras 3 on JAX (`KERAS_BACKEND=jax`): the same kinds, counted exactly.

Runs only on the JAX backend (its `backend` marker, read by conftest.py), where the CI
job has no TensorFlow installed. The counts are those measured with Keras 3.15.1 and
jax 0.10.2 (/work/shared/tracing-facts.md, probes/jax_passes.py).
"""

import io
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import SeedLayer, keras, kinds
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._core.specs import format_signature

pytestmark = pytest.mark.backend("jax")


@pytest.fixture
def seed_input():
    return jnp.ones((60, 28, 28))


def jitted_stateless_call(layer):
    """`jax.jit` over `layer.stateless_call`, the way JAX users run a Keras layer."""

    @jax.jit
    def step(trainable, non_trainable, inputs):
        outputs, _ = layer.stateless_call(trainable, non_trainable, inputs)
        return outputs

    trainable = [v.value for v in layer.trainable_variables]
    non_trainable = [v.value for v in layer.non_trainable_variables]
    return lambda inputs: step(trainable, non_trainable, inputs)


def test_backend_is_jax_and_tensorflow_is_not_imported():
    assert _compat.BACKEND == "jax"
    assert "tensorflow" not in sys.modules
    assert _compat.describe_versions() == f"JAX {jax.__version__}, Keras {keras.__version__} (keras3)"


def test_eager_call_of_fresh_layer_runs_symbolic_pass_then_eager(seed_input):
    layer = SeedLayer(name="seed", log_eager=True)
    layer(seed_input)
    assert kinds(layer) == ["symbolic", "eager"]
    symbolic, eager = layer.trace_log
    # Keras numbers layer names per process (`dense_5` after other tests' Dense layers).
    inner = layer.dense.name
    assert symbolic.created_variables == (f"seed/{inner}/kernel", f"seed/{inner}/bias")
    assert symbolic.function is None
    assert eager.reason == "Ran eagerly: JAX executed `call` op by op, outside any graph."
    assert layer.trace_log.eager_calls == 1


def test_eager_calls_are_only_counted_without_log_eager(seed_input):
    layer = SeedLayer()
    layer(seed_input)
    layer(seed_input)
    assert kinds(layer) == ["symbolic"]
    assert layer.trace_log.eager_calls == 2


def test_jit_of_stateless_call_traces_once_per_shape(seed_input):
    layer = SeedLayer()
    layer(seed_input)
    step = jitted_stateless_call(layer)
    step(seed_input)
    step(seed_input)  # The same shape: jax.jit's cache, no body run.
    step(jnp.ones((30, 28, 28)))
    assert kinds(layer) == ["symbolic", "trace", "retrace"]
    _, trace, retrace = layer.trace_log
    assert (trace.function, retrace.function) == ("step", "step")
    assert format_signature(trace.signature) == {"inputs": "float32[60,28,28]"}
    assert trace.reason == ("First trace of jax.jit `step` for this signature: JAX ran the Python "
                            "body to build a jaxpr.")
    assert texts(retrace.changes) == ("inputs: dim 0 60 -> 30",)
    assert retrace.reason == ("The jax.jit `step` traced again because the signature changed: "
                              "inputs: dim 0 60 -> 30.")
    assert retrace.hint.startswith("Each new shape costs a trace: `jax.jit` compiles once per input shape.")


def test_jit_results_are_unchanged(seed_input):
    layer, plain = SeedLayer(), keras.layers.Dense(32)
    layer(seed_input)
    plain.build(seed_input.shape)
    plain.set_weights(layer.dense.get_weights())
    np.testing.assert_array_equal(jitted_stateless_call(layer)(seed_input), plain(seed_input))


def test_fit_with_partial_last_batch_traces_train_step_twice():
    inputs = keras.Input((28, 28))
    layer = SeedLayer()
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.random((70, 28, 28)), rng.random((70, 28, 32)), batch_size=32, verbose=0)
    # Two symbolic passes at construction (batch `dynamic_dimension`, shown as None), one at
    # the start of fit, then train_step for batch 32 and the last batch of 6.
    assert kinds(layer) == ["symbolic", "symbolic", "symbolic", "trace", "retrace"]
    events = list(layer.trace_log)
    assert [str(e.signature["inputs"]) for e in events] == [
        "float32[None,28,28]", "float32[None,28,28]", "float32[32,28,28]",
        "float32[32,28,28]", "float32[6,28,28]"]
    assert [e.function for e in events[3:]] == ["train_step", "train_step"]
    assert texts(events[4].changes) == ("inputs: dim 0 32 -> 6",)
    assert events[4].hint.startswith("`fit` got 70 samples in batches of 32: the last batch of 6 ")  # #18


def test_no_variable_retrace_on_jax(seed_input):
    # tf.function traces a fresh layer twice (trace, variable_retrace); JAX has no such trace,
    # and Keras creates the variables eagerly, before any jax.jit.
    layer = SeedLayer()
    layer(seed_input)
    step = jitted_stateless_call(layer)
    step(seed_input)
    assert "variable_retrace" not in kinds(layer)
    assert kinds(layer) == ["symbolic", "trace"]


def test_budget_raises_on_the_trace_past_it(seed_input):
    layer = SeedLayer(name="seed", max_traces=1, on_retrace="raise")
    layer(seed_input)
    step = jitted_stateless_call(layer)
    step(seed_input)
    with pytest.raises(tg.RetraceError) as raised:
        step(jnp.ones((30, 28, 28)))
    message = str(raised.value).splitlines()
    assert message[:3] == [
        "Layer 'seed' traced 2 times, over its budget of max_traces=1.",
        "  Event #3 (retrace in step): The jax.jit `step` traced again because the signature "
        "changed: inputs: dim 0 60 -> 30.",
        "  Changed: inputs: dim 0 60 -> 30"]
    assert kinds(layer) == ["symbolic", "trace", "retrace"]


def test_budget_warns_on_the_trace_past_it(seed_input):
    layer = SeedLayer(max_traces=1)
    layer(seed_input)  # Builds the layer; #1 is its symbolic pass.
    step = jitted_stateless_call(layer)
    step(seed_input)
    expected = r"over its budget of max_traces=1\.\n  Event #3 \(retrace in step\)"
    with pytest.warns(UserWarning, match=expected):
        step(jnp.ones((30, 28, 28)))


def test_assert_max_traces_counts_jit_traces(seed_input):
    layer = SeedLayer()
    layer(seed_input)
    step = jitted_stateless_call(layer)
    with tg.testing.assert_max_traces(layer, 1):
        step(seed_input)
    with pytest.raises(AssertionError, match="inputs: dim 0 60 -> 30"):
        with tg.testing.assert_max_traces(layer, 0):
            step(jnp.ones((30, 28, 28)))


def test_import_traceguard_does_not_import_tensorflow():
    code = ("import sys, traceguard; from traceguard import _compat; "
            "print(_compat.BACKEND, 'tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "jax"}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["jax", "False"]


def test_demo_runs_the_seed_layer_under_jax_jit():
    from traceguard._demo import run_demo

    out = io.StringIO()
    run_demo(out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"traceguard demo on JAX {jax.__version__}, Keras {keras.__version__} (keras3)"
    assert "   -> 1 symbolic run, 1 eager run." in lines
    assert ("   -> call's body ran 2 times under jax.jit, once per batch size; the second call ran "
            "the compiled function only.") in lines
    assert "TraceLog of layer 'eager_layer': 1 symbolic, 1 trace, 1 retrace (1 eager call)" in lines


def small_model(layer):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_trace_monitor_warns_of_a_partial_batch_in_a_later_fit():
    model = small_model(SeedLayer(name="seed"))
    monitor = tg.callbacks.TraceMonitor()
    data = np.ones((70, 3)), np.ones((70, 32))
    model.fit(data[0][:64], data[1][:64], batch_size=32, verbose=0, callbacks=[monitor])
    expected = (r"Layer 'seed' retraced jax\.jit `train_step` during fit call 2, epoch 1: "
                r"inputs: dim 0 32 -> 6\. Fix: `fit` got 70 samples in batches of 32: the last batch of 6")
    with pytest.warns(UserWarning, match=expected):
        model.fit(*data, batch_size=32, verbose=0, callbacks=[monitor])
    assert monitor.report.layers["seed"].counts()["retrace"] == 1


def test_watch_records_plain_layers_under_jit():
    with tg.watch() as watched:
        dense = keras.layers.Dense(4, name="plain")
        dense(jnp.ones((8, 3)))
        step = jax.jit(lambda trainable, x: dense.stateless_call(trainable, [], x)[0])
        trainable = [v.value for v in dense.trainable_variables]
        step(trainable, jnp.ones((8, 3)))
        step(trainable, jnp.ones((5, 3)))
    runs = watched.layers["plain"]
    assert list(watched.layers) == ["plain"]
    # Dense has a `build()`: no symbolic pass; its eager run is only counted.
    assert [event.kind.value for event in runs.events] == ["trace", "retrace"]
    assert [event.function for event in runs.events] == ["<lambda>", "<lambda>"]
    assert runs.eager_calls == 1


def test_keras2_module_says_keras_2_needs_tensorflow():
    with pytest.raises(ImportError, match=r"^Keras 2 runs on TensorFlow only, and Keras 3 runs on JAX "
                                          r"here\. Received: KERAS_BACKEND='jax' \(JAX "):
        import traceguard.keras2  # noqa: F401


def printing_seed_class(mode):
    class PrintingSeed(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @tg.side_effects(print=mode)
        def call(self, inputs):
            print("Tracing")
            return self.dense(inputs)

    return PrintingSeed


@pytest.mark.parametrize(
    "mode, eager_call, jit_same_batch_twice, jit_new_batch_twice",
    [
        # "tf.print" is jax.debug.print on JAX: nothing from the symbolic pass (eval_shape
        # runs nothing), then once per execution of the compiled function.
        ("tf.print", ["Tracing"], ["Tracing"] * 2, ["Tracing"] * 2),
        # The symbolic pass already printed for batch 60: the trace for it prints nothing.
        ("once", ["Tracing"] * 2, [], ["Tracing"]),
        ("each_trace", ["[#1 symbolic] Tracing", "Tracing"], ["[#2 trace] Tracing"],
         ["[#3 retrace] Tracing"]),
        ("log", [], [], []),
        ("python", ["Tracing"] * 2, ["Tracing"], ["Tracing"]),
    ],
)
def test_print_modes_across_passes_executions_and_batch_sizes(
        capsys, seed_input, mode, eager_call, jit_same_batch_twice, jit_new_batch_twice):
    def printed():
        return capsys.readouterr().out.splitlines()

    layer = printing_seed_class(mode)()
    layer(seed_input)  # The symbolic pass, then the eager run (plain Python print).
    assert printed() == eager_call
    step = jitted_stateless_call(layer)
    step(seed_input)
    step(seed_input)
    assert printed() == jit_same_batch_twice
    step(seed_input[:30])
    step(seed_input[:30])
    assert printed() == jit_new_batch_twice
    assert kinds(layer) == ["symbolic", "trace", "retrace"]
    expected_messages = ("Tracing",) if mode == "log" else ()
    assert [event.messages for event in layer.trace_log] == [expected_messages] * 3


def test_traceguard_print_prints_at_each_jit_execution(capsys):
    step = jax.jit(lambda x: (tg.print("x =", x), x + 1)[1])
    step(jnp.arange(2))
    step(jnp.arange(2))
    tg.print("eager", 1)
    assert capsys.readouterr().out.splitlines() == ["x = [0 1]", "x = [0 1]", "eager 1"]


def test_watch_records_every_jax_jit_miss_with_what_changed():
    def scale(x, k):
        return x * k

    jitted = jax.jit(scale, static_argnums=1)
    with tg.watch() as explanation:
        jitted(jnp.ones(3), 2)
        jitted(jnp.ones(3), 3)
        jitted(jnp.ones(4), 3)
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "scale"]
    assert [event.kind.value for event in runs.events] == ["trace", "retrace", "retrace"]
    assert [texts(event.changes) for event in runs.events] == [(), ("k: 2 -> 3",), ("x: dim 0 3 -> 4",)]
    # `k` is static: JAX keys it by value, and an array would break the program (#31).
    assert runs.events[1].hint.startswith("`k` is a static argument (`static_argnums`/`static_argnames`)")
    assert "`jnp.asarray(...)`" not in runs.events[1].hint
    assert runs.events[2].hint.startswith(
        "Each new shape costs a trace: `jax.jit` compiles once per input shape")
    assert str(runs.events[0].call_site).startswith(__file__ + ":")


def test_layer_run_in_a_jit_trace_links_to_it_and_names_its_change(seed_input):
    layer = SeedLayer()
    layer(seed_input)  # Built eagerly.

    def forward(variables, x, k):
        return layer.stateless_call(variables, [], x)[0] * k

    jitted = jax.jit(forward, static_argnums=2)
    variables = [v.value for v in layer.trainable_variables]
    with tg.watch() as explanation:
        jitted(variables, seed_input, 1)
        jitted(variables, seed_input, 2)
    retrace = layer.trace_log[-1]
    assert retrace.kind is tg.TraceKind.RETRACE and texts(retrace.changes) == ("k: 1 -> 2",)
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "forward"]
    assert retrace.function_trace == runs.events[-1].serial


def test_a_symbolic_run_s_fix_names_what_avoids_the_pass_that_ran_it():
    class WithBuild(tg.TraceAwareLayer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1], 3))

        def call(self, inputs):
            return keras.ops.matmul(inputs, self.w)

    class Doubled(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs * 2

    class WithoutBuild(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(3)
            self.doubled = Doubled()

        def call(self, inputs):
            return self.doubled(self.dense(inputs))

    with_build, without_build = WithBuild(), WithoutBuild()
    for layer in (with_build, without_build):
        inputs = keras.Input((4,))
        keras.Model(inputs, layer(inputs))

    def fixes(layer):
        return [(event.kind.value, event.hint.split(". ")[-1]) for event in layer.trace_log]

    # As on TensorFlow: the pass that builds a layer without `build()`, the one that infers
    # its output, and its sublayer's runs inside them, each with its own fix.
    assert fixes(with_build) == [("symbolic", "Define `compute_output_shape(input_shape)`, and Keras uses "
                                              "it instead.")]
    assert fixes(without_build) == [
        ("symbolic", "Define `build(input_shape)` to create them, and Keras calls it instead."),
        ("symbolic", "Define `compute_output_shape(input_shape)`, and Keras uses it instead.")]
    assert [event.hint.startswith("Keras ran `call` inside the symbolic pass of a layer or model")
            for event in without_build.doubled.trace_log] == [True, True]
    # The build pass made the sublayer's weights; the output pass after it made none.
    dense = (without_build.dense.kernel.path, without_build.dense.bias.path)
    assert [event.created_variables for event in without_build.trace_log] == [dense, ()]
