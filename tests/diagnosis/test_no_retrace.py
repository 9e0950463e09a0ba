"""`traceguard.no_retrace()`, `TraceMonitor(no_retrace_after=...)` and `@pytest.mark.no_retrace`,
on real `tf.function`s and real `fit` calls (TensorFlow; JAX: tests/diagnosis/test_jax_no_retrace.py)."""

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

pytestmark = pytest.mark.backend("tensorflow")

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


def test_each_functions_first_trace_is_its_warm_up_unless_first_traces_are_not_allowed():
    @tf.function
    def new(x):
        return x + 1

    with tg.no_retrace():
        new(tf.ones((2,)))  # Its warm-up.
        with pytest.raises(tg.RetraceError) as raised:
            new(tf.ones((3,)))
    assert raised.value.kind == "retrace" and texts(raised.value.changes) == ("x: dim 0 2 -> 3",)

    @tf.function
    def fresh(x):
        return x + 1

    with pytest.raises(tg.RetraceError) as raised:
        with tg.no_retrace(allow_first_traces=False):
            fresh(tf.ones((2,)))
    assert str(raised.value).startswith("`fresh` traced for the first time inside the ")
    assert raised.value.kind == "trace"
    assert "changed:" not in str(raised.value)  # TensorFlow says it never traced before: nothing changed.
    assert_clean()


def test_without_a_recorded_warm_up_a_retrace_fails_and_says_what_it_cannot_know():
    @tf.function
    def scale(x):
        return x * 2

    scale(tf.ones((3,)))  # Warm-up, while traceguard does not record.
    with pytest.raises(tg.RetraceError) as raised:
        with tg.no_retrace():
            scale(tf.ones((5,)))  # unrecorded-call
    error = raised.value
    assert (error.kind, texts(error.changes)) == ("retrace", ())
    assert error.reason == ("The tf.function `scale` traced again for a signature its cache did not hold; "
                            "it had traced once before traceguard recorded it, so its first trace seen "
                            "here is a retrace.")
    message = " ".join(str(error).split())
    assert message.startswith("`scale` retraced inside the `traceguard.no_retrace()` block. called at: "
                              f"{HERE}:{line_of('# unrecorded-call')} signature: x=float32[5] changed: "
                              "unknown: traceguard did not record the function's earlier traces, so it "
                              "knows no earlier signature to compare with. Run the warm-up inside "
                              "`traceguard.watch()` to see what changed. why: The tf.function `scale`")
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
        with tg.no_retrace(allow_first_traces=False):
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


def test_evaluate_after_fit_passes_and_fails_only_when_first_traces_are_not_allowed():
    model = small_model()
    x, y = data(64)
    with tg.watch():
        model.fit(x, y, batch_size=32, verbose=0)
        with tg.no_retrace():  # The test step's first trace is its warm-up.
            model.evaluate(x, y, batch_size=32, verbose=0)
            model.evaluate(x, y, batch_size=32, verbose=0)
    model = small_model()
    with tg.watch():
        model.fit(x, y, batch_size=32, verbose=0)
        with pytest.raises(tg.RetraceError, match=r"traced for the first time") as raised:
            with tg.no_retrace(allow_first_traces=False):
                model.evaluate(x, y, batch_size=32, verbose=0)
    assert raised.value.kind == "trace"
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
    call_site = str(raised.value.call_site)  # Outside the assert: its temporaries would keep `raised`.
    assert call_site == f"{HERE}:{line_of('# monitor-call')}"
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


def test_pytest_marker_is_no_retrace_around_the_test_with_its_arguments_and_defaults(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_marked=textwrap.dedent("""
        import pytest
        import tensorflow as tf


        @pytest.fixture
        def warmed_up():
            step = tf.function(lambda x: x * 2)
            step(tf.ones((2,)))  # In the fixture: before the marker's guard.
            return step


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


        @pytest.mark.no_retrace
        def test_retraces_what_a_fixture_warmed_up(warmed_up):
            warmed_up(tf.ones((4,)))


        @pytest.mark.no_retrace(allow_first_traces=False)
        def test_first_trace_not_allowed():
            tf.function(lambda x: x - 1)(tf.ones((2,)))


        @pytest.mark.no_retrace(on_retrace="warn")
        def test_warns():
            step = tf.function(lambda x: x + 1)
            step(tf.ones((2,)))
            with pytest.warns(UserWarning, match="retraced during the test"):
                step(tf.ones((3,)))


        @pytest.mark.no_retrace("yes")
        def test_bad_marker():
            pass


        @pytest.mark.no_retrace(allow_first_traces="no")
        def test_bad_value():
            pass
    """))
    result = pytester.runpytest("-p", "_traceguard_pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=5)
    result.stdout.fnmatch_lines([
        "*RetraceError: `<lambda>` retraced during the test (`@pytest.mark.no_retrace`).",
        "*changed: x: dim 0 2 -> 3",
    ])
    result.stdout.fnmatch_lines([
        "*RetraceError: `<lambda>` retraced during the test (`@pytest.mark.no_retrace`).",
        "*signature: x=float32?4?",
        "*changed: unknown: traceguard did not record the function's earlier traces*",
    ])
    result.stdout.fnmatch_lines(
        ["*RetraceError: `<lambda>` traced for the first time during the test (`@pytest.mark.no_retrace`)."])
    result.stdout.fnmatch_lines([
        "*`@pytest.mark.no_retrace` takes the keyword arguments of `traceguard.no_retrace()`: "
        "on_retrace, allow_first_traces. Received: no_retrace('yes')",
    ])
    result.stdout.fnmatch_lines(["*`@pytest.mark.no_retrace(allow_first_traces=...)` expects a bool. "
                                 "Received: allow_first_traces='no'"])
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
