"""The cost ranking, the functions' header and the headline's counts, from values alone: each
second counted once, the avoidable part first, function traces as the headline's unit."""

import types

from traceguard._core.function_rules import is_avoidable
from traceguard._core.kinds import TraceKind
from traceguard._core.verdicts import Hint, Reason
from traceguard._reports import function_costs as costs
from traceguard._reports.headline import headline


def event(serial, kind, cost, parent=None, avoidable=None):
    kind = TraceKind(kind)
    avoidable = kind in (TraceKind.RETRACE, TraceKind.VARIABLE_RETRACE) if avoidable is None else avoidable
    return types.SimpleNamespace(serial=serial, kind=kind, cost_s=cost, parent=parent, avoidable=avoidable)


def runs(function, *events, phases=None):
    kinds = {}
    for item in events:
        kinds[item.kind.value] = kinds.get(item.kind.value, 0) + 1
    return types.SimpleNamespace(
        function=function, events=list(events), kind_counts=kinds,
        cost_seconds=sum(item.cost_s for item in events),
        avoidable_seconds=sum(item.cost_s for item in events if item.avoidable),
        phase_seconds=phases or {"trace": sum(item.cost_s for item in events)}, seconds=0.0,
        traces=len(events), compilations=0, objects=1, definition=None)


# A Keras fit: the loop function's only trace encloses the step's first trace and its variable
# retrace (a fix removes it); then a retrace of both for a new sequence length.
LOOP = runs("multi_step_on_iterator", event(1, "trace", 7.0), event(4, "retrace", 3.0))
STEP = runs("one_step_on_data", event(2, "trace", 4.0, parent=1),
            event(3, "variable_retrace", 2.0, parent=1), event(5, "retrace", 2.5, parent=4))


def test_a_miss_is_avoidable_when_a_fix_removes_it():
    assert is_avoidable(TraceKind.RETRACE, Hint.VARYING_LENGTH)
    assert is_avoidable(TraceKind.VARIABLE_RETRACE, Hint.BUILD_OPTIMIZER_FIRST)
    assert is_avoidable(TraceKind.COMPILE, Hint.XLA_FIXED_SHAPES)
    assert not is_avoidable(TraceKind.VARIABLE_RETRACE, Hint.METRIC_STATE)  # Paid once, whatever is done.
    assert not is_avoidable(TraceKind.TRACE, None) and not is_avoidable(TraceKind.SAVE, Hint.REQUESTED_TRACE)
    # The first trace of a function object made anew (a tf.function per call) is paid only because
    # the object is new: creating it once removes it.
    assert is_avoidable(TraceKind.TRACE, Hint.CREATE_FUNCTION_ONCE, Reason.NEW_FUNCTION_OBJECT)
    assert not is_avoidable(TraceKind.TRACE, None, Reason.FIRST_TRACE)


def test_the_step_with_the_most_avoidable_seconds_ranks_first_and_is_named_inside_its_loop():
    functions = [LOOP, STEP]
    ranked = [item.function for item in costs.ranked(functions)]
    assert ranked == ["one_step_on_data", "multi_step_on_iterator"]
    assert costs.enclosers(STEP, functions) == ["multi_step_on_iterator"]
    assert costs.enclosers(LOOP, functions) == [] and costs.outermost(functions) == [LOOP]
    rows = costs.table_rows(functions, str)
    assert rows[0][-2:] == ["avoidable", "total"]
    assert rows[1][0] == "one_step_on_data (in multi_step_on_iterator)"
    assert rows[1][-2:] == ["4.50 s", "8.50 s"] and rows[2][-2:] == ["3.00 s", "10.00 s"]


def test_the_header_adds_up_the_outermost_rows_and_counts_a_nested_avoidable_miss_once():
    # 10 s in all (the loop's rows); avoidable: the step's variable retrace (2 s) and the loop's
    # retrace (3 s), which holds the step's retrace (2.5 s); the rest is the first traces.
    assert costs.total_phrase([LOOP, STEP]) == (
        "misses took 10.00 s: 10.00 s tracing; avoidable 5.00 s, the most in `one_step_on_data` (4.50 s); "
        "first traces: 5.00 s, expected")


def test_the_headline_counts_function_traces_and_names_layer_runs_as_such():
    layer_runs = [types.SimpleNamespace(kind=TraceKind(kind), function_trace=serial)
                  for kind, serial in [("symbolic", None), ("trace", 2), ("trace", 2),
                                       ("variable_retrace", 3), ("variable_retrace", 3), ("retrace", 5),
                                       ("retrace", 5), ("eager", None)]]
    assert headline([LOOP, STEP], 2, layer_runs, 3) == (
        "2 functions traced 5 times: 2 trace, 1 variable_retrace, 2 retrace; 2 layers: 7 layer runs, "
        "4 of them in 2 retraces; 3 eager layer runs")
    assert headline([], 2, layer_runs[:3], 0) == (
        "0 functions traced; 2 layers: 3 layer runs (1 symbolic, 2 trace); 0 eager layer runs")
