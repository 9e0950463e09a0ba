"""traceguard.callbacks.TraceMonitor on real fit/evaluate/predict calls."""

import logging
import warnings

import numpy as np
import pytest
from conftest import DEFAULT, keras
from test_explanation import FakeLayer, event

import traceguard as tg
from traceguard import _recorder
from traceguard._events import TraceKind


class Projection(tg.TraceAwareLayer):
    """examples/fit_partial_batch.py's layer: it has `build()`, so no symbolic run in fit."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, inputs, training=None):
        return inputs @ self.kernel


@pytest.fixture
def model():
    inputs = keras.Input((8,))
    model = keras.Model(inputs, Projection(4, name="projection")(inputs))
    model.compile(optimizer="sgd", loss="mse")
    return model


def data(samples, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((samples, 8)), rng.random((samples, 4))


def kinds_of(runs):
    return [e.kind.value for e in runs.events]


def test_partial_last_batch_of_a_later_fit_warns_and_shows_in_the_report(model, caplog):
    caplog.set_level(logging.INFO, logger="traceguard")
    monitor = tg.callbacks.TraceMonitor()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # The first fit traces once and does not warn.
        model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
    # Keras 2 creates the optimizer's variables in its first trace of `train_function`.
    first = DEFAULT.pick(["trace"], ["trace", "variable_retrace"])
    assert kinds_of(monitor.report.layers["projection"]) == first
    step = DEFAULT.pick("one_step_on_data", "train_function")
    expected = (rf"Layer 'projection' retraced tf.function `{step}` during fit call 2, "
                r"epoch 1: inputs: dim 0 32 -> None. Fix: A partial last batch has a new shape")
    with pytest.warns(UserWarning, match=expected) as record:
        model.fit(*data(70), batch_size=32, verbose=0, callbacks=[monitor])
    assert len(record) == 1 and record[0].filename == __file__
    runs = monitor.report.layers["projection"]
    assert kinds_of(runs) == first + ["retrace"]
    assert runs.events[-1].changes == ("inputs: dim 0 32 -> None",)
    assert "drop_remainder=True" in runs.events[-1].hint
    tables = [r.getMessage() for r in caplog.records if r.name == "traceguard" and r.levelno == logging.INFO]
    assert [t.splitlines()[0] for t in tables] == ["TraceMonitor: layer body runs after fit (call 1):",
                                                  "TraceMonitor: layer body runs after fit (call 2):"]
    variable_retraces = DEFAULT.pick("-", "1")
    assert tables[1].splitlines()[2].split() == [
        "projection", "Projection", "-", "1", variable_retraces, "1", "-", "-"]
    assert _recorder._observers == ()


def test_under_watch_one_warning_names_every_plain_layer_of_the_retraced_step():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, name="dense")], name="seq")
    model.compile(optimizer="sgd", loss="mse")
    monitor = tg.callbacks.TraceMonitor()
    with tg.watch():
        model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
        with pytest.warns(UserWarning) as record:
            model.fit(*data(70), batch_size=32, verbose=0, callbacks=[monitor])
    [warning] = record
    layers = list(monitor.report.layers)
    if DEFAULT.is_keras_3:  # Keras 3's Sequential runs an inner Functional.
        outer, inner, dense = layers
        assert inner.startswith("functional")
    else:
        outer, dense = layers
    assert (outer, dense) == ("seq", "dense")
    names = ", ".join(f"'{name}'" for name in layers)
    step = DEFAULT.pick("one_step_on_data", "train_function")
    assert str(warning.message).startswith(
        f"Layers {names} retraced tf.function `{step}` during fit "
        "call 2, epoch 1: inputs: dim 0 32 -> None. Fix: A partial last batch")


def test_validation_and_predict_traces_are_reported_without_warnings(model):
    monitor = tg.callbacks.TraceMonitor()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(*data(70), batch_size=32, epochs=2, validation_data=data(70, seed=1), verbose=0,
                  callbacks=[monitor])
        model.predict(data(64)[0], batch_size=32, verbose=0, callbacks=[monitor])
    events = monitor.report.layers["projection"].events
    assert [(e.kind.value, e.function, e.signature["training"]) for e in events] == DEFAULT.pick([
        ("trace", "one_step_on_data", "True"),  # fit: the dataset's batch dimension is None.
        ("trace", "one_step_on_data", "False"),  # validation: Keras's test step.
        ("trace", "one_step_on_data_distributed", "False"),  # predict.
    ], [
        ("trace", "train_function", "True"),
        ("variable_retrace", "train_function", "True"),  # The optimizer's variables.
        ("trace", "test_function", "False"),
        ("trace", "predict_function", "False"),
    ])
    assert events[0].signature["inputs"] == "float32[None,8]"


def test_only_retraces_after_the_first_epoch_or_call_warn():
    monitor = tg.callbacks.TraceMonitor()
    layer = FakeLayer("fake")
    retrace = event(1, TraceKind.RETRACE, layer="fake", hint="Do X.")
    monitor.on_train_begin()
    monitor.on_epoch_begin(0)
    monitor._observer._record_event(layer, retrace)  # First epoch of the first call: expected.
    monitor.on_epoch_end(0)
    monitor.on_epoch_begin(1)
    monitor._observer._record_event(layer, event(2, TraceKind.TRACE, layer="fake"))
    monitor.on_test_begin()  # Validation inside fit.
    monitor._observer._record_event(layer, retrace)
    with pytest.warns(UserWarning, match="during evaluate call 1, epoch 2: none of its arguments "
                      "changed. Fix: Do X. All runs: TraceMonitor.report.") as record:
        monitor.on_test_end()
    assert len(record) == 1
    monitor.on_epoch_end(1)
    monitor.on_train_end()
    assert _recorder._observers == ()
    assert kinds_of(monitor.report.layers["fake"]) == ["retrace", "trace", "retrace"]


def test_a_call_that_raised_does_not_confuse_the_next(model):
    monitor = tg.callbacks.TraceMonitor()
    monitor.on_train_begin()  # A fit that raised: Keras never calls on_train_end.
    monitor.on_predict_begin()
    monitor.on_predict_end()
    assert _recorder._observers == ()
    assert monitor._calls == 2


def test_a_dropped_monitor_stops_observing():
    monitor = tg.callbacks.TraceMonitor()
    monitor.on_train_begin()
    observer = monitor._observer
    del monitor
    observer._record_event(FakeLayer("fake"), event(1))
    assert _recorder._observers == ()


def test_callbacks_is_an_attribute_of_the_package():
    assert isinstance(tg.callbacks.TraceMonitor(), keras.callbacks.Callback)
