"""jax.jit's cache key as traceguard records it (#31): weak types, static arguments, pytrees, function
objects; and no trace recorded where the body did not run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import texts

import traceguard as tg
from traceguard._compat.jax import traces as _jax_traces
from traceguard._core.changes import Aspect
from traceguard._core.specs import ObjectSpec, TensorSpec
from traceguard._core.verdicts import Hint

pytestmark = [pytest.mark.backend("jax"), pytest.mark.without_keras]


def events_of(explanation, name):
    return [event for runs in explanation.functions.values() if runs.function == name
            for event in runs.events]


def test_every_recorded_trace_ran_the_body_over_hits_and_misses():
    bodies = []

    @jax.jit
    def step(i, x):
        bodies.append(1)
        return i + 1, x * 2

    with tg.watch() as explanation:
        i = 0
        for rows in (2, 2, 3, 2, 3):
            i, _ = step(i, jnp.ones(rows))  # A Python int, then the weakly typed int32 it returns.
    assert len(events_of(explanation, "step")) == len(bodies) == 2
    assert not _jax_traces.is_installed()


def test_a_weakly_typed_scalar_becoming_typed_is_named_with_its_fix():
    f = jax.jit(lambda x, lr: x * lr)
    with tg.watch() as explanation:
        f(jnp.ones(2), 0.1)
        f(jnp.ones(2), 0.2)  # The same key: a weakly typed float32.
        f(jnp.ones(2), np.float32(0.1))
    events = events_of(explanation, "<lambda>")
    assert [event.kind.value for event in events] == ["trace", "retrace"]
    (change,) = events[1].changes
    assert (change.parameter, change.aspect, str(change)) == (
        "lr", Aspect.WEAK_TYPE, "lr: weakly typed float32[] -> float32[]")
    assert change.old == TensorSpec("float32", (), "", True)
    assert events[1].verdict.hint is Hint.WEAK_TYPE and "np.float32(...)" in events[1].hint


def test_a_static_argument_is_compared_by_value_and_never_told_to_become_an_array():
    def scale(x, k):
        return x * k

    jitted = jax.jit(scale, static_argnums=1)
    with tg.watch() as explanation:
        jitted(jnp.ones(3), 2)
        jitted(jnp.ones(3), 3)
    (retrace,) = events_of(explanation, "scale")[1:]
    (change,) = retrace.changes
    assert (change.parameter, change.aspect, change.new.static) == ("k", Aspect.VALUE, True)
    assert retrace.verdict.hint is Hint.STATIC_VALUE and "jnp.asarray" not in retrace.hint


def test_a_static_object_without_eq_is_compared_by_identity():
    class Config:
        def __init__(self, a):
            self.a = a

        def __hash__(self):
            return hash(self.a)

    def f(x, config):
        return x * config.a

    jitted = jax.jit(f, static_argnums=1)
    with tg.watch() as explanation:
        for _ in range(3):
            jitted(jnp.ones(2), Config(2))
    events = events_of(explanation, "f")
    assert len(events) == 3
    for event in events[1:]:
        (change,) = event.changes
        assert (change.parameter, change.aspect) == ("config", Aspect.IDENTITY)
        assert isinstance(change.new, ObjectSpec) and change.new.static
        assert event.verdict.hint is Hint.STATIC_IDENTITY and "`__eq__`" in event.hint


def test_none_for_an_optional_argument_is_a_new_structure():
    @jax.jit
    def f(logits, x_in=None):
        return logits if x_in is None else logits + x_in

    with tg.watch() as explanation:
        f(jnp.ones(3), jnp.ones(3))
        f(jnp.ones(3), None)  # An empty pytree where an array was (jax#2720).
    (retrace,) = events_of(explanation, "f")[1:]
    assert texts(retrace.changes) == ("x_in: float32[3] -> None",)
    assert retrace.changes[0].aspect is Aspect.STRUCTURE


def test_a_jitted_lambda_made_per_call_gets_jax_s_fix_not_tf_function_s():
    with tg.watch() as explanation:
        for _ in range(3):
            jax.jit(lambda x: x + 1)(jnp.ones(2))
    events = events_of(explanation, "<lambda>")
    # Each new lambda is a function JAX has never seen ("never seen function"): a first trace of it.
    assert [event.kind.value for event in events] == ["trace", "trace", "trace"]
    assert all(event.changes[0].aspect is Aspect.FUNCTION_OBJECT for event in events[1:])
    assert all(event.verdict.hint is Hint.CREATE_FUNCTION_ONCE for event in events[1:])
    assert all("`jax.jit`" in event.hint and "tf.function" not in event.hint for event in events[1:])


def test_a_call_under_another_tracing_context_names_the_value_by_name():
    @jax.jit
    def product(x):
        return x @ x

    x = jnp.ones((3, 3))
    with tg.watch() as explanation:
        product(x)
        with jax.default_matmul_precision("float32"):
            product(x)  # JAX keys the trace by its tracing context first.
            product(x)  # Hit.
        product(x)  # Hit: the first key again.
        with jax.default_matmul_precision("bfloat16"):
            product(x)
        with jax.numpy_rank_promotion("warn"):
            product(x)  # Closest to the first context (one value differs), not to the latest (two).
    events = events_of(explanation, "product")
    assert [event.kind.value for event in events] == ["trace", "retrace", "retrace", "retrace"]
    assert [texts(event.changes) for event in events[1:]] == [
        ("jax_default_matmul_precision: None -> float32 (tracing context)",),
        # Both earlier contexts differ in one value: the latest is the closest.
        ("jax_default_matmul_precision: float32 -> bfloat16 (tracing context)",),
        ("jax_numpy_rank_promotion: allow -> warn (tracing context)",)]
    assert events[1].changes[0].aspect is Aspect.CONTEXT
    assert events[1].verdict.hint is Hint.TRACING_CONTEXT
    assert events[1].reason.endswith("because its tracing context changed: "
                                     "jax_default_matmul_precision: None -> float32 (tracing context).")
    assert "`jax_default_matmul_precision` is part of `jax.jit`'s cache key" in events[1].hint
    # The same jaxpr under another precision lowers to another program: not claimed as waste.
    assert [event.same_graph_as for event in events[1:]] == [None, None, None]


def test_the_same_jaxpr_in_the_same_context_is_still_the_same_graph():
    @jax.jit
    def double(x):
        return x * 2

    with tg.watch() as explanation:
        double(jnp.ones(2))
        double(jnp.ones(3))
    first, retrace = events_of(explanation, "double")
    assert texts(retrace.changes) == ("x: dim 0 2 -> 3",)
    assert retrace.same_graph_as == first.serial
