"""AutoGraph converts a trace-aware layer's body exactly where it converts a plain one's.

Keras 2 runs a subclassed layer's `call` through AutoGraph (`tf_convert`), so
`if tensor:` works in its body under `tf.function`; Keras 3 does not. AutoGraph
also converts a `call` that a `tf.function` wraps directly. traceguard's own code
(the wrapped `call`, `TraceAwareMixin.__call__`) must never be converted.
"""

import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import kinds

pytestmark = pytest.mark.backend("tensorflow")


@tf.autograph.experimental.do_not_convert
def converted_frames():
    """Names of the AutoGraph-converted functions on the stack, innermost first."""
    frame, names = sys._getframe(1), []
    while frame is not None:
        if "__autograph_generated_file" in frame.f_code.co_filename:
            names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names


def branching_layers(keras_flavor):
    """A plain and a trace-aware layer whose body branches on a tensor."""
    seen = []

    def call(self, inputs):
        seen.append(converted_frames())
        if tf.reduce_sum(inputs) > 0:
            return inputs * 2.0
        return inputs

    plain = type("Branching", (keras_flavor.keras.layers.Layer,), {"call": call})
    traced = type("Branching", (keras_flavor.TraceAwareLayer,), {"call": call})
    return plain, traced, seen


SCENARIOS = {
    "tf.function(layer)": lambda layer, x: tf.function(layer)(x),
    "tf.function(layer, autograph=False)": lambda layer, x: tf.function(layer, autograph=False)(x),
    "tf.function(layer.call)": lambda layer, x: tf.function(layer.call)(x),
}


def outcome(run, layer, x):
    try:
        return "ok", run(layer, x).numpy().tolist()
    except Exception as error:  # The test compares which error, if any.
        return "error", type(error).__name__


# What plain Keras does with `if tensor:` in `call`: Keras 2 converts `call` under
# tf.function unless autograph=False; Keras 3 converts only `call` wrapped directly.
EXPECTED = {
    "tf.function(layer)": {"keras3": "error", "keras2": "ok"},
    "tf.function(layer, autograph=False)": {"keras3": "error", "keras2": "error"},
    "tf.function(layer.call)": {"keras3": "ok", "keras2": "ok"},
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_tensor_branch_in_call_behaves_as_on_the_plain_layer(keras_flavor, scenario):
    plain, traced, _ = branching_layers(keras_flavor)
    x = tf.ones((2, 3))
    expected = outcome(SCENARIOS[scenario], plain(), x)
    assert outcome(SCENARIOS[scenario], traced(), x) == expected
    family = "keras3" if keras_flavor.is_keras_3 else "keras2"
    assert expected[0] == EXPECTED[scenario][family]


# The converted functions of traceguard's code, were AutoGraph to convert them.
TRACEGUARD_CONVERTED = {"tf___stop_watching", "tf___begin", "tf___finish", "tf__graph_body"}


def user_body_conversions(seen):
    """Per body run: how many converted `call`s are on the stack (1: the user's body)."""
    assert not TRACEGUARD_CONVERTED & {name for names in seen for name in names}
    return [names.count("tf__call") for names in seen]


def test_only_the_users_body_is_converted_never_traceguards_code(keras_flavor):
    _, traced, seen = branching_layers(keras_flavor)
    layer = traced()
    result = outcome(SCENARIOS["tf.function(layer)"], layer, tf.ones((2, 3)))
    # Keras 2 converts the body (`tf__call`); Keras 3 does not, so its `if` fails.
    assert result[0] == keras_flavor.pick("error", "ok")
    assert user_body_conversions(seen) == [keras_flavor.pick(0, 1)]
    assert kinds(layer) == ["trace"]
    seen.clear()
    tf.function(layer.call)(tf.ones((2, 3)))
    assert user_body_conversions(seen) == [1]


def test_keras2_functional_model_and_fit_convert_the_body(keras_flavor):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 3 never converts `call` with AutoGraph")
    keras = keras_flavor.keras
    _, traced, seen = branching_layers(keras_flavor)
    layer = traced()
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    assert kinds(layer) == ["symbolic", "trace", "variable_retrace"]
    assert user_body_conversions(seen) == [1, 1, 1]


def test_user_error_raised_under_tf_function_is_the_one_keras_raises(keras_flavor):
    def call(self, inputs):
        if inputs.shape[0] == 3:
            raise KeyError("no three")
        return inputs

    plain = type("Fails", (keras_flavor.keras.layers.Layer,), {"call": call})
    traced = type("Fails", (keras_flavor.TraceAwareLayer,), {"call": call})
    errors = []
    for layer_class in (plain, traced):
        with pytest.raises(Exception) as info:
            tf.function(layer_class())(tf.ones((3,)))
        errors.append(info.value)
    # Keras 3: a KeyError (AutoGraph converts Keras's `__call__` wrapper and re-raises
    # it as its own KeyError subclass); Keras 2 wraps it in a RuntimeError naming the layer.
    expected = keras_flavor.pick(KeyError, RuntimeError)
    assert isinstance(errors[0], expected) and isinstance(errors[1], expected)
    assert type(errors[1]).__name__ == type(errors[0]).__name__
    assert "no three" in str(errors[1])
