"""End to end: which kinds a real Keras 3 + TensorFlow run produces, in order."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import SeedLayer, keras, kinds

import traceguard as tg


def test_seed_under_tf_function_records_symbolic_trace_then_variable_retrace(seed_input):
    layer = SeedLayer()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    assert kinds(layer) == ["symbolic", "trace", "variable_retrace"]
    graph_layer(seed_input)
    assert len(layer.trace_log) == 3
    assert graph_layer.experimental_get_tracing_count() == 2
    symbolic, trace, retrace = layer.trace_log
    assert [e.index for e in layer.trace_log] == [1, 2, 3]
    assert {e.function for e in layer.trace_log} == {"function"}
    dense_paths = (layer.dense.kernel.path, layer.dense.bias.path)
    assert dense_paths[0].startswith(f"{layer.name}/dense") and dense_paths[0].endswith("/kernel")
    assert symbolic.created_variables == dense_paths
    assert trace.created_variables == dense_paths
    assert retrace.created_variables == ()
    assert retrace.changes == () and "first trace created variables" in retrace.reason
    assert "call the layer once" in retrace.hint
    assert "build(input_shape)" in symbolic.hint


def test_layer_built_first_traces_once(seed_input):
    layer = SeedLayer()
    layer(seed_input)
    assert kinds(layer) == ["symbolic"]
    assert layer.trace_log.eager_calls == 1
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    graph_layer(seed_input)
    assert kinds(layer) == ["symbolic", "trace"]
    assert graph_layer.experimental_get_tracing_count() == 1


def test_layer_with_build_method_skips_the_symbolic_pass(seed_input):
    class Built(SeedLayer):
        def build(self, input_shape):
            self.dense.build(input_shape)

    layer = Built()
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace", "variable_retrace"]


def test_new_batch_size_is_a_retrace_naming_the_dimension(seed_input):
    layer = SeedLayer()
    layer(seed_input)
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    graph_layer(seed_input[:32])
    assert kinds(layer) == ["symbolic", "trace", "retrace"]
    retrace = layer.trace_log[-1]
    assert retrace.changes == ("inputs: dim 0 60 -> 32",)
    assert retrace.signature == {"inputs": "float32[32,28,28]"}
    assert "input_signature" in retrace.hint and "reduce_retracing=True" in retrace.hint


def test_python_and_training_arguments_changes():
    class Scaled(tg.TraceAwareLayer):
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
    assert traces[1].changes == ("k: 3 -> 4",)
    assert "tf.constant" in traces[1].hint
    assert traces[2].changes == ("training: True -> False",)
    assert traces[0].signature == {"inputs": "float32[2,3]", "k": "3", "training": "True"}


def test_dtype_change_is_named():
    class Identity(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs

    layer = Identity()
    step = tf.function(layer)
    step(tf.ones((2,), tf.float32))
    step(tf.ones((2,), tf.int32))
    assert layer.trace_log[-1].changes == ("inputs: dtype float32 -> int32",)
    assert "Cast" in layer.trace_log[-1].hint


def test_functional_model_construction_is_symbolic():
    layer = SeedLayer()
    inputs = keras.Input((28, 28))
    keras.Model(inputs, layer(inputs))
    assert kinds(layer) == ["symbolic", "symbolic"]
    assert layer.trace_log[0].signature == {"inputs": "float32[None,28,28]"}


@pytest.fixture
def functional_model():
    layer = SeedLayer()
    inputs = keras.Input((28, 28))
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer="sgd", loss="mse")
    layer.trace_log.clear()
    return model, layer


def test_fit_traces_train_step_and_partial_last_batch_retraces(functional_model):
    model, layer = functional_model
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 28, 28)), rng.random((64, 28, 32)), batch_size=32, verbose=0)
    assert kinds(layer) == ["trace"]
    assert layer.trace_log[0].function == "one_step_on_data"
    model.fit(rng.random((70, 28, 28)), rng.random((70, 28, 32)), batch_size=32, verbose=0)
    assert kinds(layer) == ["trace", "retrace"]
    retrace = layer.trace_log[-1]
    assert retrace.function == "one_step_on_data"
    # Keras 3 compiles its step with reduce_retracing=True: TF relaxes the batch dimension.
    assert retrace.changes == ("inputs: dim 0 32 -> None",)
    assert "drop_remainder=True" in retrace.hint


def test_predict_traces_its_own_function(functional_model):
    model, layer = functional_model
    model.predict(np.zeros((64, 28, 28)), batch_size=32, verbose=0)
    assert kinds(layer) == ["trace"]
    assert layer.trace_log[0].function == "one_step_on_data_distributed"


def test_export_traces_are_save(functional_model, tmp_path):
    model, layer = functional_model
    model.export(str(tmp_path / "exported"), verbose=False)
    assert kinds(layer) == ["save", "save", "save"]
    assert [e.function for e in layer.trace_log] == ["__call__", "serving_default", "__call__"]


def test_keras_save_does_not_trace(functional_model, tmp_path):
    model, layer = functional_model
    model.save(str(tmp_path / "model.keras"))
    assert len(layer.trace_log) == 0


def test_log_eager_records_eager_runs(seed_input):
    layer = SeedLayer(log_eager=True)
    layer(seed_input)
    layer(seed_input)
    assert kinds(layer) == ["symbolic", "eager", "eager"]
    eager = layer.trace_log[-1]
    assert eager.function is None and eager.reason.startswith("Ran eagerly")
    assert layer.trace_log.eager_calls == 2


def test_eager_runs_are_counted_not_logged_by_default(seed_input):
    layer = SeedLayer()
    for _ in range(3):
        layer(seed_input)
    assert kinds(layer) == ["symbolic"]
    assert layer.trace_log.eager_calls == 3


def test_nested_trace_aware_layers_each_log_their_own_runs(seed_input):
    class Outer(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = SeedLayer(name="inner")

        def call(self, inputs):
            return self.inner(inputs)

    outer = Outer(name="outer")
    tf.function(outer)(seed_input)
    assert kinds(outer) == ["symbolic", "trace", "variable_retrace"]
    # Inside the outer symbolic pass the unbuilt inner layer makes its own symbolic
    # build pass, then runs on the outer pass's symbolic tensors: two symbolic runs.
    assert kinds(outer.inner) == ["symbolic", "symbolic", "trace", "variable_retrace"]
    dense = outer.inner.dense
    assert outer.trace_log[1].created_variables == (dense.kernel.path, dense.bias.path)
    assert dense.kernel.path.startswith("outer/inner/dense")
    assert {e.layer for e in outer.inner.trace_log} == {"inner"}


def test_tf_function_created_in_a_loop_retraces_and_says_so(seed_input):
    layer = SeedLayer(max_traces=1, name="looped")
    layer(seed_input)
    with pytest.warns(UserWarning, match=r"Layer 'looped' traced [23] times, over its budget") as record:
        for _ in range(3):
            step = tf.function(lambda x: layer(x) * 2)
            step(seed_input)
    assert len(record) == 2
    assert kinds(layer) == ["symbolic", "trace", "retrace", "retrace"]
    retrace = layer.trace_log[-1]
    assert retrace.changes == ("tf.function `<lambda>`: new object, same Python function",)
    assert "each tf.function object keeps its own traces" in retrace.reason
    assert retrace.hint == "Create the tf.function once, outside the loop or the function called per " \
                           "step, and reuse it."


def test_tf_functions_of_different_closures_are_each_a_first_trace(seed_input):
    layer = SeedLayer()
    layer(seed_input)

    def scaled_step(k):
        return tf.function(lambda x: layer(x) * k)

    scaled_step(2)(seed_input)
    scaled_step(3)(seed_input)
    assert kinds(layer) == ["symbolic", "trace", "trace"]


def test_keras_validation_step_is_not_taken_for_a_new_train_step(functional_model):
    # Keras 3.15 builds its train and test steps from the same closure code.
    model, layer = functional_model
    x, y = np.zeros((64, 28, 28)), np.zeros((64, 28, 32))
    model.fit(x, y, batch_size=32, validation_data=(x, y), verbose=0)
    assert kinds(layer) == ["trace", "trace"]
    assert {event.function for event in layer.trace_log} == {"one_step_on_data"}
def test_layer_called_twice_in_one_trace_shares_the_trace_kind_and_counts_once():
    class Double(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs * 2

    layer = Double(max_traces=2)  # A warning would fail the test: one trace counts once.
    step = tf.function(lambda a, b: tf.reduce_sum(layer(a)) + tf.reduce_sum(layer(b)))
    step(tf.ones((2,)), tf.ones((3,)))
    step(tf.ones((4,)), tf.ones((3,)))
    assert [(e.kind.value, e.changes) for e in layer.trace_log] == [
        ("trace", ()), ("trace", ()),
        # Compared with the closest earlier run, the newest on a tie.
        ("retrace", ("inputs: dim 0 3 -> 4",)), ("retrace", ()),
    ]
    assert step.experimental_get_tracing_count() == 2
