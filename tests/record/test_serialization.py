"""Saving, exporting, cloning, copying and pickling models that hold trace-aware layers.

Run on each Keras importable here (`keras_flavor`); what differs between them is in
`EXPECTED`. Each copy must work, give equal outputs, and start with an empty log of
its own (a copy rebuilt from its config may hold only its own construction runs).
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
import tensorflow as tf
from conftest import FLAVORS

import traceguard as tg
from traceguard._core.classify import EarlierTrace
from traceguard._record.layer_state import STATE_ATTRIBUTE, LayerTraceState
from traceguard._record.settings import TraceSettings

# Keras 2 builds a rebuilt `Scale` twice (from its saved build config, then when the
# functional model calls it), so its sublayer's initializer runs twice and warns (from
# Keras 2.13); a plain Keras 2 layer does the same
# (`test_keras_2_warns_of_the_second_build_for_a_plain_layer_too`).
KERAS_2_REBUILD_WARNING = "The initializer GlorotUniform is unseeded and being called multiple times"
pytestmark = [pytest.mark.backend("tensorflow"),
              pytest.mark.filterwarnings(f"ignore:{KERAS_2_REBUILD_WARNING}:UserWarning")]


def _define_layers(flavor):
    """`Scale` and `TracedDense` for one Keras, registered with it and reachable by pickle.

    Keras rebuilds a model from its config by the registered names; a pickled Keras 2
    layer is rebuilt by Python, which finds its class by qualified name in this module.
    """
    keras = flavor.keras

    class Scale(flavor.TraceAwareLayer):
        """A layer with a sublayer, its own argument and no `get_config` (Keras generates it)."""

        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor
            self.dense = keras.layers.Dense(3)

        def build(self, input_shape):
            self.dense.build(input_shape)

        def call(self, inputs):
            return self.dense(inputs) * self.factor

    class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
        pass

    classes = {}
    for cls in (Scale, TracedDense):
        cls.__name__ = cls.__qualname__ = f"{cls.__name__}_{flavor.name}"
        globals()[cls.__name__] = cls
        classes[cls.__name__.split("_")[0]] = \
            keras.saving.register_keras_serializable(package="traceguard_tests")(cls)
    return classes


def _define_plain_scale(flavor):
    """`Scale` as a plain layer of one Keras, with the `get_config` Keras 2 needs from it."""
    keras = flavor.keras

    class PlainScale(keras.layers.Layer):
        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor
            self.dense = keras.layers.Dense(3)

        def build(self, input_shape):
            self.dense.build(input_shape)

        def call(self, inputs):
            return self.dense(inputs) * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    PlainScale.__name__ = PlainScale.__qualname__ = f"PlainScale_{flavor.name}"
    return keras.saving.register_keras_serializable(package="traceguard_tests")(PlainScale)


LAYERS = {flavor.name: _define_layers(flavor) for flavor in FLAVORS}
PLAIN_SCALES = {flavor.name: _define_plain_scale(flavor) for flavor in FLAVORS}

# What each Keras's copies run while they are made: kinds per layer name.
KERAS_2 = {
    # Keras 2 deep-copies and pickles a built model through its `.keras` format
    # (`Model.__reduce__`, `__deepcopy__` and `__copy__` in training.py): the copy is
    # rebuilt from its config, and a functional model runs each layer's `call` on
    # symbolic inputs in `<layer>_scratch_graph`, `Dense` included.
    "rebuilt": {"scale": ["symbolic"], "dense_tg": ["symbolic"]},
    "clone": {"scale": ["symbolic"], "dense_tg": ["symbolic"]},
    # `model.export` traces `__call__` through its `ExportArchive`, then SavedModel
    # saving traces it again in TF's save context.
    "export": [("save", "__call__"), ("save", "__call__")],
    # SavedModel `model.save(path, save_format="tf")`: the model's `_wrapped_model`, then
    # the layer's call-and-losses function once per its two save specs.
    "saved_model": [("save", "_wrapped_model"),
                    ("save", "scale_layer_call_and_return_conditional_losses"),
                    ("save", "scale_layer_call_and_return_conditional_losses")],
}
EXPECTED_BY_FLAVOR = {
    "keras3": {
        # Keras 3 deep-copies and pickles a model through its saving library
        # (`KerasSaveable.__reduce__`): the copy is rebuilt from its config, calling
        # each new layer on symbolic inputs. That runs `call` of `Scale` once to infer
        # its output shape; `Dense` has `compute_output_shape()` and runs none.
        "rebuilt": {"scale": ["symbolic"], "dense_tg": []},
        # clone_model does the same with the new layers.
        "clone": {"scale": ["symbolic"], "dense_tg": []},
        "export": [("save", "__call__"), ("save", "serving_default"), ("save", "__call__")],
    },
    "tf_keras": KERAS_2,
    "keras2": KERAS_2,
}

X = np.random.default_rng(0).random((5, 4)).astype("float32")


def kinds(layer):
    return [event.kind.value for event in layer.trace_log]


def logs(model):
    return {name: kinds(model.get_layer(name)) for name in ("scale", "dense_tg")}


@pytest.fixture
def expected(keras_flavor):
    return EXPECTED_BY_FLAVOR[keras_flavor.name]


@pytest.fixture
def model(keras_flavor):
    keras, layers = keras_flavor.keras, LAYERS[keras_flavor.name]
    inputs = keras.Input((4,))
    scale = layers["Scale"](2.0, name="scale", trace_log_size=7, max_traces=5)
    outputs = layers["TracedDense"](2, name="dense_tg", log_eager=True)(scale(inputs))
    model = keras.Model(inputs, outputs)
    model.predict(X, verbose=0)  # The original has a log of its own to keep apart.
    return model


def assert_independent_copy(original, copied):
    """Equal outputs; a fresh log per layer with the original's settings; runs stay apart."""
    assert copied is not original
    np.testing.assert_allclose(copied.predict(X, verbose=0), original.predict(X, verbose=0), rtol=1e-6)
    before = logs(original)
    for name in ("scale", "dense_tg"):
        layer, copied_layer = original.get_layer(name), copied.get_layer(name)
        assert copied_layer.trace_log is not layer.trace_log
        assert copied_layer.__dict__[STATE_ATTRIBUTE].settings == layer.__dict__[STATE_ATTRIBUTE].settings
        assert [e.index for e in copied_layer.trace_log] == list(range(1, len(copied_layer.trace_log) + 1))
    copied(X)  # Runs of the copy are logged by the copy alone...
    assert logs(original) == before
    original(X)  # ...and runs of the original by the original alone.
    assert copied.get_layer("dense_tg").trace_log.eager_calls == 1


def test_keras_file_round_trip(keras_flavor, model, expected, tmp_path):
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras_flavor.keras.models.load_model(path)
    assert logs(loaded) == expected["rebuilt"]
    assert loaded.get_layer("scale").factor == 2.0 and loaded.get_layer("scale").trace_log.maxlen == 7
    assert_independent_copy(model, loaded)


@pytest.mark.parametrize("make_copy", [copy.deepcopy, copy.copy, lambda m: pickle.loads(pickle.dumps(m))],
                         ids=["deepcopy", "copy", "pickle"])
def test_copies_of_a_model_start_with_empty_independent_logs(model, expected, make_copy):
    copied = make_copy(model)
    assert logs(copied) == expected["rebuilt"]
    assert_independent_copy(model, copied)


def test_clone_model_logs_only_its_own_construction(keras_flavor, model, expected):
    before = logs(model)
    clone = keras_flavor.keras.models.clone_model(model)
    assert logs(model) == before
    assert logs(clone) == expected["clone"]
    clone.set_weights(model.get_weights())
    assert_independent_copy(model, clone)


@pytest.mark.parametrize("make_copy", [copy.deepcopy, lambda layer: pickle.loads(pickle.dumps(layer))],
                         ids=["deepcopy", "pickle"])
def test_copies_of_a_layer_start_with_empty_independent_logs(model, make_copy):
    layer = model.get_layer("scale")
    copied = make_copy(layer)
    assert kinds(copied) == [] and copied.trace_log is not layer.trace_log
    np.testing.assert_allclose(copied(X), layer(X), rtol=1e-6)
    assert copied.trace_log.eager_calls == 1


def assert_serving_equals(model, path):
    """`tf.saved_model.load` of `path` serves what `model` predicts."""
    restored = tf.saved_model.load(str(path))
    served = restored.signatures["serving_default"](tf.constant(X))
    (output,) = served.values()
    np.testing.assert_allclose(output.numpy(), model.predict(X, verbose=0), rtol=1e-6)
    return restored, output


def test_export_then_saved_model_serving_equals_the_model(keras_flavor, model, expected, tmp_path):
    if keras_flavor.version == (2, 12):
        # Keras 2.12's export also tracks the model's `predict_function`, which captures
        # variables it does not save: a plain model fails alike once it has predicted.
        keras = keras_flavor.keras
        inputs = keras.Input((4,))
        plain = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        plain.predict(X, verbose=0)
        with pytest.raises(KeyError, match="Failed to add concrete function .*predict_function"):
            plain.export(str(tmp_path / "plain"))
        pytest.skip("Keras 2.12 cannot export a model that has predicted (a plain model fails alike)")
    layer = model.get_layer("scale")
    layer.trace_log.clear()
    model.export(str(tmp_path / "exported"))
    assert [(e.kind.value, e.function) for e in layer.trace_log] == expected["export"]
    restored, output = assert_serving_equals(model, tmp_path / "exported")
    np.testing.assert_allclose(restored.serve(tf.constant(X)).numpy(), output.numpy(), rtol=1e-6)
    # The restored graphs run no Python: the original layer's log is untouched.
    assert [(e.kind.value, e.function) for e in layer.trace_log] == expected["export"]


def test_keras_2_saved_model_save_serves_and_loads_with_a_fresh_log(keras_flavor, model, expected, tmp_path):
    if keras_flavor.is_keras_3:
        # Keras 3's `Model.save` writes `.keras` and `.h5` only, for a plain model too;
        # `model.export` (tested above) is its SavedModel.
        with pytest.raises(ValueError, match="save_format"):
            keras_flavor.keras.Sequential([keras_flavor.keras.layers.Dense(1)]).save(
                str(tmp_path / "plain"), save_format="tf")
        pytest.skip("Keras 3 has no SavedModel `save_format`; `model.export` writes its SavedModel")
    layer = model.get_layer("scale")
    layer.trace_log.clear()
    model.save(str(tmp_path / "saved"), save_format="tf")
    runs = expected["saved_model"]
    if keras_flavor.version == (2, 12):  # Keras 2.12 also traces the model's own function twice.
        own = ("save", f"{model.name}_layer_call_and_return_conditional_losses")
        runs = [runs[0], runs[1], own, own, runs[2]]
    assert [(e.kind.value, e.function) for e in layer.trace_log] == runs
    assert_serving_equals(model, tmp_path / "saved")
    assert [(e.kind.value, e.function) for e in layer.trace_log] == runs
    # Keras 2 loads its SavedModel back as the registered classes, rebuilt from their config.
    loaded = keras_flavor.keras.models.load_model(str(tmp_path / "saved"))
    assert type(loaded.get_layer("scale")) is type(layer)
    assert logs(loaded) == expected["rebuilt"]
    assert_independent_copy(model, loaded)


def test_keras_2_warns_of_the_second_build_for_a_plain_layer_too(keras_flavor):
    keras = keras_flavor.keras
    inputs = keras.Input((4,))
    model = keras.Model(inputs, PLAIN_SCALES[keras_flavor.name](2.0, name="scale")(inputs))
    model.predict(X, verbose=0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        copy.deepcopy(model)
    messages = [str(warning.message) for warning in record if KERAS_2_REBUILD_WARNING in str(warning.message)]
    # Keras 2 warns of an initializer called twice from 2.13 on.
    assert len(messages) == keras_flavor.pick(0, int(keras_flavor.version >= (2, 13)))


def test_state_copies_are_fresh_with_the_same_settings():
    settings = TraceSettings(trace_log_size=5, log_eager=True, max_traces=2, on_retrace="raise")
    state = LayerTraceState(settings, owner="scale")
    state.log._append(tg.TraceEvent(index=1, kind=tg.TraceKind.TRACE, layer="scale", function="f",
                                    signature={}, changes=(), created_variables=(), reason="",
                                    hint=None, timestamp=0.0, duration_s=0.0, thread="t"))
    assert state.remember("f", EarlierTrace({}, False, None, None), origin="g") == 1
    for copied in (copy.deepcopy(state), copy.copy(state), pickle.loads(pickle.dumps(state))):
        assert copied.settings == settings and copied.log.owner == "scale"
        assert len(copied.log) == 0 and copied.graph_traces == 0 and copied.log is not state.log
        assert copied.log.maxlen == 5
        assert not copied.traces_by_function and not copied.traces_by_origin


def test_keras_copies_never_copy_the_state_itself(keras_flavor, model, monkeypatch):
    """Keras rebuilds copies of a built model from its config: the state's own hooks are a
    fallback, used for copies of a Keras 2 layer."""
    def fail(*args):
        raise AssertionError("LayerTraceState was copied")

    monkeypatch.setattr(LayerTraceState, "__deepcopy__", fail)
    monkeypatch.setattr(LayerTraceState, "__reduce__", fail)
    copy.deepcopy(model)
    pickle.loads(pickle.dumps(model))
    keras_flavor.keras.models.clone_model(model)
