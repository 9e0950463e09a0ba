"""traceguard.callbacks.TraceMonitor on real fit/evaluate/predict calls."""

import logging
import warnings

import numpy as np
import pytest
from conftest import DEFAULT, FLAVORS, keras
from helpers import FakeLayer, event, texts

import traceguard as tg
from traceguard import _compat
from traceguard._core.events import TraceKind
from traceguard._record import observers as _observers

pytestmark = pytest.mark.backend("tensorflow")


def define_projection(base):
    class Projection(base):
        """examples/fit_partial_batch.py's layer: it has `build()`, so no symbolic run in fit."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

        def call(self, inputs, training=None):
            return inputs @ self.kernel

    return Projection


Projection = define_projection(tg.TraceAwareLayer)


def projection_of(flavor):
    """`Projection` on `flavor`'s trace-aware base."""
    return Projection if flavor is DEFAULT else define_projection(flavor.TraceAwareLayer)


def monitor_class_of(flavor):
    """The `TraceMonitor` for `flavor`'s models: a Keras runs only its own callbacks."""
    if flavor is DEFAULT:
        return tg.callbacks.TraceMonitor
    if not flavor.is_keras_3:
        import traceguard.keras2

        return traceguard.keras2.TraceMonitor
    # Keras 3 next to tf_keras as tf.keras: the mixin on its own Callback.
    return type("TraceMonitor", (tg.callbacks.TraceMonitorMixin, flavor.keras.callbacks.Callback), {})


def compiled_projection_model(flavor):
    inputs = flavor.keras.Input((8,))
    model = flavor.keras.Model(inputs, projection_of(flavor)(4, name="projection")(inputs))
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.fixture
def model():
    return compiled_projection_model(DEFAULT)


def data(samples, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((samples, 8)), rng.random((samples, 4))


def kinds_of(runs):
    return [e.kind.value for e in runs.events]


def test_partial_last_batch_of_a_later_fit_warns_and_shows_in_the_report(keras_flavor, caplog):
    caplog.set_level(logging.INFO, logger="traceguard")
    model = compiled_projection_model(keras_flavor)
    monitor = monitor_class_of(keras_flavor)()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # The first fit traces once and does not warn.
        model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
    # Keras 2 creates the optimizer's variables in its first trace of `train_function`.
    first = keras_flavor.pick(["trace"], ["trace", "variable_retrace"])
    assert kinds_of(monitor.report.layers["projection"]) == first
    step = keras_flavor.pick("one_step_on_data", "train_function")
    expected = (rf"Layer 'projection' retraced tf.function `{step}` during fit call 2, "
                r"epoch 1: inputs: dim 0 32 -> None. Fix: `fit` got 70 samples in batches of 32: "
                r"the last batch of 6 has a new shape")
    with pytest.warns(UserWarning, match=expected) as record:
        model.fit(*data(70), batch_size=32, verbose=0, callbacks=[monitor])
    assert len(record) == 1 and record[0].filename == __file__
    runs = monitor.report.layers["projection"]
    assert kinds_of(runs) == first + ["retrace"]
    assert texts(runs.events[-1].changes) == ("inputs: dim 0 32 -> None",)
    assert "Arrays have no `drop_remainder`" in runs.events[-1].hint  # NumPy inputs (#18).
    tables = [r.getMessage() for r in caplog.records if r.name == "traceguard" and r.levelno == logging.INFO]
    assert [t.splitlines()[0] for t in tables] == ["TraceMonitor: layer body runs after fit (call 1):",
                                                  "TraceMonitor: layer body runs after fit (call 2):"]
    variable_retraces = keras_flavor.pick("-", "1")
    assert tables[1].splitlines()[2].split() == [
        "projection", "Projection", "-", "1", variable_retraces, "1", "-", "-"]
    assert _observers.observers == ()


def test_under_watch_one_warning_names_every_plain_layer_of_the_retraced_step(keras_flavor):
    keras = keras_flavor.keras  # watch() records the plain layers of every Keras imported.
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, name="dense")], name="seq")
    model.compile(optimizer="sgd", loss="mse")
    monitor = monitor_class_of(keras_flavor)()
    with tg.watch():
        model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
        with pytest.warns(UserWarning) as record:
            model.fit(*data(70), batch_size=32, verbose=0, callbacks=[monitor])
    [warning] = record
    layers = list(monitor.report.layers)
    if keras_flavor.is_keras_3:  # Keras 3's Sequential runs an inner Functional.
        outer, inner, dense = layers
        assert inner.startswith("functional")
    else:
        outer, dense = layers
    assert (outer, dense) == ("seq", "dense")
    names = ", ".join(f"'{name}'" for name in layers)
    step = keras_flavor.pick("one_step_on_data", "train_function")
    assert str(warning.message).startswith(
        f"Layers {names} retraced tf.function `{step}` during fit "
        "call 2, epoch 1: inputs: dim 0 32 -> None. Fix: `fit` got 70 samples in batches of 32")


def test_validation_and_predict_traces_are_reported_without_warnings(model):
    monitor = tg.callbacks.TraceMonitor()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(*data(70), batch_size=32, epochs=2, validation_data=data(70, seed=1), verbose=0,
                  callbacks=[monitor])
        model.predict(data(64)[0], batch_size=32, verbose=0, callbacks=[monitor])
    events = monitor.report.layers["projection"].events
    assert [(e.kind.value, e.function, str(e.signature["training"])) for e in events] == DEFAULT.pick([
        ("trace", "one_step_on_data", "True"),  # fit: the dataset's batch dimension is None.
        ("trace", "one_step_on_data", "False"),  # validation: Keras's test step.
        ("trace", "one_step_on_data_distributed", "False"),  # predict.
    ], [
        ("trace", "train_function", "True"),
        ("variable_retrace", "train_function", "True"),  # The optimizer's variables.
        ("trace", "test_function", "False"),
        ("trace", "predict_function", "False"),
    ])
    assert str(events[0].signature["inputs"]) == "float32[None,8]"


def test_only_retraces_after_the_first_epoch_or_call_warn():
    monitor = tg.callbacks.TraceMonitor()
    layer = FakeLayer("fake")
    retrace = event(1, TraceKind.RETRACE, layer="fake", hint="Do X.")
    monitor.on_train_begin()
    monitor.on_epoch_begin(0)
    monitor._observer.record_event(layer, retrace)  # First epoch of the first call: expected.
    monitor.on_epoch_end(0)
    monitor.on_epoch_begin(1)
    monitor._observer.record_event(layer, event(2, TraceKind.TRACE, layer="fake"))
    monitor.on_test_begin()  # Validation inside fit.
    monitor._observer.record_event(layer, retrace)
    with pytest.warns(UserWarning, match="during evaluate call 1, epoch 2: none of its arguments "
                      "changed. Fix: Do X. All runs: TraceMonitor.report.") as record:
        monitor.on_test_end()
    assert len(record) == 1
    monitor.on_epoch_end(1)
    monitor.on_train_end()
    assert _observers.observers == ()
    assert kinds_of(monitor.report.layers["fake"]) == ["retrace", "trace", "retrace"]


def test_a_call_that_raised_does_not_confuse_the_next(model):
    monitor = tg.callbacks.TraceMonitor()
    monitor.on_train_begin()  # A fit that raised: Keras never calls on_train_end.
    monitor.on_predict_begin()
    monitor.on_predict_end()
    assert _observers.observers == ()
    assert monitor._calls == 2


def test_a_dropped_monitor_stops_observing():
    monitor = tg.callbacks.TraceMonitor()
    monitor.on_train_begin()
    observer = monitor._observer
    del monitor
    observer.record_event(FakeLayer("fake"), event(1))
    assert _observers.observers == ()


def test_callbacks_is_an_attribute_of_the_package():
    assert isinstance(tg.callbacks.TraceMonitor(), keras.callbacks.Callback)


@pytest.mark.skipif(len(FLAVORS) == 1, reason="a single Keras is importable here")
def test_a_monitor_of_another_keras_names_the_monitor_to_use():
    other = FLAVORS[1]
    model = compiled_projection_model(other)
    with pytest.raises(TypeError) as info:
        model.fit(*data(32), batch_size=32, verbose=0, callbacks=[tg.callbacks.TraceMonitor()])
    advice = ("Use `traceguard.keras2.TraceMonitor()` for it." if not other.is_keras_3 else
              "Make it a `TraceMonitor` of that Keras: `class Monitor("
              "traceguard.callbacks.TraceMonitorMixin, keras.callbacks.Callback)`.")
    other_keras = _compat.load_flavor(other.name).describe()  # "tf_keras 2.21.0", "Keras 3.15.1"
    assert str(info.value) == (
        f"`traceguard.callbacks.TraceMonitor` is a {_compat.DEFAULT_FLAVOR.describe()} callback and "
        f"{other_keras} runs only its own callbacks. {advice} Received: a model of "
        f"{other_keras}, Functional {model.name!r}")
    assert _observers.observers == ()


@pytest.mark.skipif(all(flavor.name == "keras3" for flavor in FLAVORS),
                    reason="no Keras 2 is importable here")
def test_keras2_trace_monitor_is_a_keras_2_callback():
    import traceguard.keras2 as keras2
    assert issubclass(keras2.TraceMonitor, keras2.keras.callbacks.Callback)
    assert issubclass(keras2.TraceMonitor, tg.callbacks.TraceMonitorMixin)
    # Where tf.keras is Keras 2 there is one monitor class, as there is one Keras.
    assert (keras2.TraceMonitor is tg.callbacks.TraceMonitor) is (keras2.keras is keras)
