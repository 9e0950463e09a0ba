"""The claims of docs/why-two-traces.md, one test each, on the installed versions.

The document names the test beside each claim; when TensorFlow or Keras changes a
behaviour, the test fails and the document has to be updated with it.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
from conftest import kinds

from traceguard._core.specs import format_signature

pytestmark = pytest.mark.backend("tensorflow")


# --- The short answer ------------------------------------------------------------------
def test_seed_runs_the_body_three_times_on_keras_3_and_twice_on_keras_2(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    graph_layer(seed_input)
    assert kinds(layer) == keras_flavor.pick(["symbolic", "trace", "variable_retrace"],
                                             ["trace", "variable_retrace"])
    assert graph_layer.experimental_get_tracing_count() == 2


def test_a_plain_tf_function_that_creates_a_variable_traces_twice():
    runs, holder = [], {}

    @tf.function
    def step(x):
        runs.append("body")
        if "v" not in holder:
            holder["v"] = tf.Variable(2.0)
        return x * holder["v"]

    step(tf.ones(()))
    step(tf.ones(()))
    assert runs == ["body", "body"]
    assert step.experimental_get_tracing_count() == 2


def test_a_plain_tf_function_using_an_existing_variable_traces_once():
    runs, v = [], tf.Variable(2.0)

    @tf.function
    def step(x):
        runs.append("body")
        return x * v

    step(tf.ones(()))
    step(tf.ones(()))
    assert runs == ["body"]


def test_variables_created_after_the_first_trace_are_refused():
    @tf.function
    def step(x):
        return x * tf.Variable(2.0)  # A new variable at every trace.

    with pytest.raises(ValueError, match="tf.function only supports singleton tf.Variables created on"):
        step(tf.ones(()))


def test_only_the_second_graph_runs_the_first_lends_its_initializers():
    executed, holder = [], {}

    def count_execution():
        executed.append(1)
        return np.int32(0)

    @tf.function
    def step(x):
        if "v" not in holder:
            holder["v"] = tf.Variable(2.0)
        tf.py_function(count_execution, [], tf.int32)
        return x * holder["v"]

    assert step(tf.ones(())).numpy() == 2.0
    assert step.experimental_get_tracing_count() == 2
    assert executed == [1]  # Two graphs were built; the ops ran once.


def test_second_call_with_the_same_signature_runs_no_body(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    runs = len(layer.trace_log)
    for _ in range(3):
        graph_layer(seed_input)
    assert len(layer.trace_log) == runs


# --- Keras 3's symbolic build pass --------------------------------------------------------
def test_keras3_symbolic_pass_runs_inside_the_first_trace_and_creates_the_weights(keras_flavor, seed_input):
    if not keras_flavor.is_keras_3:
        pytest.skip("Keras 2 has no symbolic build pass")
    layer = keras_flavor.SeedLayer()
    tf.function(layer)(seed_input)
    symbolic = layer.trace_log[0]
    assert symbolic.kind.value == "symbolic" and symbolic.function == "function"
    assert symbolic.created_variables == (layer.dense.kernel.path, layer.dense.bias.path)
    trace = layer.trace_log[1]  # The TensorFlow variables are made in the first trace.
    assert trace.kind.value == "trace" and trace.created_variables == symbolic.created_variables


def test_keras2_builds_the_dense_in_the_first_trace_without_a_symbolic_pass(keras_flavor, seed_input):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 3 builds by a symbolic pass")
    layer = keras_flavor.SeedLayer()
    tf.function(layer)(seed_input)
    trace = layer.trace_log[0]
    assert trace.kind.value == "trace" and len(trace.created_variables) == 2


def test_functional_construction_runs_the_body_symbolically(keras_flavor):
    keras = keras_flavor.keras
    layer = keras_flavor.SeedLayer()
    inputs = keras.Input((28, 28))
    keras.Model(inputs, layer(inputs))
    assert kinds(layer) == keras_flavor.pick(["symbolic", "symbolic"], ["symbolic"])


# --- _set_save_spec and saving ----------------------------------------------------------------
def test_set_save_spec_records_specs_and_runs_no_body(keras_flavor, seed_input):
    calls = []

    class Spied(keras_flavor.SeedLayer):
        def _set_save_spec(self, *args, **kwargs):
            before = len(self.trace_log)
            super()._set_save_spec(*args, **kwargs)
            calls.append(len(self.trace_log) - before)

    layer = Spied()
    tf.function(layer)(seed_input)
    # Keras 2 calls it once, at the end of the first `__call__`; Keras 3 never calls it.
    assert calls == keras_flavor.pick([], [0])
    assert kinds(layer)[-2:] == ["trace", "variable_retrace"]
    if not keras_flavor.is_keras_3:
        assert layer._get_save_spec() == tf.TensorSpec([None, 28, 28], tf.float32)


@pytest.mark.parametrize("takes_training", [False, True], ids=["call(inputs)", "call(inputs, training)"])
def test_keras2_saved_model_traces_call_at_save_time(keras_flavor, tmp_path, takes_training):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 3 saves SavedModels with model.export(), tested below")

    class WithTraining(keras_flavor.SeedLayer):
        def call(self, inputs, training=None):
            return self.dense(inputs)

    keras = keras_flavor.keras
    layer = (WithTraining if takes_training else keras_flavor.SeedLayer)(name="seed")
    inputs = keras.Input((28, 28))
    model = keras.Model(inputs, layer(inputs))
    model(np.zeros((2, 28, 28)))  # Sets the save spec; the traces come at save time.
    layer.trace_log.clear()
    model.save(str(tmp_path / "saved"), save_format="tf")
    layer_traces = 4 if takes_training else 2
    # Keras 2.12 also saves the model's own call functions, which run the layer twice more.
    model_traces = 2 if keras_flavor.version < (2, 13) else 0
    assert kinds(layer) == ["save"] * (1 + layer_traces + model_traces)
    functions = [e.function for e in layer.trace_log]
    assert functions[0] == "_wrapped_model"
    assert collections.Counter(functions[1:]) == collections.Counter(
        {"seed_layer_call_and_return_conditional_losses": layer_traces,
         f"{model.name}_layer_call_and_return_conditional_losses": model_traces})
    if takes_training:
        trainings = collections.Counter(str(e.signature["training"]) for e in layer.trace_log)
        assert trainings == {"False": 1 + (layer_traces + model_traces) // 2,
                             "True": (layer_traces + model_traces) // 2}


def test_keras3_export_traces_and_keras_file_does_not(keras_flavor, tmp_path):
    if not keras_flavor.is_keras_3:
        pytest.skip("Keras 2's SavedModel path is model.save(save_format='tf'), tested above")
    keras = keras_flavor.keras
    layer = keras_flavor.SeedLayer()
    inputs = keras.Input((28, 28))
    model = keras.Model(inputs, layer(inputs))
    layer.trace_log.clear()
    model.save(str(tmp_path / "model.keras"))
    assert kinds(layer) == []
    model.export(str(tmp_path / "exported"), verbose=False)
    assert kinds(layer) == ["save", "save", "save"]


# --- How to avoid each run ----------------------------------------------------------------
def test_calling_the_layer_once_first_leaves_one_trace(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input[:1])
    layer.trace_log.clear()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    assert kinds(layer) == ["trace"]


def test_build_method_alone_skips_only_the_symbolic_pass(keras_flavor, seed_input):
    class Built(keras_flavor.SeedLayer):
        def build(self, input_shape):
            self.dense.build(input_shape)
            super().build(input_shape)  # Keras 2 marks the layer built here.

    layer = Built()
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace", "variable_retrace"]


def test_build_called_before_tf_function_leaves_one_trace(keras_flavor, seed_input):
    class Built(keras_flavor.SeedLayer):
        def build(self, input_shape):
            self.dense.build(input_shape)
            super().build(input_shape)  # Keras 2 marks the layer built here.

    layer = Built()
    layer.build(seed_input.shape)
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace"]


def test_weights_created_in_init_leave_one_trace(keras_flavor, seed_input):
    class Eager(keras_flavor.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.kernel = self.add_weight(name="kernel", shape=(28, 32))

        def call(self, inputs):
            return inputs @ self.kernel

    layer = Eager()
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace"]


def test_input_signature_does_not_remove_the_variable_retrace(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    graph_layer = tf.function(layer, input_signature=[tf.TensorSpec([None, 28, 28])])
    graph_layer(seed_input)
    assert kinds(layer)[-2:] == ["trace", "variable_retrace"]


def test_input_signature_with_a_none_batch_traces_every_batch_size_once(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input[:1])
    layer.trace_log.clear()
    graph_layer = tf.function(layer, input_signature=[tf.TensorSpec([None, 28, 28])])
    for batch in (60, 32, 7):
        graph_layer(seed_input[:batch])
    assert kinds(layer) == ["trace"]
    assert format_signature(layer.trace_log[0].signature) == {"inputs": "float32[None,28,28]"}


def test_without_input_signature_each_batch_size_is_a_retrace(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input[:1])
    layer.trace_log.clear()
    graph_layer = tf.function(layer)
    for batch in (60, 32):
        graph_layer(seed_input[:batch])
    assert kinds(layer) == ["trace", "retrace"]


# --- The document itself ------------------------------------------------------------------------
def test_every_test_the_document_names_exists():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    text = (root / "docs" / "why-two-traces.md").read_text()
    named = set(re.findall(r"`(?:tests/((?:\w+/)*test_\w+)\.py::)?(test_\w+)`", text))
    assert len(named) >= 15
    for module, name in named:
        source = (root / "tests" / f"{module or 'stories/test_why_two_traces'}.py").read_text()
        assert f"def {name}(" in source, name
