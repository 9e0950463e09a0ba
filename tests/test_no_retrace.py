"""`traceguard.no_retrace()`, `TraceMonitor(no_retrace_after=...)` and `@pytest.mark.no_retrace`,
on real `tf.function`s and real `fit` calls (TensorFlow; JAX: tests/test_jax_no_retrace.py)."""

import pickle
import textwrap

import numpy as np
import pytest
import tensorflow as tf
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._compat import _function_tracing
from traceguard._core.errors import retrace_error
from traceguard._core.specs import format_signature
from traceguard._record import observers
from traceguard._record.runs import active_runs
from traceguard.callbacks import TraceMonitor

pytest_plugins = ["pytester"]

keras = _compat.keras
HERE = __file__


def line_of(text):
    """The line of this file holding `text` (a call site the errors must name)."""
    with open(HERE) as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


def assert_clean():
    """traceguard's own state after a block, however it ended."""
    assert observers.observers == () and observers.function_observers == ()
    assert observers.function_records is None
    assert not _function_tracing.is_installed()
    assert _function_tracing.running_traces() == ()
    assert active_runs() == []


def small_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="hidden"),
                              keras.layers.Dense(1, name="out")])
    model.compile("sgd", "mse")
    return model


def data(samples):
    return np.ones((samples, 4), "float32"), np.ones((samples, 1), "float32")


def test_retrace_inside_the_block_raises_during_the_trace_with_what_changed():
    calls = []

    @tf.function
    def scale(x):
        calls.append(x.shape)  # The Python body runs only when TensorFlow traces.
        return x * 2

    with tg.watch():
        scale(tf.ones((3,)))
        with tg.no_retrace():
            scale(tf.ones((3,)))  # Cached: no trace, no error.
            with pytest.raises(tg.RetraceError) as raised:
                scale(tf.ones((5,)))  # retrace-call
    error = raised.value
    assert type(error) is tg.RetraceError
    assert len(calls) == 2  # It raised during the second trace, after the body ran.
    assert (error.function, error.kind, texts(error.changes)) == ("scale", "retrace", ("x: dim 0 3 -> 5",))
    assert format_signature(error.signature) == {"x": "float32[5]"}
    assert str(error.call_site) == f"{HERE}:{line_of('# retrace-call')}"
    assert "pad or bucket" in error.hint.lower() or "reduce_retracing" in error.hint
    message = str(error)
    assert message.startswith("`scale` retraced inside the `traceguard.no_retrace()` block.\n")
    assert f"   called at: {HERE}:{line_of('# retrace-call')}\n" in message
    assert "   changed: x: dim 0 3 -> 5\n" in message
    assert "   why: The tf.function `scale` traced again because the signature changed: x: dim 0 3 -> 5." \
        in message
    assert_clean()


def test_a_failed_trace_is_not_cached_and_outside_the_block_the_function_works():
    body_runs = []

    @tf.function
    def scale(x):
        body_runs.append(x.shape)  # Runs only when TensorFlow traces.
        return x * 2

    scale(tf.ones((3,)))
    with tg.no_retrace():
        for _ in range(2):  # TensorFlow cached nothing: the second call traces, and fails, again.
            with pytest.raises(tg.RetraceError):
                scale(tf.ones((5,)))
    assert_clean()
    assert len(body_runs) == 3
    assert scale(tf.ones((5,))).numpy().tolist() == [2.0] * 5
    scale(tf.ones((5,)))
    assert len(body_runs) == 4


def test_a_first_trace_inside_the_block_fails_unless_first_traces_are_allowed():
    @tf.function
    def new(x):
        return x + 1

    with pytest.raises(tg.RetraceError, match=r"^`new` traced for the first time inside the "):
        with tg.no_retrace():
            new(tf.ones((2,)))
    with tg.no_retrace(allow_first_traces=True):
        new(tf.ones((2,)))  # Its warm-up.
        with pytest.raises(tg.RetraceError) as raised:
            new(tf.ones((3,)))
    assert raised.value.kind == "retrace" and texts(raised.value.changes) == ("x: dim 0 2 -> 3",)
    assert_clean()


def test_without_a_recorded_warm_up_the_error_says_what_it_cannot_know():
    @tf.function
    def scale(x):
        return x * 2

    scale(tf.ones((3,)))  # Warm-up, while traceguard does not record.
    with pytest.raises(tg.RetraceError) as raised:
        with tg.no_retrace():
            scale(tf.ones((5,)))
    assert raised.value.kind == "trace" and texts(raised.value.changes) == ()
    assert ("changed: unknown: traceguard was not recording before the block, so it knows no earlier trace "
            "to compare with. Run the warm-up inside `traceguard.watch()` to see what changed.") \
        in " ".join(str(raised.value).split())
    assert_clean()


def test_warn_mode_warns_at_the_user_call_and_the_call_goes_on():
    @tf.function
    def scale(x):
        return x * 2

    with tg.watch():
        scale(tf.ones((3,)))
        with tg.no_retrace(on_retrace="warn"):
            with pytest.warns(UserWarning, match=r"`scale` retraced inside") as caught:
                result = scale(tf.ones((4,)))  # warned-call
            scale(tf.ones((4,)))  # Traced and cached: no second warning (warnings are errors here).
    assert result.numpy().tolist() == [2.0] * 4
    assert (caught[0].filename, caught[0].lineno) == (HERE, line_of("# warned-call"))
    assert_clean()


@pytest.mark.parametrize("arguments, message", [
    ({"on_retrace": "ignore"}, "`no_retrace(on_retrace=...)` expects one of 'raise', 'warn'. "
                               "Received: on_retrace='ignore'"),
    ({"allow_first_traces": "yes"}, "`no_retrace(allow_first_traces=...)` expects a bool. "
                                    "Received: allow_first_traces='yes'"),
])
def test_bad_arguments_name_the_argument_and_the_accepted_values(arguments, message):
    with pytest.raises(ValueError) as raised:
        with tg.no_retrace(**arguments):
            pass
    assert str(raised.value) == message
    assert_clean()


def test_a_users_exception_in_the_block_passes_unchanged():
    class Mine(Exception):
        pass

    @tf.function
    def fails(x):
        raise Mine("from the user")

    with pytest.raises(Mine, match="from the user"):
        with tg.no_retrace(allow_first_traces=True):
            fails(tf.ones((2,)))
    assert_clean()


def test_fit_with_a_partial_batch_raises_from_fit_with_the_reason_and_the_fix():
    model = small_model()
    x, y = data(70)
    with tg.watch():
        model.fit(x[:64], y[:64], batch_size=32, verbose=0)  # Warm-up.
        with tg.no_retrace():
            model.fit(x[:64], y[:64], batch_size=32, epochs=2, verbose=0)
            with pytest.raises(tg.RetraceError) as raised:
                model.fit(x, y, batch_size=32, verbose=0)  # fit-call
    error = raised.value
    assert type(error) is tg.RetraceError  # Not wrapped by Keras nor TensorFlow.
    assert error.kind == "retrace" and error.function in _compat.KERAS_STEP_FUNCTIONS
    assert str(error.call_site) == f"{HERE}:{line_of('# fit-call')}"
    assert any("dim 0 32 -> " in str(change) for change in error.changes), error.changes
    assert "`fit` got 70 samples in batches of 32: the last batch of 6" in error.hint
    assert " (the step of `fit`) retraced inside the `traceguard.no_retrace()` block." in str(error)
    assert "   layers traced in it: " in str(error) and "'hidden' (retrace)" in str(error)
    assert_clean()


def test_evaluate_after_fit_traces_the_test_step_for_the_first_time():
    model = small_model()
    x, y = data(64)
    with tg.watch():
        model.fit(x, y, batch_size=32, verbose=0)
        with pytest.raises(tg.RetraceError, match=r"traced for the first time") as raised:
            with tg.no_retrace():
                model.evaluate(x, y, batch_size=32, verbose=0)
        assert raised.value.kind == "trace"
        with tg.no_retrace(allow_first_traces=True):
            model.evaluate(x, y, batch_size=32, verbose=0)
            model.evaluate(x, y, batch_size=32, verbose=0)
    assert_clean()


def test_trace_monitor_fails_a_retrace_in_a_later_call():
    model = small_model()
    x, y = data(70)
    monitor = TraceMonitor(no_retrace_after="call")
    model.fit(x[:64], y[:64], batch_size=32, epochs=2, verbose=0, callbacks=[monitor])
    model.predict(x[:64], batch_size=32, verbose=0, callbacks=[monitor])  # A first trace: its warm-up.
    with pytest.raises(tg.RetraceError) as raised:
        model.fit(x, y, batch_size=32, verbose=0, callbacks=[monitor])  # monitor-call
    assert raised.value.kind == "retrace"
    assert str(raised.value.call_site) == f"{HERE}:{line_of('# monitor-call')}"
    assert "retraced after the first call (`TraceMonitor(no_retrace_after='call')`), during fit call 3" \
        in str(raised.value)
    del monitor, raised  # The monitor records between calls while it lives.
    import gc

    gc.collect()
    tf.function(lambda v: v)(tf.ones(()))  # Its observer leaves at the next trace.
    assert_clean()


class Probe(keras.callbacks.Callback):
    """At each epoch's start, runs a `tf.function` on as many samples as the epoch's number."""

    def __init__(self):
        super().__init__()
        self.summarize = tf.function(lambda x: tf.reduce_sum(x))

    def on_epoch_begin(self, epoch, logs=None):
        self.summarize(tf.ones((epoch + 1, 4)))  # probe-call


def test_trace_monitor_fails_a_retrace_after_the_first_epoch():
    model = small_model()
    x, y = data(64)
    monitor = TraceMonitor(no_retrace_after="epoch")
    with pytest.raises(tg.RetraceError) as raised:
        model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[monitor, Probe()])
    assert (raised.value.kind, texts(raised.value.changes)) == ("retrace", ("x: dim 0 1 -> 2",))
    assert str(raised.value.call_site) == f"{HERE}:{line_of('# probe-call')}"
    assert "after the first epoch (`TraceMonitor(no_retrace_after='epoch')`), during fit call 1, epoch 2" \
        in str(raised.value)
    observers.remove_observer(monitor._observer)
    assert_clean()


def test_trace_monitor_rejects_an_unknown_no_retrace_after():
    with pytest.raises(ValueError, match=r"^`TraceMonitor\(no_retrace_after=...\)` expects one of 'epoch', "
                                         r"'call', or None. Received: no_retrace_after='batch'$"):
        TraceMonitor(no_retrace_after="batch")


def test_retrace_error_keeps_its_facts_through_pickle_and_budget_use_is_unchanged():
    error = retrace_error("message", function="f", kind="retrace", changes=["x: dim 0 1 -> 2"])
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.function, copy.kind, texts(copy.changes)) == ("message", "f", "retrace",
                                                                  ("x: dim 0 1 -> 2",))
    assert tg.RetraceError("budget").function is None and tg.RetraceError.__bases__ == (Exception,)
    assert tg.RetraceError.__init__ is Exception.__init__  # AutoGraph re-raises it as itself.


def test_pytest_marker_fails_a_retrace_and_allows_first_traces(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_marked=textwrap.dedent("""
        import pytest
        import tensorflow as tf


        @pytest.mark.no_retrace
        def test_warm_up_only():
            step = tf.function(lambda x: x + 1)
            step(tf.ones((2,)))
            step(tf.ones((2,)))


        @pytest.mark.no_retrace
        def test_retraces():
            step = tf.function(lambda x: x + 1)
            step(tf.ones((2,)))
            step(tf.ones((3,)))


        @pytest.mark.no_retrace("yes")
        def test_bad_marker():
            pass
    """))
    result = pytester.runpytest("-p", "_traceguard_pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*RetraceError: `<lambda>` retraced inside the `traceguard.no_retrace()` block.",
        "*changed: x: dim 0 2 -> 3",
        "*`@pytest.mark.no_retrace` expects no arguments, or on_retrace= one of 'raise', 'warn'. "
        "Received: no_retrace('yes')",
    ])
    assert_clean()


def test_a_block_inside_a_trace_fails_a_layer_retrace_in_it():
    # The block opens inside `step`'s trace, which traceguard did not see start: the
    # layer's own retrace fails (raised in the traced body; AutoGraph and Keras re-raise
    # it as a RetraceError with their context around the message).
    class Scale(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs * 2

    layer = Scale(name="scale")

    @tf.function
    def step(a, b):
        with tg.no_retrace():
            return layer(a), layer(b)

    step(tf.ones((2,)), tf.ones((3,)))  # Two first traces of the layer in `step`: its warm-up.
    expected = (r"Layer 'scale' retraced inside the `traceguard.no_retrace\(\)` block.\n"
                r"\s+signature: inputs=float32\[5\]\n\s+changed: inputs: dim 0 3 -> 5")
    with pytest.raises(tg.RetraceError, match=expected):
        step(tf.ones((5,)), tf.ones((3,)))
    assert_clean()
