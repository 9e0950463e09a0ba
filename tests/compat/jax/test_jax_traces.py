"""The `jax.jit` trace hook (`_compat.jax.traces`) on real traces, with `FunctionRecords`.

When one of these fails after a JAX upgrade, `pjit._trace_for_jit` moved:
`traceguard/_compat/jax/traces.py` needs a new branch.
"""

import functools
import inspect
import logging
import re

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from helpers import changes, record_kind

from traceguard._compat.jax import traces as _jax_traces
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("jax")

HERE = __file__


def test_the_hook_is_patched_in_while_listening_and_restored_exactly():
    from jax._src import pjit

    original = pjit._trace_for_jit
    with _observers.listening_to_traces(FunctionRecords().on_trace):
        assert pjit._trace_for_jit is not original
    assert pjit._trace_for_jit is original is _jax_traces._ORIGINAL


def test_a_shape_change_retraces_with_the_dimension_named(records):
    @jax.jit
    def f(x):
        return x * 2

    two, three = jnp.ones(2), jnp.ones(3)  # jnp's own jitted functions trace too.
    f(two)
    f(two)  # A cache hit: no record.
    f(three)
    first, second = [r for r in records.records() if r.name == "f"]
    assert [record_kind(first), record_kind(second)] == ["first", "retrace"]
    assert changes(second) == ["x: dim 0 2 -> 3"]
    assert str(second.call_site) == f"{HERE}:{inspect.currentframe().f_lineno - 4}"
    assert (second.origin, second.name, second.phase) == ("jax.jit", "f", None)
    assert str(second.definition) == f"{HERE}:{f.__wrapped__.__code__.co_firstlineno}"


def test_jax_s_own_explanation_names_the_user_s_call_site_while_watched(records, caplog):
    # `jax_explain_cache_misses` names a miss's call site by the innermost frame outside JAX
    # (`source_info_util.user_frames`) and calls a site that missed before a re-definition. The
    # hooks' modules are JAX's exclusions: the site is this line, and `g` is not taken for `f` again.
    @jax.jit
    def f(x):
        return x

    @jax.jit
    def g(x):
        return x

    explanations = "jax._src.interpreters.partial_eval"  # The logger of JAX's explanations.
    with jax.explain_cache_misses(True), caplog.at_level(logging.WARNING, explanations):
        f(1.0)
        line = inspect.currentframe().f_lineno - 1
        g(1.0)
    messages = [r.getMessage().splitlines() for r in caplog.records]
    test = "test_jax_s_own_explanation_names_the_user_s_call_site_while_watched"
    # `file:line:column (function)`, without the column where Python has none (3.10).
    sites = [re.sub(r":(\d+):\d+ \(", r":\1 (", lines[0]) for lines in messages]
    assert sites == [f"TRACING CACHE MISS at {HERE}:{line} ({test}):",
                     f"TRACING CACHE MISS at {HERE}:{line + 2} ({test}):"]
    assert [lines[1] for lines in messages] == ["  never seen function:"] * 2
    assert [lines[2].split()[0] for lines in messages] == ["f", "g"]
    assert [len(lines) for lines in messages] == [3, 3]  # No "maybe the function is being re-defined".
    assert [r.name for r in records.records()] == ["f", "g"]


def test_a_static_python_argument_retrace_names_it(records):
    @functools.partial(jax.jit, static_argnums=1)
    def f(x, step):
        return x * step

    f(jnp.ones(2), 0)
    f(jnp.ones(2), 1)
    assert changes([r for r in records.records() if r.name == "f"][1]) == ["step: 0 -> 1"]


def test_a_nested_jit_names_the_trace_it_ran_in(records):
    @jax.jit
    def inner(x):
        return x + 1

    @jax.jit
    def outer(x):
        return inner(x) * 2

    outer(jnp.ones(2))
    by_name = {r.name: r for r in records.records()}
    assert by_name["inner"].parent == by_name["outer"].serial


def test_keras_fit_on_jax_records_its_train_step_called_from_the_test(records):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((6, 4), "float32"), np.ones((6, 2), "float32"), batch_size=4, verbose=0)
    fit_line = inspect.currentframe().f_lineno - 1
    steps = [r for r in records.records() if r.name == "train_step"]
    assert [record_kind(r) for r in steps] == ["first", "retrace"]  # Batch 4, then the last batch of 2.
    assert {str(r.call_site) for r in steps} == {f"{HERE}:{fit_line}"}
    assert any(c.aspect == "dim" and (c.old, c.new) == (4, 2) for c in steps[1].changes)


# --- retraces that built the same jaxpr (`jaxpr_fingerprint`) --------------------------------
def test_jit_result_holds_the_traced_jaxpr():
    # `_trace_for_jit` returns a `PjitParams` whose `params["jaxpr"]` is the ClosedJaxpr traced.
    seen = []
    original = _jax_traces._ORIGINAL

    def spy(*args):
        result = original(*args)
        seen.append(result)
        return result

    _jax_traces._pjit._trace_for_jit = spy
    try:
        jax.jit(lambda x: x * 2.0)(jnp.ones(3))
    finally:
        _jax_traces._pjit._trace_for_jit = original
    jaxpr = seen[-1].params["jaxpr"]
    assert [equation.primitive.name for equation in jaxpr.jaxpr.eqns] == ["mul"]


def test_a_retrace_with_the_same_jaxpr_is_flagged_and_one_with_another_is_not(records):
    @jax.jit
    def shapes(x):
        return jnp.sum(x * 2.0) + jnp.reshape(x, (-1,))[0]

    def branch(x, flag):
        return x + 1.0 if flag else x * 3.0

    branching = jax.jit(branch, static_argnums=1)
    for length in (2, 3):
        shapes(jnp.ones((length, 3)))
    branching(jnp.ones(2), True)
    branching(jnp.ones(2), False)
    by_name = {}
    for record in records.records():
        by_name.setdefault(record.name, []).append(record)
    first, second = by_name["shapes"]
    assert (first.same_graph_as, second.same_graph_as) == (None, first.serial)
    assert [record.same_graph_as for record in by_name["branch"]] == [None, None]


def test_jaxpr_fingerprint_differs_by_constant_and_not_by_shape():
    def fingerprint(function, *args):
        return _jax_traces.jaxpr_fingerprint(jax.make_jaxpr(function)(*args))

    assert fingerprint(lambda x: x * 2.0, jnp.ones(2)) == fingerprint(lambda x: x * 2.0, jnp.ones(5))
    assert fingerprint(lambda x: x * 2.0, jnp.ones(2)) != fingerprint(lambda x: x * 3.0, jnp.ones(2))
