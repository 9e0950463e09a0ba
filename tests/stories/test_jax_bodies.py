"""JAX traces below `jax.jit` (#38): control-flow bodies in the report, as a user reads it.

JAX keeps one tracing cache for `jax.jit` and for the bodies it traces below it
(`lax.scan`, `lax.while_loop`, `lax.cond`, ...). Run eagerly with a body made per call,
a scan traces its body at every call; a weakly typed initial carry makes JAX trace
the body twice in one call; under `jax.jit` (Keras's own steps included) a body's trace
is part of the enclosing trace, never a retrace of its own.
"""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from trace_file_parity import assert_same_report

import traceguard as tg
from traceguard._core.functions import BODY_ORIGIN
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("jax")


def ema(xs):
    def body(carry, x):
        return 0.9 * carry + 0.1 * x, carry

    return jax.lax.scan(body, jnp.float32(0), xs)


def _body_runs(report):
    return [runs for runs in report.functions.values() if runs.function == "body"]


def test_an_eager_scan_body_made_per_call_is_reported_with_its_fix(tmp_path):
    path = tmp_path / "bodies.jsonl"
    xs = jnp.ones(4, jnp.float32)
    with tg.watch(trace_file=path) as report:
        for _ in range(3):
            ema(xs)
    (runs,) = _body_runs(report)
    # Each call's body is a new object: its first trace is a trace, and the report names the code
    # made anew (JAX's own explanation: "never seen function").
    assert [event.kind.value for event in runs.events] == ["trace", "trace", "trace"]
    second = runs.events[1]
    assert second.reason.startswith("The scan body of `ema` (`body`) is a new function object (#2 so far)")
    assert "traces it and compiles the loop at every call" in second.reason
    assert second.hint.startswith("Define the body once, at module level (not inside `ema`)")
    assert "`jax.jit` `ema` once" in second.hint
    assert_same_report(report, path)


def test_a_weakly_typed_initial_carry_is_named_with_a_typed_one_as_the_fix():
    def total(xs):
        def body(carry, x):
            return carry + x, carry

        return jax.lax.scan(body, 0, xs)

    with tg.watch() as report:
        total(jnp.ones(3, jnp.float32))
    (runs,) = _body_runs(report)
    first, second = runs.events
    assert (first.kind.value, second.kind.value) == ("trace", "retrace")
    assert [str(change) for change in second.changes] == ["carry: dtype int32 -> float32"]
    assert second.reason == ("The scan body of `total` (`body`) traced again because its arguments "
                             "changed: carry: dtype int32 -> float32.")
    assert second.hint.startswith("The initial carry `carry` is weakly typed")
    assert "`jnp.float32(0)` or `jnp.zeros((), jnp.float32)`" in second.hint


def test_a_body_retraced_with_its_jitted_function_is_part_of_that_retrace():
    jitted = jax.jit(ema)
    with tg.watch() as report:
        jitted(jnp.ones(3))
        jitted(jnp.ones(4))
    (body,) = _body_runs(report)
    (outer,) = [runs for runs in report.functions.values() if runs.function == "ema"]
    assert [event.kind.value for event in outer.events] == ["trace", "retrace"]
    assert [event.kind.value for event in body.events] == ["trace", "trace"]
    assert [event.parent for event in body.events] == [event.serial for event in outer.events]
    assert body.events[1].hint is None
    assert "traced as part of the trace that runs it" in body.events[1].reason


@pytest.mark.slow
def test_an_lstm_fit_on_jax_reports_no_retrace_of_its_scan_body():
    # Keras's RNN runs its cell in a `lax.scan` inside the jitted train step: JAX traces the
    # body within each trace of the step. Batches of one size: one trace of the step, and no retrace
    # anywhere; the bodies are recorded, each a trace, part of the step's.
    model = keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    records = FunctionRecords()
    with tg.watch() as report, _observers.listening_to_traces(records.on_trace):
        model.fit(np.ones((64, 5, 3), "float32"), np.ones((64, 1), "float32"), batch_size=32, verbose=0)
    assert [(runs.function, runs.counts()["trace"], runs.counts()["retrace"])
            for runs in report.functions.values()] == [("train_step", 1, 0)]
    assert report.count("retrace") == 0
    (step,) = [r for r in records.records() if r.name == "train_step"]
    bodies = [r for r in records.records() if r.origin == BODY_ORIGIN]
    assert bodies and {r.kind.value for r in bodies} == {"trace"}
    assert step.serial in {r.parent for r in bodies}
    # The others run inside Keras's symbolic pass at the start of `fit` (`jax.eval_shape`, a trace).
    serials = {r.serial for r in records.records()}
    assert all(r.parent in serials for r in bodies)
