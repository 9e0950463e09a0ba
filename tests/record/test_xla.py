"""XLA: models and functions compiled with jit_compile=True work with trace-aware layers,
with every `side_effects` print mode too."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras, kinds
from conftest import output_lines as lines
from helpers import texts

import traceguard as tg
from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")


def seeded():
    # Seeded initializers make the traced and plain models match weight for weight without
    # `keras.utils.set_random_seed`: on Keras 2.12-2.15 that leaves a process-wide generator
    # whose `randint(1, 1e9)` Python 3.10+ deprecates, for every later test.
    return keras.initializers.GlorotUniform(seed=0)


def relu_dense_class(base, print_mode=None):
    """The same layer on `base`, so the traced and plain models match weight for weight.

    With `print_mode`, its `call` prints under `side_effects(print=print_mode)`.
    """
    decorate = tg.side_effects(print=print_mode) if print_mode else (lambda call: call)

    class ReluDense(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(8, kernel_initializer=seeded())

        @decorate
        def call(self, inputs):
            if print_mode:
                print("running call")
            return tf.nn.relu(self.dense(inputs))

    return ReluDense


class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
    pass


def compiled_model(traced, print_mode=None):
    inputs = keras.Input((4,))
    base = tg.TraceAwareLayer if traced else keras.layers.Layer
    hidden = relu_dense_class(base, print_mode)(name="hidden")(inputs)
    outputs = (TracedDense if traced else keras.layers.Dense)(
        2, name="out", kernel_initializer=seeded())(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    return model


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.random((64, 4)).astype("float32"), rng.random((64, 2)).astype("float32")


def fit_and_predict(model, data):
    x, y = data
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return history.history["loss"], model.predict(x, batch_size=16, verbose=0)


@pytest.fixture(scope="module")
def plain_results(data):
    return fit_and_predict(compiled_model(traced=False), data)


def test_jit_compiled_model_trains_and_predicts_as_the_plain_model(data, plain_results):
    traced = compiled_model(traced=True)
    for name in ("hidden", "out"):
        traced.get_layer(name).trace_log.clear()
    loss, predictions = fit_and_predict(traced, data)
    assert loss == plain_results[0]
    np.testing.assert_array_equal(predictions, plain_results[1])
    # Keras 3 runs the layers in its jit-compiled `one_step_on_data`: one for fit, one for
    # predict. Keras 2 in `run_step`: fit traces it again once the optimizer made its slots.
    for name in ("hidden", "out"):
        events = traced.get_layer(name).trace_log
        assert [(e.kind.value, e.function) for e in events] == FIT_AND_PREDICT_RUNS
        assert all(e.error is None for e in events)


FIT_AND_PREDICT_RUNS = [("trace", "one_step_on_data")] * 2 if _compat.IS_KERAS_3 else [
    ("trace", "run_step"), ("variable_retrace", "run_step"), ("trace", "run_step")]


@pytest.mark.slow  # Five XLA compilations of fit and predict: ~20 s.
@pytest.mark.parametrize(
    "mode, printed_keras3, printed_keras2",
    [
        # XLA cannot compile tf.print: "once", with a warning.
        ("tf.print", ["running call"], ["running call"]),
        # fit and predict trace the same signature.
        ("once", ["running call"], ["running call"]),
        ("each_trace", ["[#3 trace] running call", "[#4 trace] running call"],
         ["[#2 trace] running call", "[#3 variable_retrace] running call", "[#4 trace] running call"]),
        ("log", [], []),
        ("python", ["running call"] * 2, ["running call"] * 3),
    ],
)
def test_jit_compiled_model_trains_with_each_print_mode(
        capfd, data, plain_results, mode, printed_keras3, printed_keras2):
    model = compiled_model(traced=True, print_mode=mode)
    layer = model.get_layer("hidden")
    lines(capfd)  # What building the model printed.
    if mode == "tf.print":
        with pytest.warns(UserWarning, match="cannot become tf.print here: XLA") as record:
            loss, predictions = fit_and_predict(model, data)
        assert len(record) == 1
    else:
        loss, predictions = fit_and_predict(model, data)
    assert loss == plain_results[0]
    np.testing.assert_array_equal(predictions, plain_results[1])
    assert lines(capfd) == (printed_keras3 if _compat.IS_KERAS_3 else printed_keras2)
    messages = ("running call",) if mode == "log" else ()
    runs = [(kind, messages) for kind, _ in FIT_AND_PREDICT_RUNS]
    assert [(e.kind.value, e.messages) for e in layer.trace_log][-len(runs):] == runs


def test_jit_compiled_tf_function_records_the_same_kinds_as_without_xla():
    xla_layer, plain_layer = (relu_dense_class(tg.TraceAwareLayer)() for _ in range(2))
    xla_step = tf.function(xla_layer, jit_compile=True)
    assert xla_step(tf.ones((3, 4))).shape == (3, 8)
    tf.function(plain_layer)(tf.ones((3, 4)))
    assert kinds(xla_layer) == kinds(plain_layer) == (
        ["symbolic"] * _compat.IS_KERAS_3 + ["trace", "variable_retrace"])  # Keras 2: no symbolic pass.
    xla_step(tf.ones((5, 4)))
    assert kinds(xla_layer)[-1] == "retrace"
    assert texts(xla_layer.trace_log[-1].changes) == ("inputs: dim 0 3 -> 5",)
