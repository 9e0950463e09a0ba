"""Each second of a `jax.jit` miss is counted once: a jitted function calling another, on real
JAX calls. The wall-time checks compare sums measured around the same calls, never absolute times."""

import time

import jax
import jax.numpy as jnp
import pytest

import traceguard as tg

pytestmark = pytest.mark.backend("jax")


def runs_of(explanation, function):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == function]
    return runs


def test_an_enclosing_jit_s_total_includes_its_inner_jit_s_and_adds_up_to_the_misses():
    @jax.jit
    def inner(x):
        for _ in range(10):
            x = jnp.sin(x) @ x
        return x

    @jax.jit
    def outer(x):
        return inner(x) + 1

    inputs = [jnp.ones((n, n)).block_until_ready() for n in (4, 4, 5)]  # Made (compiled) untimed.
    with tg.watch():  # A process's first nested miss takes 20-30 ms more than its timed miss (measured).
        jax.jit(lambda x: jax.jit(lambda y: jnp.sin(y) @ y)(x) + 1)(inputs[0]).block_until_ready()
    walls = []
    with tg.watch() as explanation:
        for x in inputs:
            start = time.perf_counter()
            outer(x).block_until_ready()
            walls.append(time.perf_counter() - start)
    inner_runs, outer_runs = runs_of(explanation, "inner"), runs_of(explanation, "outer")
    assert [event.kind.value for event in outer_runs.events] == ["trace", "retrace"]
    assert [event.kind.value for event in inner_runs.events] == ["trace", "retrace"]
    outer_serials = {event.serial for event in outer_runs.events}
    assert all(event.parent in outer_serials for event in inner_runs.events)
    assert inner_runs.cost_seconds <= outer_runs.cost_seconds
    missed = walls[0] + walls[2]
    assert outer_runs.cost_seconds <= missed and outer_runs.cost_seconds > 0.8 * missed
    for event in outer_runs.events:
        assert event.cost_s == event.miss_s >= sum(event.phases.values())
    header = next(line for line in explanation.summary(brief=True).splitlines()
                  if line.startswith("Functions (2; "))
    assert f"misses took {outer_runs.cost_seconds:.2f} s" in header
