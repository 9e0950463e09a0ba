"""The Keras internals `traceguard.forecast` reads (`_compat/_keras_training.py`), on each loaded Keras.

When one of these fails after an upgrade, `_keras_training.model_state` needs a new branch.
"""

import numpy as np
import pytest

from traceguard._compat import _keras_training
from traceguard._compat._flavors import flavor_of_class

pytestmark = pytest.mark.backend("tensorflow")


def compiled(keras, optimizer="adam", metrics=("mae",), built=True):
    inputs = [keras.Input((4,))] if built else []
    model = keras.Sequential([*inputs, keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse", metrics=list(metrics))
    return model


def test_the_attributes_read_exist(keras_flavor):
    model = compiled(keras_flavor.keras)
    assert hasattr(model, "_flatten_layers")
    if keras_flavor.name == "keras3":
        for name in ("_compile_metrics", "_compile_loss", "steps_per_execution", "compiled"):
            assert hasattr(model, name), name
        assert model._compile_metrics.built is False and model._compile_loss.built is False
        for name in ("built", "use_ema", "gradient_accumulation_steps"):
            assert hasattr(model.optimizer, name), name
        assert keras_flavor.keras.optimizers.SGD().momentum == 0
    else:
        for name in ("_steps_per_execution", "compiled_metrics", "_is_compiled", "_distribution_strategy"):
            assert hasattr(model, name), name
        assert model.compiled_metrics.built is False and model.compiled_metrics._user_metrics == ["mae"]
        # tf_keras reads it the same way (optimizer.py `getattr(self, "_built", False)`).
        assert getattr(model.optimizer, "_built", False) is False


def test_model_state_reads_a_fresh_model(keras_flavor):
    state = _keras_training.model_state(compiled(keras_flavor.keras, built=False))
    assert state.flavor == ("keras3" if keras_flavor.name == "keras3" else "keras2")
    assert state.compiled and state.unbuilt_metrics and state.optimizer == "Adam"
    assert state.optimizer_variables is True
    assert len(state.unbuilt_layers) == 2  # The Sequential and its Dense.
    assert (state.steps_per_execution, state.run_eagerly, state.custom_steps, state.existing_functions,
            state.distributed, state.floatx) == (1, False, (), (), False, "float32")


def test_model_state_sees_what_fit_built(keras_flavor):
    model = compiled(keras_flavor.keras)
    model.fit(np.ones((4, 4)), np.ones((4, 2)), verbose=0)
    state = _keras_training.model_state(model)
    assert state.optimizer_variables is False and not state.unbuilt_metrics and not state.unbuilt_layers
    assert "train_function" in state.existing_functions
    if keras_flavor.name != "keras3":
        assert model.optimizer._built is True


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_creates_slots_on_keras_2_always_and_on_keras_3_with_momentum(keras_flavor, momentum):
    model = compiled(keras_flavor.keras, optimizer=keras_flavor.keras.optimizers.SGD(momentum=momentum))
    expected = keras_flavor.name != "keras3" or momentum > 0
    assert _keras_training.model_state(model).optimizer_variables is expected


def test_a_legacy_keras_2_optimizer_is_unknown(keras_flavor):
    legacy = getattr(keras_flavor.keras.optimizers, "legacy", None)
    if keras_flavor.name == "keras3" or legacy is None:
        pytest.skip("Keras 2's legacy optimizers only")
    model = compiled(keras_flavor.keras, optimizer=legacy.SGD())
    assert _keras_training.model_state(model).optimizer_variables is None


def test_model_state_rejects_what_is_not_a_keras_model():
    with pytest.raises(ValueError, match="expected a Keras model. Received: list"):
        _keras_training.model_state([])


def test_the_base_model_defines_the_step_methods(keras_flavor):
    base = keras_flavor.keras.Model
    assert flavor_of_class(base) is not None
    for method in _keras_training.STEP_METHODS.values():
        assert callable(getattr(base, method))


def test_keras_3_makes_the_step_functions_forecasts_name(keras_flavor):
    model = compiled(keras_flavor.keras)
    state = _keras_training.model_state(model)
    assert state.known_steps and state.version[0].isdigit()
    if keras_flavor.name == "keras3":
        names = _keras_training._nested_function_names(type(model)._make_function)
        assert {"one_step_on_data", "multi_step_on_iterator"} <= names
