"""An eager JAX loop's `lambda` body or condition written in the loop's call (jax-ml/jax#587, #1394).

Outside `jax.jit`, JAX keys a `lax.while_loop`'s condition and body by the function object, and a
`lambda` written in the call is a new object each time that line runs: JAX explains each such miss
as "never seen function: <lambda>". traceguard records one trace per miss, and names the fix.
"""

import logging

import jax
import jax.numpy as jnp
import pytest

import traceguard as tg

pytestmark = pytest.mark.backend("jax")

EXPLANATIONS = "jax._src.interpreters.partial_eval"  # The logger of JAX's explanations.


def body(x):
    return x + 1.0


def count_up(limit):
    return jax.lax.while_loop(lambda x: x < limit, body, jnp.float32(0))


def _lambda_misses(caplog):
    """The misses JAX explained of a function named `<lambda>`."""
    return [r for r in caplog.records
            if "never seen function:" in r.getMessage() and "<lambda> id=" in r.getMessage()]


def test_a_lambda_written_in_the_loop_call_traces_at_every_run_with_the_fix(caplog):
    with jax.explain_cache_misses(True), caplog.at_level(logging.WARNING, EXPLANATIONS), \
            tg.watch() as explanation:
        for limit in (3.0, 3.0, 3.0):
            count_up(limit)
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "<lambda>"]
    assert len(runs.events) == len(_lambda_misses(caplog)) == 3  # traceguard's count, JAX's count.
    # Each is the first trace of a new object (of the same code after the first): no retrace.
    assert [event.kind.value for event in runs.events] == ["trace", "trace", "trace"]
    first, *later = runs.events
    assert "is written in the call to `lax.while_loop`" in first.hint
    assert "the same function object" in first.hint
    assert all("Define the body once" in event.hint for event in later)


def test_a_lambda_defined_once_or_under_jit_gets_no_such_hint(caplog):
    cond = lambda x: x < 3.0  # noqa: E731  Defined once: one object, one trace.

    @jax.jit
    def jitted(x):
        return jax.lax.while_loop(lambda y: y < x, body, jnp.float32(0))

    with jax.explain_cache_misses(True), caplog.at_level(logging.WARNING, EXPLANATIONS), \
            tg.watch() as explanation:
        for _ in range(2):
            jax.lax.while_loop(cond, body, jnp.float32(0))
        jitted(3.0)
        jitted(4.0)  # A hit of `jitted`: its condition is not traced again.
    lambdas = [runs for runs in explanation.functions.values() if runs.function == "<lambda>"]
    events = [event for runs in lambdas for event in runs.events]
    assert len(events) == len(_lambda_misses(caplog)) == 2
    assert [event.hint for event in events] == [None, None]
