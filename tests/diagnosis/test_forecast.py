"""`traceguard.forecast`: each forecast, then the same call under `watch()`, agree.

Every test forecasts a real `fit` (or `evaluate`, `predict`) of a fresh model, runs it
under `watch()`, and asserts the foreseen traces (function, kind, signature) and that
`Forecast.check()` finds every one and nothing else; once per Keras importable here.
"""

import re

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEFAULT

import traceguard as tg

pytestmark = pytest.mark.backend("tensorflow")

X = np.random.default_rng(0).random((70, 4))  # float64: both Kerases cast it to float32.
Y = np.random.default_rng(1).random((70, 1)).astype("float32")
FULL = "(float32[32,4], float32[32,1])"
ANY = "(float32[None,4], float32[None,1])"
# Keras 3 warns that `fit`'s default `shuffle=True` does not shuffle a dataset.
SHUFFLE_IGNORED = pytest.mark.filterwarnings("ignore:`shuffle=True` was passed")


def make_model(keras, built=True, optimizer="sgd", metrics=None, steps_per_execution=1):
    inputs = [keras.Input((4,))] if built else []
    model = keras.Sequential([*inputs, keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=optimizer, loss="mse", metrics=metrics, steps_per_execution=steps_per_execution)
    return model


def foresee_then_run(model, *args, method="fit", **kwargs):
    """The forecast, then the call watched; asserts they agree and returns the forecast."""
    expected = tg.forecast(model, *args, method=method, **kwargs)
    with tg.watch() as watched:
        getattr(model, method)(*args, verbose=0, **kwargs)
    check = expected.check(watched)
    assert check.ok, f"{expected}\n{check}"
    assert len(check.agreed) == len(expected.traces) > 0
    return expected


def kinds(forecast):
    return [(trace.function, trace.kind, dict(trace.signature)) for trace in forecast.traces]


def training(keras_flavor, signature, creates_variables):
    """The foreseen traces of a train step, on each Keras."""
    if keras_flavor.name == "keras3":
        traces = [("multi_step_on_iterator", "trace", {"iterator": signature}),
                  ("one_step_on_data", "trace", {"data": signature})]
        variable = ("one_step_on_data", "variable_retrace", {"data": signature})
    else:
        traces = [("train_function", "trace", {"iterator": signature})]
        variable = ("train_function", "variable_retrace", {"iterator": signature})
    return traces + [variable] * creates_variables


def evaluation(keras_flavor, signature):
    if keras_flavor.name == "keras3":
        return [("multi_step_on_iterator", "trace", {"iterator": signature}),
                ("one_step_on_data", "trace", {"data": signature})]
    return [("test_function", "trace", {"iterator": signature})]


# Keras 2's SGD creates its momentum slots `m` at the first `apply_gradients`; Keras 3's
# plain SGD creates none (measured, docs/forecast.md).
def sgd_creates(keras_flavor):
    return keras_flavor.name != "keras3"


# --- fit on arrays and datasets, with and without a partial batch ---------------------------------
def test_fit_on_arrays_without_a_partial_batch_traces_with_the_batch_size(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32, epochs=2)
    assert kinds(forecast) == training(keras_flavor, FULL, sgd_creates(keras_flavor))


def test_fit_on_arrays_with_a_partial_batch_traces_once_with_no_batch_size(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X, Y, batch_size=32, epochs=2)
    assert kinds(forecast) == training(keras_flavor, ANY, sgd_creates(keras_flavor))
    assert "70 samples in batches of 32 leave a last batch of 6" in " ".join(str(forecast).split())


@SHUFFLE_IGNORED
def test_fit_on_a_dataset_follows_its_element_spec(keras_flavor):
    model = make_model(keras_flavor.keras)
    dataset = tf.data.Dataset.from_tensor_slices((X.astype("float32"), Y)).batch(32)
    forecast = foresee_then_run(model, dataset, epochs=2)
    assert kinds(forecast) == training(keras_flavor, ANY, sgd_creates(keras_flavor))


@SHUFFLE_IGNORED
def test_fit_on_a_dataset_dropping_the_remainder_keeps_the_batch_size(keras_flavor):
    model = make_model(keras_flavor.keras)
    dataset = tf.data.Dataset.from_tensor_slices((X.astype("float32"), Y)).batch(32, drop_remainder=True)
    forecast = foresee_then_run(model, dataset)
    assert kinds(forecast) == training(keras_flavor, FULL, sgd_creates(keras_flavor))


# --- variables created in the first trace -----------------------------------------------------
def test_unbuilt_model_creates_its_weights_in_the_first_trace(keras_flavor):
    model = make_model(keras_flavor.keras, built=False)
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32)
    assert kinds(forecast) == training(keras_flavor, FULL, True)
    assert forecast.traces[-1].facts["layers"].count("dense") == 2  # Both Dense layers, by name.
    assert "Before the call, build the model (an `Input`" in " ".join(str(forecast).split())


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_adam_creates_slots_in_the_first_trace_and_sgd_only_on_keras_2(keras_flavor, optimizer):
    model = make_model(keras_flavor.keras, optimizer=optimizer)
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32)
    creates = optimizer == "adam" or sgd_creates(keras_flavor)
    assert kinds(forecast) == training(keras_flavor, FULL, creates)
    if creates:
        assert forecast.traces[-1].facts["optimizer"] == ("Adam" if optimizer == "adam" else "SGD")


def test_a_built_optimizer_creates_nothing(keras_flavor):
    model = make_model(keras_flavor.keras, optimizer="adam")
    model.optimizer.build(model.trainable_variables)
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32)
    assert kinds(forecast) == training(keras_flavor, FULL, False)


def test_compiled_metrics_create_their_state_in_the_first_trace(keras_flavor):
    model = make_model(keras_flavor.keras, metrics=["mae"])
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32)
    assert kinds(forecast) == training(keras_flavor, FULL, True)
    assert forecast.traces[-1].facts["metrics"] == "compiled metrics"


# --- validation, steps_per_execution, evaluate, predict -----------------------------------------
def test_validation_data_traces_the_test_step_once(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X[:64], Y[:64], batch_size=32, epochs=2,
                                validation_data=(X[:40], Y[:40]))
    assert kinds(forecast) == (training(keras_flavor, FULL, sgd_creates(keras_flavor))
                               + evaluation(keras_flavor, ANY))


def test_validation_split_splits_the_arrays_as_keras_does(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X[:60], Y[:60], batch_size=16, validation_split=0.2)
    # 48 training samples: 3 full batches of 16; 12 validation samples: one partial batch.
    full = "(float32[16,4], float32[16,1])"
    expected = training(keras_flavor, full, sgd_creates(keras_flavor)) + evaluation(keras_flavor, ANY)
    assert kinds(forecast) == expected


def test_validation_freq_beyond_the_epochs_traces_no_test_step(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X, Y, batch_size=32, epochs=1, validation_data=(X, Y),
                                validation_freq=2)
    assert kinds(forecast) == training(keras_flavor, ANY, sgd_creates(keras_flavor))


def test_steps_per_execution_runs_every_execution_in_one_trace(keras_flavor):
    model = make_model(keras_flavor.keras, steps_per_execution=2)
    forecast = foresee_then_run(model, X, Y, batch_size=32)
    assert kinds(forecast) == training(keras_flavor, ANY, sgd_creates(keras_flavor))


def test_evaluate_with_metrics_traces_the_test_step_and_its_metric_state(keras_flavor):
    model = make_model(keras_flavor.keras, metrics=["mae"])
    forecast = foresee_then_run(model, X, Y, batch_size=32, method="evaluate")
    expected = evaluation(keras_flavor, ANY)
    assert kinds(forecast) == expected + [(*expected[-1][:1], "variable_retrace", expected[-1][2])]


def test_predict_retraces_for_the_last_batch_on_keras_3_only(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = foresee_then_run(model, X, batch_size=32, method="predict")
    if keras_flavor.name == "keras3":
        assert kinds(forecast) == [
            ("one_step_on_data_distributed", "trace", {"data": "[float32[32,4]]"}),
            ("one_step_on_data_distributed", "retrace", {"data": "[float32[6,4]]"})]
        assert "Pass a `batch_size` that divides the number of samples" in " ".join(str(forecast).split())
    else:
        assert kinds(forecast) == [("predict_function", "trace", {"iterator": "float32[None,4]"})]


def test_sample_weights_and_dict_inputs_are_part_of_the_signature(keras_flavor):
    keras = keras_flavor.keras
    model = make_model(keras)
    weights = np.ones(70, dtype="float32")
    forecast = foresee_then_run(model, X, Y, sample_weight=weights, batch_size=35)
    assert kinds(forecast)[0][2] == {"iterator": "(float32[35,4], float32[35,1], float32[35])"}
    a, b = keras.Input((4,), name="a"), keras.Input((2,), name="b")
    model = keras.Model({"a": a, "b": b}, keras.layers.Dense(1)(keras.layers.Concatenate()([a, b])))
    model.compile(optimizer="sgd", loss="mse")
    forecast = foresee_then_run(model, {"a": X, "b": X[:, :2]}, Y, batch_size=35)
    assert "{'a': float32[35,4], 'b': float32[35,2]}" in forecast.traces[0].signature["iterator"]


def test_a_model_run_eagerly_is_foreseen_to_trace_nothing(keras_flavor):
    model = make_model(keras_flavor.keras)
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    forecast = tg.forecast(model, X, Y)
    assert forecast.foreseeable and forecast.traces == ()
    with tg.watch() as watched:
        model.fit(X, Y, verbose=0)
    assert forecast.check(watched).ok
    assert "no traces (the model runs its steps eagerly)" in str(forecast)


# --- what a forecast does not foresee -----------------------------------------------------------
def test_a_custom_train_step_is_outside_the_forecast(keras_flavor):
    keras = keras_flavor.keras

    class Custom(keras.Sequential):
        def train_step(self, data):
            return super().train_step(data)

    model = Custom([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    forecast = tg.forecast(model, X, Y)
    assert not forecast.foreseeable and forecast.traces == ()
    assert [item.code.value for item in forecast.outside] == ["custom_step"]
    assert "the model overrides `train_step`" in str(forecast)
    with tg.watch() as watched:
        model.fit(X, Y, verbose=0)
    check = forecast.check(watched)
    assert not check.ok and "not checked" in str(check)


def test_a_model_fit_before_is_outside_the_forecast(keras_flavor):
    model = make_model(keras_flavor.keras)
    model.fit(X, Y, verbose=0)
    forecast = tg.forecast(model, X, Y)
    assert [item.code.value for item in forecast.outside] == ["existing_functions"]


def test_after_fit_predict_and_a_recompiled_fit_are_foreseen(keras_flavor):
    model = make_model(keras_flavor.keras, optimizer="adam")
    model.fit(X, Y, verbose=0)
    predict = foresee_then_run(model, X[:64], batch_size=32, method="predict")
    assert [trace.kind for trace in predict.traces] == ["trace"]
    model.compile(optimizer="adam", loss="mse")  # A new optimizer, and no step functions.
    forecast = foresee_then_run(model, X, Y, batch_size=32)
    assert kinds(forecast) == training(keras_flavor, ANY, True)


def test_a_generator_is_outside_the_forecast(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = tg.forecast(model, (batch for batch in [(X, Y)]))
    assert [item.code.value for item in forecast.outside] == ["data"]


def test_check_lists_what_was_missed_and_what_was_not_foreseen(keras_flavor):
    model = make_model(keras_flavor.keras)
    forecast = tg.forecast(model, X[:64], Y[:64], batch_size=32)
    with tg.watch() as watched:
        model.fit(X, Y, batch_size=32, verbose=0)  # Not the call foreseen: a partial batch.
    check = forecast.check(watched)
    assert not check.ok
    assert {next(iter(trace.signature.values())) for trace in check.missed} == {FULL}
    assert {next(iter(trace.signature.values())) for trace in check.unforeseen} == {ANY}
    assert "the forecast did not hold" in str(check)


@pytest.mark.parametrize(("argument", "value", "accepted"), [
    ("method", "train", "one of fit, evaluate, predict"),
    ("batch_size", 0, "a positive int or None"),
    ("epochs", -1, "a non-negative int"),
    ("validation_split", 1.5, "a float in [0, 1)"),
])
def test_bad_arguments_name_the_argument_and_what_is_accepted(argument, value, accepted):
    model = make_model(DEFAULT.keras)
    expected = re.escape(f"`{argument}` to be {accepted}. Received: {argument}={value!r}")
    with pytest.raises(ValueError, match=expected.replace(r"\ Received", r".*Received")):
        tg.forecast(model, X, Y, **{argument: value})


def test_check_rejects_what_is_not_an_explanation():
    forecast = tg.forecast(make_model(DEFAULT.keras), X, Y)
    with pytest.raises(ValueError, match="expects the `traceguard.Explanation`"):
        forecast.check([])
