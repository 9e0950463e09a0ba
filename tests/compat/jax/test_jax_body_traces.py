"""The hook on JAX's tracing-cache misses below `jax.jit` (`_compat.jax.bodies`), on real traces.

When one of these fails after a JAX upgrade, `partial_eval.trace_to_jaxpr`'s cache or its
`explain` moved (jax/_src/interpreters/partial_eval.py, jax/_src/util.py `_weakref_lru_cache`):
`traceguard/_compat/jax/bodies.py` needs a new branch.
"""

import inspect
import logging

import jax
import jax.numpy as jnp
import pytest
from helpers import changes, record_kind

from traceguard._compat.jax import bodies as _jax_bodies
from traceguard._core.functions import BODY_ORIGIN
from traceguard._core.verdicts import Reason
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("jax")

HERE = __file__
EXPLANATIONS = "jax._src.interpreters.partial_eval"  # The logger of JAX's explanations.


def _bodies(records):
    return [r for r in records.records() if r.origin == BODY_ORIGIN]


def ema(xs):
    def body(carry, x):
        return 0.9 * carry + 0.1 * x, carry

    return jax.lax.scan(body, jnp.float32(0), xs)


def test_the_hook_is_patched_in_while_listening_and_restored_exactly():
    from jax._src.interpreters import partial_eval

    cached, explain = partial_eval.trace_to_jaxpr, partial_eval.explain
    code = _jax_bodies._LAMBDA.__code__
    with _observers.listening_to_traces(FunctionRecords().on_trace):
        assert partial_eval.trace_to_jaxpr is not cached
        assert _jax_bodies._LAMBDA() is _jax_bodies._on_miss  # Whatever `jax_explain_cache_misses` says.
    assert partial_eval.trace_to_jaxpr is cached is _jax_bodies._CACHED
    assert _jax_bodies._LAMBDA.__code__ is code and _jax_bodies._CELL.cell_contents is explain
    assert _jax_bodies._LAMBDA() is None  # `jax_explain_cache_misses` is off.


def test_an_eager_scan_with_a_body_made_per_call_records_each_call(records):
    xs = jnp.ones(3, jnp.float32)
    for _ in range(3):
        ema(xs)
    bodies = _bodies(records)
    assert [record_kind(r) for r in bodies] == ["first", "new_function", "new_function"]
    assert [(r.name, r.traced_for, r.body_of, r.parent) for r in bodies] == [
        ("body", "scan", "ema", None)] * 3
    assert changes(bodies[2]) == ["body: function object #2 -> #3 (a new function object from the same code)"]
    assert str(bodies[0].definition) == f"{HERE}:{ema.__code__.co_firstlineno + 1}"
    assert str(bodies[0].call_site) == f"{HERE}:{ema.__code__.co_firstlineno + 4}"
    assert [str(spec) for spec in bodies[0].signature.values()] == ["float32[]", "float32[]"]


def test_a_body_inside_a_jit_trace_is_part_of_it(records):
    jitted = jax.jit(ema)
    jitted(jnp.ones(3))
    jitted(jnp.ones(3))  # A hit: neither traces.
    jitted(jnp.ones(4))
    outer = [r for r in records.records() if r.name == "ema"]
    bodies = _bodies(records)
    assert [r.parent for r in bodies] == [r.serial for r in outer]
    assert [r.reason for r in bodies] == [Reason.FIRST_TRACE, Reason.PART_OF_TRACE]
    assert bodies[1].kind.value == "trace"


def test_a_weakly_typed_initial_carry_traces_the_body_twice_in_one_call(records):
    def total(xs):
        def body(carry, x):
            return carry + x, carry

        return jax.lax.scan(body, 0, xs)  # A weak int32 carry; the body returns float32.

    total(jnp.ones(3, jnp.float32))
    first, second = _bodies(records)
    assert (record_kind(first), record_kind(second)) == ("first", "retrace")
    assert changes(second) == ["carry: dtype int32 -> float32"]
    assert first.signature["carry"].weak_type and not second.signature["carry"].weak_type


def test_each_control_flow_records_what_jax_traced_it_for(records):
    def loops(n):
        count = jax.lax.while_loop(lambda c: c < n, lambda c: c + 1, 0)
        total = jax.lax.fori_loop(0, 3, lambda i, c: c + i, 0)
        branch = jax.lax.cond(n > 1, lambda x: x + 1, lambda x: x - 1, 1.0)
        return count, total, branch, jax.checkpoint(lambda x: x * 2)(1.0)

    loops(3)
    assert [(r.traced_for, r.body_of) for r in _bodies(records)] == [
        ("while_cond", "loops"), ("while_body", "loops"), ("fori_loop", "loops"), ("cond", "loops"),
        ("cond", "loops"), ("checkpoint / remat", "loops")]
    fori = _bodies(records)[2]  # JAX traces a wrapper of it: the record names the user's lambda.
    assert (fori.name, fori.qualname) == ("<lambda>", "test_each_control_flow_records_what_jax_traced_"
                                                      "it_for.<locals>.loops.<locals>.<lambda>")


def test_every_miss_jax_explains_is_a_record_and_its_words_are_unchanged(records, caplog):
    xs = jnp.ones(3, jnp.float32)
    with jax.explain_cache_misses(True), caplog.at_level(logging.WARNING, EXPLANATIONS):
        ema(xs)
        line = inspect.currentframe().f_lineno - 1
        ema(xs)
        jax.jit(ema)(jnp.ones(5))  # The jit's miss, then its body's.
    messages = [r.getMessage().splitlines() for r in caplog.records]
    names = [lines[2].split()[0] if lines[1] == "  never seen function:" else lines[1].split()[1]
             for lines in messages]
    mine = [r.name for r in sorted(records.records(), key=lambda r: r.serial) if not r.library_function]
    assert names == mine == ["body", "body", "ema", "body"]
    # JAX names the user's line as the call site, not the hook's frames (registered as exclusions).
    assert messages[0][0].startswith(f"TRACING CACHE MISS at {HERE}:{ema.__code__.co_firstlineno + 4}")
    assert "being re-defined repeatedly" in "\n".join(messages[1])
    assert f"{HERE}:{line}" not in messages[0][0]  # The site is where `lax.scan` is called.
