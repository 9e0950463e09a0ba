"""End to end: which kinds a real TensorFlow run produces, in order, on each Keras.

Every test runs once per Keras importable here (the `keras_flavor` fixture):
Keras 3, tf_keras, or the Keras 2 of TensorFlow 2.12-2.15.
"""

import numpy as np
import pytest
import tensorflow as tf
from conftest import kinds
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._core.specs import format_signature

pytestmark = pytest.mark.backend("tensorflow")


def paths(*variables):
    return tuple(_compat.variable_path(v) for v in variables)


def test_seed_under_tf_function_records_symbolic_pass_only_on_keras_3(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    expected = keras_flavor.pick(["symbolic", "trace", "variable_retrace"], ["trace", "variable_retrace"])
    assert kinds(layer) == expected
    graph_layer(seed_input)
    assert len(layer.trace_log) == len(expected)
    assert graph_layer.experimental_get_tracing_count() == 2
    assert [e.index for e in layer.trace_log] == list(range(1, len(expected) + 1))
    assert {e.function for e in layer.trace_log} == {"function"}
    *first, trace, retrace = layer.trace_log
    dense_paths = paths(layer.dense.kernel, layer.dense.bias)
    assert dense_paths[0].startswith(f"{layer.name}/dense") and dense_paths[0].endswith("/kernel")
    assert trace.created_variables == dense_paths
    assert retrace.created_variables == ()
    assert texts(retrace.changes) == () and "first trace created variables" in retrace.reason
    assert "call the layer once" in retrace.hint
    if keras_flavor.is_keras_3:
        symbolic = first[0]
        assert symbolic.created_variables == dense_paths
        assert "build(input_shape)" in symbolic.hint


def test_layer_built_first_traces_once(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input)
    symbolic = keras_flavor.pick(["symbolic"], [])
    assert kinds(layer) == symbolic
    assert layer.trace_log.eager_calls == 1
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    graph_layer(seed_input)
    assert kinds(layer) == symbolic + ["trace"]
    assert graph_layer.experimental_get_tracing_count() == 1


def test_layer_with_build_method_skips_the_symbolic_pass(keras_flavor, seed_input):
    class Built(keras_flavor.SeedLayer):
        def build(self, input_shape):
            self.dense.build(input_shape)

    layer = Built()
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace", "variable_retrace"]


def test_variables_built_by_keras_in_a_call_belong_to_that_calls_run(keras_flavor, seed_input):
    class Built(keras_flavor.SeedLayer):
        def build(self, input_shape):
            self.dense.build(input_shape)
            self.scale = self.add_weight(shape=(), name="scale")
            super().build(input_shape)

    def created(layer):
        return [(event.kind.value, event.created_variables) for event in layer.trace_log]

    def built(layer):  # In creation order.
        return paths(layer.dense.kernel, layer.dense.bias, layer.scale)

    layer = Built()
    tf.function(layer)(seed_input)
    assert created(layer) == [("trace", built(layer)), ("variable_retrace", ())]
    # Built outside a call: no run created them.
    layer = Built()
    layer.build(seed_input.shape)
    tf.function(layer)(seed_input)
    assert created(layer) == [("trace", ())]
    # Built in an eager call, which is not logged: not handed to the next trace.
    layer = Built()
    layer(seed_input)
    tf.function(layer)(seed_input)
    assert created(layer) == [("trace", ())]
    layer = Built(log_eager=True)
    layer(seed_input)
    assert created(layer) == [("eager", built(layer))]


def test_new_batch_size_is_a_retrace_naming_the_dimension(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input)
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    graph_layer(seed_input[:32])
    assert kinds(layer) == keras_flavor.pick(["symbolic"], []) + ["trace", "retrace"]
    retrace = layer.trace_log[-1]
    assert texts(retrace.changes) == ("inputs: dim 0 60 -> 32",)
    assert format_signature(retrace.signature) == {"inputs": "float32[32,28,28]"}
    assert "input_signature" in retrace.hint and "reduce_retracing=True" in retrace.hint


def test_python_and_training_arguments_changes(keras_flavor):
    class Scaled(keras_flavor.TraceAwareLayer):
        def call(self, inputs, k=1, training=None):
            return inputs * k

    layer = Scaled()
    step = tf.function(lambda x, k, training: layer(x, k=k, training=training))
    x = tf.ones((2, 3))
    step(x, 3, True)
    step(x, 4, True)
    step(x, 4, False)
    traces = layer.trace_log.filter(["trace", "retrace"])
    assert [e.kind.value for e in traces] == ["trace", "retrace", "retrace"]
    assert texts(traces[1].changes) == ("k: 3 -> 4",)
    assert "tf.constant" in traces[1].hint
    assert texts(traces[2].changes) == ("training: True -> False",)
    assert format_signature(traces[0].signature) == {"inputs": "float32[2,3]", "k": "3", "training": "True"}


def test_dtype_change_is_named(keras_flavor):
    class Identity(keras_flavor.TraceAwareLayer):
        def call(self, inputs):
            return inputs

    layer = Identity()
    step = tf.function(layer)
    step(tf.ones((2,), tf.float32))
    step(tf.ones((2,), tf.int32))
    assert texts(layer.trace_log[-1].changes) == ("inputs: dtype float32 -> int32",)
    assert "Cast" in layer.trace_log[-1].hint


def test_functional_model_construction_is_symbolic(keras_flavor):
    keras = keras_flavor.keras
    layer = keras_flavor.SeedLayer(name="seed")
    inputs = keras.Input((28, 28))
    keras.Model(inputs, layer(inputs))
    assert kinds(layer) == keras_flavor.pick(["symbolic", "symbolic"], ["symbolic"])
    assert format_signature(layer.trace_log[0].signature) == {"inputs": "float32[None,28,28]"}
    if not keras_flavor.is_keras_3:
        assert layer.trace_log[0].function == "seed_scratch_graph"


@pytest.fixture
def functional_model(keras_flavor):
    keras = keras_flavor.keras
    layer = keras_flavor.SeedLayer(name="seed")
    inputs = keras.Input((28, 28))
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer="sgd", loss="mse")
    layer.trace_log.clear()
    return model, layer


def test_fit_traces_train_step_and_partial_last_batch_retraces(keras_flavor, functional_model):
    model, layer = functional_model
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 28, 28)), rng.random((64, 28, 32)), batch_size=32, verbose=0)
    # Keras 2 creates the optimizer's slot variables in the first trace of its train
    # function, so TensorFlow traces it again; Keras 3 builds the optimizer before.
    first = keras_flavor.pick(["trace"], ["trace", "variable_retrace"])
    assert kinds(layer) == first
    step = keras_flavor.pick("one_step_on_data", "train_function")
    assert {e.function for e in layer.trace_log} == {step}
    if not keras_flavor.is_keras_3:
        assert "model.optimizer.build(" in layer.trace_log[-1].hint
    model.fit(rng.random((70, 28, 28)), rng.random((70, 28, 32)), batch_size=32, verbose=0)
    assert kinds(layer) == first + ["retrace"]
    retrace = layer.trace_log[-1]
    assert retrace.function == step
    # Both Kerases compile their step with reduce_retracing=True: TF relaxes the batch dimension.
    assert texts(retrace.changes) == ("inputs: dim 0 32 -> None",)
    # NumPy inputs have no `drop_remainder` (#18): the hint gives the numbers and the fix for arrays.
    assert retrace.hint.startswith("`fit` got 70 samples in batches of 32: the last batch of 6 ")


def test_keras2_optimizer_built_before_fit_traces_once(keras_flavor, functional_model):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 3 builds the optimizer before tracing its train step")
    model, layer = functional_model
    model.optimizer.build(model.trainable_variables)
    model.fit(np.ones((64, 28, 28)), np.ones((64, 28, 32)), batch_size=32, verbose=0)
    assert kinds(layer) == ["trace"]


def test_predict_traces_its_own_function(keras_flavor, functional_model):
    model, layer = functional_model
    model.predict(np.zeros((64, 28, 28)), batch_size=32, verbose=0)
    assert kinds(layer) == ["trace"]
    assert layer.trace_log[0].function == keras_flavor.pick("one_step_on_data_distributed",
                                                            "predict_function")


def test_export_traces_are_save(keras_flavor, functional_model, tmp_path):
    model, layer = functional_model
    # Keras 2's `export` takes no `verbose`, and prints the endpoints.
    model.export(str(tmp_path / "exported"), **({"verbose": False} if keras_flavor.is_keras_3 else {}))
    # Keras 3 traces `__call__` and `serving_default`, then `__call__` in TF's save context;
    # Keras 2 traces `__call__` in its ExportArchive, then again in TF's save context.
    assert kinds(layer) == keras_flavor.pick(["save"] * 3, ["save"] * 2)
    assert [e.function for e in layer.trace_log] == keras_flavor.pick(
        ["__call__", "serving_default", "__call__"], ["__call__", "__call__"])


def test_keras2_saved_model_traces_call_for_each_training_value(keras_flavor, functional_model, tmp_path):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 3 has no save_format='tf': its SavedModel path is model.export()")

    class WithTraining(keras_flavor.SeedLayer):
        def call(self, inputs, training=None):
            return self.dense(inputs)

    keras = keras_flavor.keras
    layer = WithTraining(name="seed")
    inputs = keras.Input((28, 28))
    model = keras.Model(inputs, layer(inputs))
    layer.trace_log.clear()
    model.save(str(tmp_path / "saved"), save_format="tf")
    # The exact runs per Keras 2 version: tests/stories/test_why_two_traces.py.
    assert set(kinds(layer)) == {"save"}
    functions = [e.function for e in layer.trace_log]
    assert functions[0] == "_wrapped_model" and str(layer.trace_log[0].signature["training"]) == "False"
    assert {f for f in functions[1:]} <= {"seed_layer_call_and_return_conditional_losses",
                                         f"{model.name}_layer_call_and_return_conditional_losses"}
    assert [str(e.signature["training"]) for e in layer.trace_log[1:3]] == ["True", "False"]
    assert "SavedModel" in layer.trace_log[0].reason


def test_keras_file_save_does_not_trace(functional_model, tmp_path):
    model, layer = functional_model
    model.save(str(tmp_path / "model.keras"))
    assert len(layer.trace_log) == 0


def test_log_eager_records_eager_runs(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(log_eager=True)
    layer(seed_input)
    layer(seed_input)
    assert kinds(layer) == keras_flavor.pick(["symbolic"], []) + ["eager", "eager"]
    eager = layer.trace_log[-1]
    assert eager.function is None and eager.reason.startswith("Ran eagerly")
    assert layer.trace_log.eager_calls == 2


def test_eager_runs_are_counted_not_logged_by_default(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    for _ in range(3):
        layer(seed_input)
    assert kinds(layer) == keras_flavor.pick(["symbolic"], [])
    assert layer.trace_log.eager_calls == 3


def test_nested_trace_aware_layers_each_log_their_own_runs(keras_flavor, seed_input):
    class Outer(keras_flavor.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = keras_flavor.SeedLayer(name="inner")

        def call(self, inputs):
            return self.inner(inputs)

    outer = Outer(name="outer")
    tf.function(outer)(seed_input)
    assert kinds(outer) == keras_flavor.pick(["symbolic", "trace", "variable_retrace"],
                                             ["trace", "variable_retrace"])
    # Keras 3: inside the outer symbolic pass the unbuilt inner layer makes its own
    # symbolic build pass, then runs on the outer pass's symbolic tensors.
    assert kinds(outer.inner) == keras_flavor.pick(
        ["symbolic", "symbolic", "trace", "variable_retrace"], ["trace", "variable_retrace"])
    dense = outer.inner.dense
    first_trace = outer.trace_log.filter("trace")[0]
    assert first_trace.created_variables == paths(dense.kernel, dense.bias)
    assert paths(dense.kernel)[0].startswith("outer/inner/dense")
    assert {e.layer for e in outer.inner.trace_log} == {"inner"}


def test_tf_function_created_in_a_loop_traces_each_new_object_and_says_so(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(max_traces=1, name="looped")
    layer(seed_input)
    with pytest.warns(UserWarning, match=r"Layer 'looped' traced [23] times, over its budget") as record:
        for _ in range(3):
            step = tf.function(lambda x: layer(x) * 2)
            step(seed_input)
    assert len(record) == 2
    # Each new tf.function object traces once (its own count is 1): a trace, not a retrace; the
    # budget counts every graph trace all the same.
    assert kinds(layer) == keras_flavor.pick(["symbolic"], []) + ["trace", "trace", "trace"]
    assert step.experimental_get_tracing_count() == 1
    retrace = layer.trace_log[-1]
    assert retrace.reason.startswith("First trace of tf.function `<lambda>` as a new tf.function object")
    assert texts(retrace.changes) == ("tf.function `<lambda>`: new object, same Python function",)
    assert "each tf.function object keeps its own traces" in retrace.reason
    assert retrace.hint == "Create the tf.function once, outside the loop or the function called per " \
                           "step, and reuse it."


def test_tf_functions_of_different_closures_are_each_a_first_trace(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input)

    def scaled_step(k):
        return tf.function(lambda x: layer(x) * k)

    scaled_step(2)(seed_input)
    scaled_step(3)(seed_input)
    assert kinds(layer) == keras_flavor.pick(["symbolic"], []) + ["trace", "trace"]


def test_keras_validation_step_is_not_taken_for_a_new_train_step(keras_flavor, functional_model):
    # Keras 3.15 builds its train and test steps from the same closure code.
    model, layer = functional_model
    x, y = np.zeros((64, 28, 28)), np.zeros((64, 28, 32))
    model.fit(x, y, batch_size=32, validation_data=(x, y), verbose=0)
    assert kinds(layer) == keras_flavor.pick(["trace", "trace"], ["trace", "variable_retrace", "trace"])
    assert [event.function for event in layer.trace_log] == keras_flavor.pick(
        ["one_step_on_data"] * 2, ["train_function", "train_function", "test_function"])


def test_mixin_records_any_layer_class_of_the_flavor(keras_flavor):
    class TracedDense(tg.TraceAwareMixin, keras_flavor.keras.layers.Dense):
        pass

    layer = TracedDense(4)
    tf.function(layer)(tf.ones((2, 3)))
    assert kinds(layer) == ["trace", "variable_retrace"]
    assert str(layer.trace_log[0].signature["inputs"]) == "float32[2,3]"


def test_layer_called_twice_in_one_trace_shares_the_trace_kind_and_counts_once(keras_flavor):
    class Double(keras_flavor.TraceAwareLayer):
        def call(self, inputs):
            return inputs * 2

    layer = Double(max_traces=2)  # A warning would fail the test: one trace counts once.
    step = tf.function(lambda a, b: tf.reduce_sum(layer(a)) + tf.reduce_sum(layer(b)))
    step(tf.ones((2,)), tf.ones((3,)))
    step(tf.ones((4,)), tf.ones((3,)))
    assert [(e.kind.value, texts(e.changes)) for e in layer.trace_log] == [
        ("trace", ()), ("trace", ()),
        # Compared with the closest earlier run, the newest on a tie.
        ("retrace", ("inputs: dim 0 3 -> 4",)), ("retrace", ()),
    ]
    assert step.experimental_get_tracing_count() == 2


def test_rnn_cell_in_a_while_loop_body_is_part_of_the_step_trace(keras_flavor):
    if not keras_flavor.is_keras_3:
        pytest.skip("Keras 2's LSTM computes its steps itself: the cell's `call` never runs")
    keras = keras_flavor.keras
    with tg.watch() as explanation:
        model = keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((8, 5, 3)), np.ones((8, 4)), verbose=0)
    cell_runs = [runs for name, runs in explanation.layers.items() if "lstm_cell" in name]
    assert len(cell_runs) == 1
    graph_runs = [event for event in cell_runs[0].events if event.kind in ("trace", "retrace")]
    step = "one_step_on_data"
    # The cell runs once before the loop and once as the loop's body, both in one trace.
    assert [event.function for event in graph_runs][:2] == [step, step]
    assert not [event for event in graph_runs if event.kind == "retrace"]
    in_loop = [event for event in graph_runs if event.reason.startswith("Part of the same trace")]
    assert in_loop and "`tf.while_loop`" in in_loop[0].reason


@pytest.mark.parametrize("optimizer, metrics", [("adam", []), ("sgd", ["mae"])])
def test_keras3_step_variable_retrace_of_built_layers_blames_optimizer_or_metrics(
        keras_flavor, optimizer, metrics):
    if not keras_flavor.is_keras_3:
        pytest.skip("Keras 2's train_function retrace has its own hint (the optimizer)")
    keras = keras_flavor.keras
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, name="d")])
    model.compile(optimizer, "mse", metrics=metrics)
    with tg.watch() as explanation:
        model.fit(np.ones((64, 8)), np.ones((64, 1)), batch_size=32, verbose=0)
    events = explanation.layers["d"].events
    assert [event.kind.value for event in events] == ["trace", "variable_retrace"]
    assert events[0].created_variables == ()
    assert events[1].hint.startswith("This layer was built already: the step's first trace created")
    assert "call the layer once" not in events[1].hint


def _symbolic_layers(base, keras):
    ops = keras.ops if hasattr(keras, "ops") else tf

    class WithBuild(base):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1], 3))

        def call(self, inputs):
            return ops.matmul(inputs, self.w)

    class WithOutputShape(WithBuild):
        def compute_output_shape(self, input_shape):
            return (*input_shape[:-1], 3)

    class Doubled(base):
        def call(self, inputs):
            return inputs * 2

    class WithoutBuild(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(3)
            self.doubled = Doubled()

        def call(self, inputs):
            return self.doubled(self.dense(inputs))

    return WithBuild, WithOutputShape, WithoutBuild


def _symbolic_hints(layer):
    return [(event.kind.value, event.hint) for event in layer.trace_log]


DEFINE_BUILD = ("Expected once per layer: it has no `build()`, so Keras ran `call` on symbolic inputs to "
                "create its weights and build its sublayers. Define `build(input_shape)` to create them, "
                "and Keras calls it instead.")
DEFINE_COMPUTE_OUTPUT_SHAPE = (
    "Expected once per call of the layer on symbolic inputs (building a functional or Sequential "
    "model): Keras ran `call` to infer the layer's output. Define `compute_output_shape(input_shape)`, "
    "and Keras uses it instead.")
ENCLOSING = ("Keras ran `call` inside the symbolic pass of a layer or model that calls this layer: what "
             "avoids that pass (a `build()` or a `compute_output_shape()` on the enclosing layer) avoids "
             "this run too.")
KERAS2 = ("Expected once per call of the layer in a functional model: Keras 2 runs every layer's `call` on "
          "symbolic inputs to infer its outputs as it builds the model, whatever the layer defines. A "
          "one-time cost; nothing to fix.")


def test_a_symbolic_run_s_fix_names_what_avoids_the_pass_that_ran_it(keras_flavor):
    keras = keras_flavor.keras
    with_build, with_output_shape, without_build = (
        cls() for cls in _symbolic_layers(keras_flavor.TraceAwareLayer, keras))
    for layer in (with_build, with_output_shape, without_build):
        inputs = keras.Input((4,))
        keras.Model(inputs, layer(inputs))
    if keras_flavor.is_keras_3:
        # Keras 3 infers the output of a layer with `build()` by running `call`, unless the
        # layer has `compute_output_shape()`; a layer without `build()` is first built by a
        # run, then its output inferred by another; its sublayers run inside both.
        assert _symbolic_hints(with_build) == [("symbolic", DEFINE_COMPUTE_OUTPUT_SHAPE)]
        assert _symbolic_hints(with_output_shape) == []
        assert _symbolic_hints(without_build) == [("symbolic", DEFINE_BUILD),
                                                  ("symbolic", DEFINE_COMPUTE_OUTPUT_SHAPE)]
        assert _symbolic_hints(without_build.doubled) == [("symbolic", ENCLOSING)] * 2
    else:  # Keras 2 runs every layer once as it builds the model, `compute_output_shape()` or not.
        for layer in (with_build, with_output_shape, without_build, without_build.doubled):
            assert _symbolic_hints(layer) == [("symbolic", KERAS2)]


def test_a_layer_without_build_traced_fresh_is_built_by_a_symbolic_run(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    tf.function(layer)(seed_input)
    expected = keras_flavor.pick([("symbolic", DEFINE_BUILD)], [])
    assert [(e.kind.value, e.hint) for e in layer.trace_log if e.kind.value == "symbolic"] == expected


def test_a_functional_models_output_pass_creates_none_of_the_build_pass_s_variables(keras_flavor):
    # Keras 3 builds a layer without `build()` by a first pass, whose variables get their
    # `tf.Variable` as that pass ends; the output pass that follows creates none of them.
    keras = keras_flavor.keras
    layer = keras_flavor.SeedLayer()
    inputs = keras.Input((4,))
    keras.Model(inputs, layer(inputs))
    dense = paths(layer.dense.kernel, layer.dense.bias)
    expected = keras_flavor.pick([("symbolic", dense), ("symbolic", ())], [("symbolic", dense)])
    assert [(event.kind.value, event.created_variables) for event in layer.trace_log] == expected
    with tg.watch() as report:  # The same for a plain layer, whose `build` traceguard never sees.
        plain = keras_flavor.PlainSeedLayer()
        inputs = keras.Input((4,))
        keras.Model(inputs, plain(inputs))
    dense = paths(plain.dense.kernel, plain.dense.bias)
    runs = {name: [event.created_variables for event in runs.events] for name, runs in report.layers.items()}
    assert runs[plain.name] == keras_flavor.pick([dense, ()], [dense])
    assert runs[plain.dense.name] == keras_flavor.pick([(), ()], [()])
