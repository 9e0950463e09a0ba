"""TraceAwareLayer / TraceAwareMixin as Keras layers: results, config, saving, tracking.

Each test runs once per Keras importable here (the `keras_flavor` fixture).
"""

import inspect
import warnings
import zipfile

import numpy as np
import pytest
import tensorflow as tf
from conftest import SeedLayer, kinds

import traceguard as tg
from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")


@pytest.fixture
def Scale(keras_flavor):
    class Scale(keras_flavor.TraceAwareLayer):
        """A subclass without `get_config`, whose `__init__` takes its own argument."""

        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

    return Scale


@pytest.fixture
def TracedDense(keras_flavor):
    class TracedDense(tg.TraceAwareMixin, keras_flavor.keras.layers.Dense):
        pass

    return TracedDense


def test_outputs_equal_the_plain_keras_layer(keras_flavor, seed_input):
    traced, plain = keras_flavor.SeedLayer(), keras_flavor.PlainSeedLayer()
    traced(seed_input[:1])
    plain(seed_input[:1])
    plain.set_weights(traced.get_weights())
    np.testing.assert_array_equal(traced(seed_input), plain(seed_input))
    np.testing.assert_array_equal(tf.function(traced)(seed_input), tf.function(plain)(seed_input))


def test_mixin_records_a_builtin_layer_and_keeps_its_config(TracedDense):
    layer = TracedDense(4, activation="relu", max_traces=3)
    step = tf.function(layer)
    step(tf.ones((2, 3)))
    assert kinds(layer) == ["trace", "variable_retrace"]
    config = layer.get_config()
    assert config["units"] == 4 and config["activation"] == "relu"
    assert config["max_traces"] == 3 and config["trace_log_size"] == 1000
    clone = TracedDense.from_config(config)
    assert clone.units == 4 and clone.get_config()["max_traces"] == 3


def test_call_signature_is_preserved_for_keras(keras_flavor):
    from tensorflow.python.util import tf_inspect  # How Keras 2 reads `call`'s arguments.

    class WithTraining(keras_flavor.TraceAwareLayer):
        def call(self, inputs, training=None, mask=None):
            return inputs

    assert list(inspect.signature(WithTraining.call).parameters) == ["self", "inputs", "training", "mask"]
    assert tf_inspect.getfullargspec(WithTraining().call).args == ["self", "inputs", "training", "mask"]
    assert WithTraining.call.__name__ == "call"


def test_training_argument_reaches_call_as_keras_passes_it(keras_flavor):
    seen = []

    class WithTraining(keras_flavor.TraceAwareLayer):
        def call(self, inputs, training=None):
            seen.append(training)
            return inputs

    keras = keras_flavor.keras
    inputs = keras.Input((3,))
    layer = WithTraining()
    model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    trace = layer.trace_log.filter("trace")[0]
    assert str(trace.signature["training"]) == "True"
    assert seen[len(layer.trace_log.filter("symbolic"))] is True


def test_auto_config_subclass_keeps_its_arguments_and_traceguards(Scale):
    layer = Scale(3.0, max_traces=2, on_retrace="raise")
    config = layer.get_config()
    assert config["factor"] == 3.0
    assert (config["max_traces"], config["on_retrace"], config["log_eager"]) == (2, "raise", False)
    restored = Scale.from_config(config)
    assert restored.factor == 3.0
    assert restored.get_config()["on_retrace"] == "raise"


def test_on_excess_still_works_with_a_deprecation_warning_naming_on_retrace(keras_flavor, seed_input):
    with pytest.warns(DeprecationWarning) as caught:
        layer = keras_flavor.SeedLayer(max_traces=0, on_excess="raise", name="former")
    assert [str(warning.message) for warning in caught] == [
        "The `on_excess` argument of traceguard layers is deprecated: use `on_retrace` (same values). "
        "Received: on_excess='raise'"]
    with pytest.warns(DeprecationWarning, match="`on_excess`") as caught:
        keras_flavor.TraceAwareLayer(on_excess="warn")
    assert caught[0].filename == __file__  # The user's line (else their layer's `__init__`).
    config = layer.get_config()
    assert config["on_retrace"] == "raise" and "on_excess" not in config
    with pytest.raises(tg.RetraceError, match="Layer 'former' traced 1 times, over its budget of "):
        tf.function(layer)(seed_input)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError) as raised:
        keras_flavor.SeedLayer(on_retrace="raise", on_excess="warn")
    assert str(raised.value) == ("`on_retrace` and `on_excess` (its deprecated name) disagree: give only "
                                 "`on_retrace`. Received: on_retrace='raise', on_excess='warn'")


def test_a_keras_file_saved_with_on_excess_loads_without_a_warning(keras_flavor, Scale, TracedDense,
                                                                   tmp_path):
    # The config as traceguard wrote it before `on_retrace`: the same file with the former key.
    keras = keras_flavor.keras
    inputs = keras.Input((4,))
    outputs = TracedDense(3, name="dense_tg", max_traces=2, on_retrace="raise")(
        Scale(2.0, name="scale", on_retrace="raise")(inputs))
    model = keras.Model(inputs, outputs)
    model.save(tmp_path / "new.keras")
    if not zipfile.is_zipfile(tmp_path / "new.keras"):  # Keras 2.12 writes HDF5 unless asked.
        model.save(str(tmp_path / "new.keras"), save_format="keras_v3")
    with zipfile.ZipFile(tmp_path / "new.keras") as new, zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for item in new.infolist():
            data = new.read(item)
            if item.filename == "config.json":
                assert data.count(b'"on_retrace": "raise"') == 2 and b"on_excess" not in data
                data = data.replace(b'"on_retrace"', b'"on_excess"')
            old.writestr(item, data)
    loaded = keras.models.load_model(tmp_path / "old.keras",  # Warnings are errors here.
                                     custom_objects={"Scale": Scale, "TracedDense": TracedDense})
    for name in ("scale", "dense_tg"):
        config = loaded.get_layer(name).get_config()
        assert config["on_retrace"] == "raise" and "on_excess" not in config
    assert loaded.get_layer("dense_tg").get_config()["max_traces"] == 2


def test_keras_file_round_trip(keras_flavor, Scale, TracedDense, tmp_path):
    keras = keras_flavor.keras
    inputs = keras.Input((4,))
    scale = Scale(2.0, trace_log_size=7, name="scale")
    model = keras.Model(inputs, TracedDense(3, name="dense_tg")(scale(inputs)))
    x = np.random.default_rng(0).random((5, 4)).astype("float32")
    expected = model.predict(x, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"Scale": Scale, "TracedDense": TracedDense})
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected)
    loaded_scale = loaded.get_layer("scale")
    assert loaded_scale.factor == 2.0 and loaded_scale.trace_log.maxlen == 7
    assert loaded_scale.trace_log is not scale.trace_log
    # The loaded log only has what loading and predict ran: nothing carried over.
    assert all(event.index <= len(loaded_scale.trace_log) for event in loaded_scale.trace_log)


def test_log_is_not_keras_state(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.function(layer)(seed_input)
    assert len(layer.weights) == 2
    assert "trace_log" not in layer.get_config()
    assert all("trace" not in _compat.variable_path(v) for v in layer.variables)
    assert "_traceguard_state" not in layer._trackable_children()
    if hasattr(layer, "_tracker"):  # Keras 3's attribute tracker.
        assert "_traceguard_state" not in layer._tracker.__dict__.get("stored_ids", {})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"trace_log_size": 0}, "`trace_log_size` expects a positive integer. Received: trace_log_size=0"),
        ({"trace_log_size": 2.5}, "Received: trace_log_size=2.5"),
        ({"log_eager": "yes"}, "`log_eager` expects a bool. Received: log_eager='yes'"),
        ({"max_traces": -1}, "`max_traces` expects None or a non-negative integer. Received: max_traces=-1"),
        ({"on_retrace": "ignore"},
         "`on_retrace` expects one of 'raise', 'warn'. Received: on_retrace='ignore'"),
    ],
)
def test_bad_constructor_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SeedLayer(**kwargs)


# --- a mixed class shows Keras its parent's constructor and config (#21) -------------------
def _plain_scale(keras):
    class Scale(keras.layers.Layer):
        """A user's layer with an argument of its own and no `get_config` (Keras generates it)."""

        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

    return Scale


SETTINGS = {"trace_log_size": 1000, "log_eager": False, "max_traces": None, "on_retrace": "warn"}


def test_mixed_class_signature_is_the_parents_plus_keyword_only_settings(keras_flavor):
    Scale = _plain_scale(keras_flavor.keras)

    class TracedScale(tg.TraceAwareMixin, Scale):
        pass

    parameters = inspect.signature(TracedScale.__init__).parameters.values()
    assert [(p.name, p.kind.name, p.default) for p in parameters] == [
        ("self", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("factor", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        *((name, "KEYWORD_ONLY", default) for name, default in SETTINGS.items()),
        ("kwargs", "VAR_KEYWORD", inspect.Parameter.empty),
    ]
    # A subclass's own `__init__` is the user's business: Keras reads it as written.
    class WithInit(TracedScale):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(factor, **kwargs)

    assert list(inspect.signature(WithInit.__init__).parameters) == ["self", "factor", "kwargs"]


def test_mixed_class_built_positionally_generates_its_config_as_the_parent(keras_flavor):
    Scale = _plain_scale(keras_flavor.keras)

    class TracedScale(tg.TraceAwareMixin, Scale):
        pass

    # Keras 3 raised NotImplementedError ("created by passing positional only or variadic
    # positional arguments"); Keras 2 dropped `factor` from the config.
    config = TracedScale(2.0, max_traces=3).get_config()
    assert config == {**Scale(2.0, name=config["name"]).get_config(), **SETTINGS, "max_traces": 3}
    restored = TracedScale.from_config(config)
    assert restored.factor == 2.0 and restored.get_config() == config


def test_model_holding_a_positionally_built_mixed_layer_saves_and_loads(keras_flavor, tmp_path):
    keras = keras_flavor.keras

    class TracedScale(tg.TraceAwareMixin, _plain_scale(keras)):
        pass

    inputs = keras.Input((3,))
    model = keras.Model(inputs, TracedScale(2.0, trace_log_size=5, name="scale")(inputs))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras", custom_objects={"TracedScale": TracedScale})
    scale = loaded.get_layer("scale")
    assert scale.factor == 2.0 and scale.trace_log.maxlen == 5
    np.testing.assert_array_equal(loaded(np.ones((1, 3))), np.full((1, 3), 2.0))


def test_mixed_wrapper_rebuilt_from_config_equals_the_original(keras_flavor):
    keras = keras_flavor.keras

    class TracedTimeDistributed(tg.TraceAwareMixin, keras.layers.TimeDistributed):
        pass

    # `Wrapper.from_config` passes the wrapped layer positionally; Keras 3 then disabled
    # the automatic config of the copy only (`_auto_config_error_args`), and Keras's own
    # `run_layer_test` compares the attributes of both.
    layer = TracedTimeDistributed(layer=keras.layers.Dense(2), max_traces=1)
    revived = TracedTimeDistributed.from_config(layer.get_config())
    assert set(dir(revived)) == set(dir(layer))
    assert revived.get_config() == layer.get_config()
    assert revived.get_config()["max_traces"] == 1


def test_own_get_config_calling_super_keeps_the_settings_on_a_bare_layer(keras_flavor):
    keras = keras_flavor.keras

    class Bare(tg.TraceAwareMixin, keras.layers.Layer):
        def __init__(self, factor=1.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    class OwnConfigDense(tg.TraceAwareMixin, keras.layers.Dense):
        def get_config(self):
            return {**super().get_config(), "note": "mine"}

        @classmethod
        def from_config(cls, config):
            return cls(**{key: value for key, value in config.items() if key != "note"})

    expected = {**SETTINGS, "max_traces": 3, "on_retrace": "raise"}
    for layer in (Bare(2.0, max_traces=3, on_retrace="raise"),
                  OwnConfigDense(2, max_traces=3, on_retrace="raise")):
        config = layer.get_config()
        assert {name: config[name] for name in SETTINGS} == expected
        restored = type(layer).from_config(config)
        assert restored.get_config()["max_traces"] == 3 and restored.get_config()["on_retrace"] == "raise"
