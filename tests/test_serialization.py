"""Saving, exporting, cloning, copying and pickling models that hold trace-aware layers.

Written against the active Keras (`_compat.keras`), so the same tests run on each
Keras flavour a CI job selects; what differs between flavours is in `EXPECTED`.
Each copy must work, give equal outputs, and start with an empty log of its own
(a copy rebuilt from its config may hold only its own construction runs).
"""

import copy
import pickle

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg
from traceguard import _compat
from traceguard._recorder import STATE_ATTRIBUTE, LayerTraceState, TraceSettings

# Module level and registered, as Keras needs to rebuild a model from its config.
register = keras.saving.register_keras_serializable(package="traceguard_tests")


@register
class Scale(tg.TraceAwareLayer):
    """A layer with a sublayer, its own argument and no `get_config` (Keras generates it)."""

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor
        self.dense = keras.layers.Dense(3)

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, inputs):
        return self.dense(inputs) * self.factor


@register
class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
    pass


# What each flavour's copies run while they are made: kinds per layer name.
EXPECTED_BY_FLAVOR = {
    "keras3": {
        # Keras 3 deep-copies and pickles a model through its saving library
        # (`KerasSaveable.__reduce__`): the copy is rebuilt from its config, calling
        # each new layer on symbolic inputs. That runs `call` of `Scale` once to infer
        # its output shape; `Dense` has `compute_output_shape()` and runs none.
        "rebuilt": {"scale": ["symbolic"], "dense_tg": []},
        # clone_model does the same with the new layers.
        "clone": {"scale": ["symbolic"], "dense_tg": []},
        "export": ["save", "save", "save"],
    },
}
if _compat.KERAS_FLAVOR not in EXPECTED_BY_FLAVOR:
    pytest.skip(f"copies of models are measured on Keras 3 only, not yet on {_compat.KERAS_FLAVOR} "
                "(the Keras tf.keras is here)", allow_module_level=True)
EXPECTED = EXPECTED_BY_FLAVOR[_compat.KERAS_FLAVOR]

X = np.random.default_rng(0).random((5, 4)).astype("float32")


def kinds(layer):
    return [event.kind.value for event in layer.trace_log]


def logs(model):
    return {name: kinds(model.get_layer(name)) for name in ("scale", "dense_tg")}


@pytest.fixture
def model():
    inputs = keras.Input((4,))
    scale = Scale(2.0, name="scale", trace_log_size=7, max_traces=5)
    outputs = TracedDense(2, name="dense_tg", log_eager=True)(scale(inputs))
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


def test_keras_file_round_trip(model, tmp_path):
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert logs(loaded) == EXPECTED["rebuilt"]
    assert loaded.get_layer("scale").factor == 2.0 and loaded.get_layer("scale").trace_log.maxlen == 7
    assert_independent_copy(model, loaded)


@pytest.mark.parametrize("make_copy", [copy.deepcopy, copy.copy, lambda m: pickle.loads(pickle.dumps(m))],
                         ids=["deepcopy", "copy", "pickle"])
def test_copies_of_a_model_start_with_empty_independent_logs(model, make_copy):
    copied = make_copy(model)
    assert logs(copied) == EXPECTED["rebuilt"]
    assert_independent_copy(model, copied)


def test_clone_model_logs_only_its_own_construction(model):
    before = logs(model)
    clone = keras.models.clone_model(model)
    assert logs(model) == before
    assert logs(clone) == EXPECTED["clone"]
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


def test_export_then_saved_model_serving_equals_the_model(model, tmp_path):
    layer = model.get_layer("scale")
    layer.trace_log.clear()
    model.export(str(tmp_path / "exported"), verbose=False)
    assert kinds(layer) == EXPECTED["export"]
    restored = tf.saved_model.load(str(tmp_path / "exported"))
    served = restored.signatures["serving_default"](tf.constant(X))
    (output,) = served.values()
    np.testing.assert_allclose(output.numpy(), model.predict(X, verbose=0), rtol=1e-6)
    np.testing.assert_allclose(restored.serve(tf.constant(X)).numpy(), output.numpy(), rtol=1e-6)
    # The restored graphs run no Python: the original layer's log is untouched.
    assert kinds(layer) == EXPECTED["export"]


def test_state_copies_are_fresh_with_the_same_settings():
    settings = TraceSettings(trace_log_size=5, log_eager=True, max_traces=2, on_excess="raise")
    state = LayerTraceState(settings, owner="scale")
    state.log._append(tg.TraceEvent(index=1, kind=tg.TraceKind.TRACE, layer="scale", function="f",
                                    signature={}, changes=(), created_variables=(), reason="",
                                    hint=None, timestamp=0.0, duration_s=0.0, thread="t"))
    state.graph_traces = 1
    for copied in (copy.deepcopy(state), copy.copy(state), pickle.loads(pickle.dumps(state))):
        assert copied.settings == settings and copied.log.owner == "scale"
        assert len(copied.log) == 0 and copied.graph_traces == 0 and copied.log is not state.log
        assert copied.log.maxlen == 5 and copied.earlier_traces("f") == []


def test_keras_copies_never_copy_the_state_itself(model, monkeypatch):
    """Keras 3 rebuilds copies from their config, so the state's own hooks are a fallback only."""
    def fail(*args):
        raise AssertionError("LayerTraceState was copied")

    monkeypatch.setattr(LayerTraceState, "__deepcopy__", fail)
    monkeypatch.setattr(LayerTraceState, "__reduce__", fail)
    copy.deepcopy(model)
    pickle.loads(pickle.dumps(model))
    keras.models.clone_model(model)
