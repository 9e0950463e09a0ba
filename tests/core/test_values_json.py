"""Each value that leaves the process has one `to_json()` and one `from_json()`: what trace files,
`to_dicts()` and dumps write reads back as the very value (`X.from_json(x.to_json()) == x`), on
values hypothesis makes as well as on the ones reports are known to hold."""

import json

import pytest
from helpers import tensor
from hypothesis import given, settings
from hypothesis import strategies as st

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.events import TraceEvent
from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.functions import FunctionTrace, MissCost
from traceguard._core.keras_names import KerasCall, OptimizerBuild
from traceguard._core.kinds import TraceKind
from traceguard._core.specs import (
    ArgumentPath,
    MappingSpec,
    NodeSpec,
    ObjectSpec,
    SequenceSpec,
    Site,
    TensorSpec,
    ValueSpec,
    signature_from_json,
    signature_to_json,
    spec_from_json,
)
from traceguard._core.verdicts import GraphBreak, Hint, Reason, Verdict

SIGNATURE = {
    "x": tensor(8, None),
    "lr": ValueSpec("0.1", None, True),
    "fn": ObjectSpec("function", "step", 140, Site("/src/t.py", 3), True),
    "batch": MappingSpec((("'ids'", SequenceSpec("tuple", (tensor(2, dtype="int32"),), 1)),), 1),
    ArgumentPath("rest", (0,)): ValueSpec("None"),
    "sharded": tensor(4)._replace(sharding="P('i',) over i=2 (Explicit)"),
    "cfg": NodeSpec("Config", ((".weights", tensor(3)), (0, ValueSpec("None"))),
                    ((".mode", ValueSpec("'a'", None, True)),)),
}


def through_json(data):
    return json.loads(json.dumps(data))


# --- values hypothesis makes ---
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.one_of(st.none(), texts)
numbers = st.one_of(st.none(), st.integers(-2**40, 2**40))
seconds = st.floats(0, 1e6, allow_nan=False)
sites = st.builds(Site, texts, st.integers(0, 10**6))
keys = st.lists(st.one_of(st.integers(0, 99), texts), max_size=3).map(tuple)
paths = st.builds(ArgumentPath, texts, keys)
dims = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 99)), max_size=3).map(tuple))
tensors = st.builds(TensorSpec, st.sampled_from(["float32", "int32", "bool"]), dims,
                    st.sampled_from(["", "RaggedTensor"]), st.booleans(), st.sampled_from(["", "P('i',)"]))
leaves = st.one_of(tensors, st.builds(ValueSpec, texts, numbers, st.booleans()),
                   st.builds(ObjectSpec, texts, texts, st.integers(0, 10**6), st.one_of(st.none(), sites),
                             st.booleans()))
specs = st.recursive(leaves, lambda children: st.one_of(
    st.builds(SequenceSpec, st.sampled_from(["list", "tuple"]), st.lists(children, max_size=3).map(tuple),
              st.integers(0, 20), numbers),
    st.builds(MappingSpec, st.lists(st.tuples(texts, children), max_size=3).map(tuple), st.integers(0, 20),
              numbers),
    st.builds(NodeSpec, texts, st.lists(st.tuples(st.one_of(st.integers(0, 9), texts), children),
                                        max_size=3).map(tuple),
              st.lists(st.tuples(texts, children), max_size=2).map(tuple), numbers)), max_leaves=8)
signatures = st.dictionaries(st.one_of(texts, paths), specs, max_size=4)
parts = st.one_of(specs, st.none(), st.booleans(), st.integers(-99, 99), texts)
changes = st.builds(Change, paths, st.sampled_from(list(Aspect)), parts, parts, st.one_of(st.none(),
                                                                                           st.integers(0, 5)))
keras_calls = st.one_of(st.none(), st.builds(KerasCall, texts, names, numbers, numbers, numbers))
strings = st.lists(texts, max_size=3).map(tuple)


@st.composite
def verdicts(draw, changes_of=None):
    return Verdict(
        draw(st.sampled_from(list(TraceKind))), changes_of if changes_of is not None else
        draw(st.lists(changes, max_size=2).map(tuple)), draw(st.sampled_from(list(Reason))),
        draw(st.one_of(st.none(), st.sampled_from(list(Hint)))), draw(names),
        draw(st.sampled_from(list(Backend))),
        draw(names), draw(keras_calls), draw(names), draw(numbers), draw(strings), draw(names),
        draw(st.one_of(st.none(), specs)), draw(st.booleans()), draw(strings), draw(names),
        draw(st.lists(st.builds(OptimizerBuild, texts, names), max_size=2).map(tuple)))


phase_times = st.dictionaries(st.sampled_from(["trace", "lower", "compile", "first_call"]), seconds)
maybe_seconds = st.one_of(st.none(), seconds)
caches = st.sampled_from([None, "hit", "miss"])
costs = st.builds(MissCost, phase_times, maybe_seconds, caches, maybe_seconds, maybe_seconds, maybe_seconds)


@st.composite
def trace_events(draw):
    made = draw(st.lists(changes, max_size=2).map(tuple))
    return TraceEvent(
        draw(st.integers(1, 10**6)), draw(st.sampled_from(list(TraceKind))), draw(texts), draw(names),
        draw(signatures), made, draw(strings), draw(texts), draw(names), draw(seconds), draw(seconds),
        draw(texts), draw(numbers), draw(strings), draw(names), draw(numbers),
        draw(st.one_of(st.none(), verdicts(made))))


@st.composite
def function_traces(draw):
    made = draw(st.lists(changes, max_size=2).map(tuple))
    maybe_sites = st.one_of(st.none(), sites)
    return FunctionTrace(
        index=draw(st.integers(0, 99)), serial=draw(st.integers(1, 10**6)), parent=draw(numbers),
        origin=draw(st.sampled_from(["tf.function", "jax.jit", "jax.body", "torch.compile"])),
        name=draw(texts), qualname=draw(texts), definition=draw(maybe_sites), call_site=draw(maybe_sites),
        caller=draw(names), entry=draw(names), signature=draw(signatures),
        kind=draw(st.sampled_from(list(TraceKind))), reason=draw(st.sampled_from(list(Reason))), changes=made,
        closest=draw(numbers), duration=draw(seconds), object_number=draw(st.integers(1, 9)),
        objects=draw(st.integers(1, 9)), saving=draw(st.booleans()),
        phase=draw(st.sampled_from([None, "variable_creation"])), created_variables=draw(strings),
        relaxed=draw(st.one_of(st.none(), st.booleans())), raised=draw(st.booleans()),
        library_function=draw(st.booleans()), keras_call=draw(keras_calls), lifted_variables=draw(strings),
        optimizer_builds=draw(st.lists(st.builds(OptimizerBuild, texts, names), max_size=2).map(tuple)),
        same_graph_as=draw(numbers), relaxed_signature=draw(st.one_of(st.none(), signatures)),
        data=draw(names), same_model=draw(st.one_of(st.none(), st.booleans())), miss_cost=draw(costs),
        xla_functions=draw(strings), requested=draw(st.booleans()), restored=draw(st.booleans()),
        traced_for=draw(names), body_of=draw(names), backend_reasons=draw(strings),
        graph_breaks=draw(st.lists(st.builds(GraphBreak, texts, sites, strings), max_size=2).map(tuple)),
        break_hints=draw(strings),
        verdict=draw(st.one_of(st.none(), verdicts(made))))


@st.composite
def function_events(draw):
    trace = draw(function_traces())
    cost = draw(st.one_of(st.just(trace.miss_cost), costs))  # As recorded, or completed later.
    return FunctionEvent(trace, draw(texts), draw(names), cost)


@st.composite
def function_runs(draw):
    runs = FunctionRuns(draw(texts), draw(texts), draw(st.one_of(st.none(), sites)), draw(st.booleans()))
    for event in draw(st.lists(function_events(), max_size=3)):
        runs.add(event)
    return runs


@pytest.mark.parametrize(("values", "read"), [
    (specs, spec_from_json), (sites, Site.from_json), (paths, ArgumentPath.from_json),
    (changes, Change.from_json), (costs, MissCost.from_json), (trace_events(), TraceEvent.from_json),
    (function_traces(), FunctionTrace.from_json), (function_events(), FunctionEvent.from_json),
    (function_runs(), FunctionRuns.from_json),
    (st.lists(st.builds(OptimizerBuild, texts, names)), None), (keras_calls, None),
], ids=["spec", "site", "argument_path", "change", "miss_cost", "trace_event", "function_trace",
        "function_event", "function_runs", "optimizer_build", "keras_call"])
def test_every_value_reads_back_as_itself(values, read):
    @settings(max_examples=60, deadline=None)
    @given(values)
    def check(value):
        if read is None:  # The values a verdict holds: each its own type's.
            for item in value if isinstance(value, list) else [value]:
                if item is not None:
                    assert type(item).from_json(through_json(item.to_json())) == item
            return
        assert read(value.to_json()) == value
        assert read(through_json(value.to_json())) == value

    check()


@settings(max_examples=60, deadline=None)
@given(signatures, verdicts())
def test_a_signature_and_a_verdict_read_back_as_themselves(signature, verdict):
    assert signature_from_json(through_json(signature_to_json(signature))) == signature
    assert Verdict.from_json(through_json(verdict.to_json()), verdict.changes) == verdict


@settings(max_examples=40, deadline=None)
@given(trace_events(), function_events())
def test_to_dict_is_the_text_view_of_to_json(trace_event, function_event):
    for event in (trace_event, function_event):
        data, texts_view = event.to_json(), event.to_dict()
        if isinstance(event, FunctionEvent):  # Its attributes; the trace's other facts beside them.
            data = data["event"]
        assert set(texts_view) == set(data) - {"verdict"}
        assert texts_view["signature"] == {str(name): str(spec) for name, spec in event.signature.items()}
        assert texts_view["changes"] == [str(change) for change in event.changes]
        assert json.loads(json.dumps(texts_view)) == texts_view
    assert function_event.to_dict()["call_site"] == (None if function_event.call_site is None
                                                     else str(function_event.call_site))


# --- the values reports hold ---
def test_a_signature_reads_back_as_written():
    assert signature_from_json(through_json(signature_to_json(SIGNATURE))) == SIGNATURE


@pytest.mark.parametrize("change", [
    Change(ArgumentPath("x"), Aspect.DIM, 32, 6, axis=0),
    Change(ArgumentPath("cfg", (".mode",)), Aspect.STATIC_FIELD, ValueSpec("'a'", None, True),
           ValueSpec("'b'", None, True)),
    Change(ArgumentPath("y"), Aspect.CALL_STRUCTURE, "positional", "keyword"),
    Change(ArgumentPath("x", ("'ids'", 0)), Aspect.DTYPE, "int32", "int64"),
    Change(ArgumentPath("lr"), Aspect.WEAK_TYPE, tensor(weak_type=True), tensor()),
    Change(ArgumentPath("fn"), Aspect.IDENTITY, SIGNATURE["fn"], SIGNATURE["fn"]._replace(token=2)),
    Change(ArgumentPath("step"), Aspect.FUNCTION_OBJECT, 1, 2),
    Change(ArgumentPath("jax_enable_x64"), Aspect.CONTEXT, "False", "True"),
])
def test_a_change_reads_back_with_its_text(change):
    data = through_json(change.to_json())
    assert Change.from_json(data) == change and data["text"] == str(change)


def test_a_verdict_reads_back_with_what_its_words_name():
    changes = (Change(ArgumentPath("x"), Aspect.DIM, 32, None, axis=0),)
    verdict = Verdict(TraceKind.RETRACE, changes, Reason.SIGNATURE_CHANGED, Hint.RELAXED_DIMENSION, "f",
                      "tensorflow", "x", KerasCall("fit", "arrays", 70, 32, 7), data="dataset",
                      relaxed_to=tensor(None, 3), of_function=True)
    assert Verdict.from_json(through_json(verdict.to_json()), changes) == verdict
