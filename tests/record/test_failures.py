"""Failures: a user's exception passes through as on plain Keras; traceguard's own never escape."""

import logging
import os
import traceback

import numpy as np
import pytest
import tensorflow as tf
from conftest import SeedLayer, keras, kinds
from helpers import texts

import traceguard as tg
from traceguard import TraceKind, _compat
from traceguard._record import internal_errors as _internal_errors
from traceguard._record import layer_state as _layer_state
from traceguard._record import recorder as _recorder
from traceguard._record import runs as _runs
from traceguard._record.layer_state import STATE_ATTRIBUTE

pytestmark = pytest.mark.backend("tensorflow")


class UserError(RuntimeError):
    """A RuntimeError subclass: TensorFlow wraps those in a StagingError under tf.function."""


def failing_layer_class(base, error_type):
    """The same layer on `base`; the class name matches so Keras's messages do."""

    class Fails(base):
        def call(self, inputs):
            if inputs.shape[-1] == 3:
                raise error_type("width 3 is not supported")
            return inputs * 2

    return Fails


def run(layer, mode, x):
    """Calls `layer` on `x` eagerly, in a trace, or in Keras's symbolic pass."""
    if mode == "eager":
        return layer(x)
    if mode == "trace":
        return tf.function(layer)(x)
    inputs = keras.Input(x.shape[1:], name="x")  # Keras names the tensor in its message.
    return keras.Model(inputs, layer(inputs))


def raised(layer, mode, x):
    with pytest.raises(Exception) as info:
        run(layer, mode, x)
    user_frames = [(frame.name, frame.lineno) for frame in traceback.extract_tb(info.value.__traceback__)
                   if frame.filename == __file__]
    return info.value, user_frames


MODES = ["eager", "trace", "symbolic"]
ERRORS = [ValueError, KeyError, TypeError, NotImplementedError, UserError]


@pytest.mark.parametrize("error_type", ERRORS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_exception_from_call_reaches_the_caller_as_from_a_plain_layer(mode, error_type):
    plain_error, plain_frames = raised(failing_layer_class(keras.layers.Layer, error_type)(name="fails"),
                                       mode, tf.ones((2, 3)))
    layer = failing_layer_class(tg.TraceAwareLayer, error_type)(name="fails", log_eager=True)
    error, frames = raised(layer, mode, tf.ones((2, 3)))

    assert type(error) is type(plain_error)
    assert str(error) == str(plain_error)
    assert frames == plain_frames
    assert error.__cause__ is plain_error.__cause__
    raise_line = failing_layer_class.__code__.co_firstlineno + 6
    if mode == "trace" and (_compat.IS_KERAS_3 or error_type is not KeyError):
        # TensorFlow lists the user's frames in the message too (on Keras 2 not for a
        # KeyError, whose message AutoGraph leaves as it is).
        assert f'File "{__file__}", line {raise_line}, in call' in str(error)
    if mode == "trace" and error_type is UserError:
        # TensorFlow's own wrapping, as for the plain layer: a new exception, frames in the message.
        assert type(error).__name__ == "StagingError"
    elif mode != "eager" and not _compat.IS_KERAS_3:
        # Keras 2 runs `call` converted by AutoGraph in a graph: its frame is in a generated file.
        assert [name for name, _ in frames] == ["raised", "run"]
    else:
        assert ("call", raise_line) in frames

    assert [(event.kind.value, event.error) for event in layer.trace_log][-1] == (
        {"eager": "eager", "trace": "trace", "symbolic": "symbolic"}[mode],
        error_seen_by_the_layer(mode, error_type, raise_line),
    )
    assert _runs.active_runs() == []


def error_seen_by_the_layer(mode, error_type, raise_line):
    """The repr of the error `call` raised, as the layer's `TraceEvent.error` records it."""
    error = error_type("width 3 is not supported")
    if _compat.IS_KERAS_3 or mode == "eager":
        return repr(error)
    # Keras 2 runs `call` converted by AutoGraph in a graph, and the converted function
    # raises the error again with the user's frames in its message (a RuntimeError
    # subclass as a StagingError); a KeyError, whose message is quoted, with its repr.
    if error_type is KeyError:
        return repr(KeyError(f"KeyError: {error}"))
    message = (f'in user code:\n\n    File "{__file__}", line {raise_line}, in call  *\n'
               f'        raise error_type("width 3 is not supported")\n\n'
               f"    {error_type.__name__}: {error}\n")
    return f"{'StagingError' if error_type is UserError else error_type.__name__}({message!r})"


@pytest.mark.parametrize("mode", MODES)
def test_layer_works_on_the_next_call_after_a_failure(mode):
    layer = failing_layer_class(tg.TraceAwareLayer, ValueError)(name="fails")
    with pytest.raises(ValueError):
        run(layer, mode, tf.ones((2, 3)))
    result = run(layer, mode, tf.ones((2, 4)))
    if mode == "symbolic":
        assert result.output_shape == (None, 4)
        assert kinds(layer)[-1] == "symbolic" and layer.trace_log[-1].error is None
    else:
        np.testing.assert_array_equal(result, np.full((2, 4), 2.0))
    if mode == "trace":
        assert [(e.kind.value, e.error is None) for e in layer.trace_log] == [
            ("trace", False), ("trace", True)]


def test_failed_trace_is_not_remembered_as_an_earlier_trace():
    layer = failing_layer_class(tg.TraceAwareLayer, ValueError)()
    step = tf.function(layer)
    with pytest.raises(ValueError):
        step(tf.ones((2, 3)))
    step(tf.ones((2, 4)))
    assert layer.trace_log[-1].kind is tg.TraceKind.TRACE and texts(layer.trace_log[-1].changes) == ()


def test_error_with_traceback_filtering_off_shows_the_full_stack():
    # Keras 3 has its own switch; Keras 2's filter follows TensorFlow's.
    config = keras.config if _compat.IS_KERAS_3 else tf.debugging
    layer = failing_layer_class(tg.TraceAwareLayer, ValueError)()
    with pytest.raises(ValueError) as filtered:
        layer(tf.ones((2, 3)))
    config.disable_traceback_filtering()
    try:
        with pytest.raises(ValueError) as info:
            layer(tf.ones((2, 3)))
    finally:
        config.enable_traceback_filtering()
    # The package's own folder, not any folder named `traceguard` (a checkout's is).
    package = os.path.dirname(os.path.abspath(tg.__file__)) + os.sep
    assert not [frame for frame in traceback.extract_tb(filtered.value.__traceback__)
                if os.path.abspath(frame.filename).startswith(package)]
    files = {os.path.abspath(frame.filename) for frame in traceback.extract_tb(info.value.__traceback__)}
    assert os.path.join(package, "_record", "recorder.py") in files


# --- traceguard's own failures ------------------------------------------------------
@pytest.fixture
def fresh_error_reports(monkeypatch):
    monkeypatch.setattr(_internal_errors, "_reported", set())


def _raise(*args, **kwargs):
    raise RuntimeError("bookkeeping broke")


# `_compat`'s names are replaced on the package, where `_recorder` looks them up at each
# call (`_compat.enclosing_tf_function()`); the log record asserted below shows it took.
INTERNALS = [
    (_recorder, "signature_of", "starting to record a run"),
    (_compat, "enclosing_tf_function", "starting to record a run"),
    (_compat, "in_symbolic_build", "starting to record a run"),
    (_compat, "current_replica", "starting to record a run"),
    (_compat, "default_graph", "starting to record a run"),
    (_layer_state.LayerTraceState, "remember", "finishing the record of a run"),
    (_compat, "start_creation_watch", "watching variable creation"),
]


@pytest.mark.parametrize("owner, name, where", INTERNALS, ids=[name for _, name, _ in INTERNALS])
def test_bookkeeping_failure_is_logged_once_and_the_call_goes_on(
        owner, name, where, monkeypatch, caplog, fresh_error_reports, seed_input):
    traced, plain = SeedLayer(), keras.layers.Dense(32)
    plain.build(seed_input.shape)
    traced(seed_input[:1])
    plain.set_weights(traced.dense.get_weights())
    monkeypatch.setattr(owner, name, _raise)
    step = tf.function(traced)
    with caplog.at_level(logging.ERROR, logger="traceguard"):
        first = step(seed_input)
        second = step(seed_input[:7])
    np.testing.assert_array_equal(first, plain(seed_input))
    np.testing.assert_array_equal(second, plain(seed_input[:7]))
    records = [r for r in caplog.records if r.name == "traceguard"]
    assert len(records) == 1
    assert records[0].getMessage().startswith(f"traceguard failed while {where}; the call goes on")
    assert _compat.describe_versions() in records[0].getMessage()
    assert records[0].exc_info[1].args == ("bookkeeping broke",)


def test_classification_failure_shows_the_run_by_its_place_when_the_log_is_read(
        monkeypatch, caplog, fresh_error_reports, seed_input):
    layer = SeedLayer()
    monkeypatch.setattr(_runs, "classify_run", _raise)
    result = tf.function(layer)(seed_input)  # Classified when read, not as the body runs.
    np.testing.assert_array_equal(result, layer(seed_input))
    with caplog.at_level(logging.ERROR, logger="traceguard"):
        kinds = [event.kind for event in layer.trace_log]
    assert TraceKind.TRACE in kinds and TraceKind.VARIABLE_RETRACE not in kinds
    assert [r.getMessage()[:77] for r in caplog.records if r.name == "traceguard"] == [
        "traceguard failed while classifying a run; the run is shown by its place only"]


def test_bookkeeping_failure_on_the_eager_path_does_not_break_the_call(
        monkeypatch, caplog, fresh_error_reports, seed_input):
    layer = SeedLayer()
    expected = layer(seed_input)
    # Each layer's state has its own counter (the log's, looked up once).
    monkeypatch.setattr(layer.__dict__[STATE_ATTRIBUTE], "count_eager_call", _raise)
    with caplog.at_level(logging.ERROR, logger="traceguard"):
        for _ in range(3):
            np.testing.assert_array_equal(layer(seed_input), expected)
    assert len([r for r in caplog.records if r.name == "traceguard"]) == 1


def test_budget_report_failure_does_not_break_the_call(monkeypatch, caplog, fresh_error_reports):
    class Identity(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs

    layer = Identity(max_traces=0, on_retrace="raise")
    monkeypatch.setattr(_recorder, "budget_message", _raise)
    with caplog.at_level(logging.ERROR, logger="traceguard"):
        np.testing.assert_array_equal(tf.function(layer)(tf.ones((2,))), tf.ones((2,)))
    assert [r.getMessage()[:60] for r in caplog.records if r.name == "traceguard"] == [
        "traceguard failed while reporting a trace over max_traces; t"]


def test_user_error_still_passes_through_when_bookkeeping_fails(monkeypatch, caplog, fresh_error_reports):
    monkeypatch.setattr(_recorder, "signature_of", _raise)
    layer = failing_layer_class(tg.TraceAwareLayer, KeyError)()
    # Keras 2 re-raises a KeyError from `call` in a graph as a RuntimeError naming it,
    # as for a plain layer (measured in the test above).
    expected, match = (KeyError, "width 3 is not supported") if _compat.IS_KERAS_3 else (
        RuntimeError, "\n    KeyError: 'width 3 is not supported'\n")
    with caplog.at_level(logging.ERROR, logger="traceguard"), pytest.raises(expected, match=match):
        tf.function(layer)(tf.ones((2, 3)))
