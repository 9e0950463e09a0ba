"""`FunctionRecords`: kinds, the closest earlier signature, function identity.

Fed with `FunctionTracing` values as the hook makes them, without tracing anything;
tests/compat/tensorflow/test_compat_tf_traces.py feeds it from real traces.
"""

import itertools
import weakref

import pytest
from helpers import record_kind, texts

from traceguard._compat._function_tracing import FunctionTracing
from traceguard._core.specs import format_signature
from traceguard._record.function_identity import code_key
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("tensorflow")

_serials = itertools.count(1)


class Tensor:
    """Anything with `shape` and `dtype` is a tensor to the signature."""

    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype


class TensorSpec(Tensor):
    pass


class Function:
    """A stand-in for a tf.function object: weakly referenceable, like one."""


def tracing(function, arguments, owner=None, phase=None, created=(), duration=0.002):
    serial = next(_serials)
    reference = weakref.ref(owner if owner is not None else function)
    hash(reference)  # As the hook does, while the function is alive.
    result = FunctionTracing(serial, None, "tf.function", function.__name__,
                             reference,
                             id(owner if owner is not None else function), function,
                             dict(arguments), 1.0, end=1.0 + duration, phase=phase,
                             created_variables=tuple(created), call_site=("train.py", 7),
                             caller="<module>", entry="Function.__call__",
                             function_text=repr(function))
    return result


def train_step(inputs, step):
    return inputs


# --- kinds and the closest earlier signature ------------------------------------------------
def test_a_python_int_argument_retraces_with_step_named():
    records = FunctionRecords()
    first = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    second = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1}))
    assert (record_kind(first), first.changes, first.closest) == ("first", (), None)
    assert record_kind(second) == "retrace"
    assert [str(c) for c in second.changes] == ["step: 0 -> 1"]
    assert second.closest == first.index
    assert str(second.definition).endswith(f"test_function_records.py:{train_step.__code__.co_firstlineno}")
    assert (str(second.call_site), second.qualname, second.objects) == ("train.py:7", "train_step", 1)
    assert format_signature(second.signature) == {"inputs": "float32[8,4]", "step": "1"}


def test_the_closest_earlier_signature_is_not_always_the_last():
    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    records.on_trace(tracing(train_step, {"inputs": Tensor((6, 4)), "step": 5}))
    third = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 2}))
    assert third.closest == 0
    assert [str(c) for c in third.changes] == ["step: 0 -> 2"]


def test_ties_go_to_the_most_recent_signature():
    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1}))
    third = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 2}))
    assert third.closest == 1


def make_function():
    scale = 3

    def step(inputs):
        return inputs * scale

    return step


def test_a_function_object_made_anew_from_the_same_code_is_recognised():
    records = FunctionRecords()
    results = [records.on_trace(tracing(make_function(), {"inputs": Tensor((8, 4))}, owner=Function()))
               for _ in range(3)]
    assert [record_kind(r) for r in results] == ["first", "new_function", "new_function"]
    assert [r.object_number for r in results] == [1, 2, 3]
    assert results[-1].objects == 3
    assert [str(c) for c in results[2].changes] == [
        "step: function object #2 -> #3 (a new function object from the same code)"]


def test_closure_functions_and_constants_tell_codes_apart():
    def make(step_function, factor):
        def one_step_on_data(data):
            return step_function(data) * factor

        return one_step_on_data

    def train(data):
        return data

    def test(data):
        return data

    assert code_key(make(train, 1)) == code_key(make(train, 1))
    assert code_key(make(train, 1)) != code_key(make(test, 1))  # Keras's train and test steps.
    assert code_key(make(train, 1)) != code_key(make(train, 2))


def test_steps_held_through_wrappers_and_tf_functions_tell_codes_apart():
    # Keras 3.15's `multi_step_on_iterator` (wrapped by `functools.wraps`-style decorators)
    # holds a wrapper of the `tf.function` of `one_step_on_data`, which holds the step.
    import functools

    class StepFunction:  # A stand-in for a tf.function: `python_function` is public.
        def __init__(self, python_function):
            self.python_function = python_function

        def __call__(self, *args):
            return self.python_function(*args)

    def make(step_function):
        def one_step_on_data(data):
            return step_function(data)

        compiled = StepFunction(one_step_on_data)

        @functools.wraps(compiled)
        def converted(data):
            return compiled(data)

        def multi_step_on_iterator(iterator):
            return converted(next(iterator))

        @functools.wraps(multi_step_on_iterator)
        def outer(iterator):
            return multi_step_on_iterator(iterator)

        return outer

    def train(data):
        return data

    def test(data):
        return data

    assert code_key(make(train)) == code_key(make(train))  # A rebuilt model's step.
    assert code_key(make(train)) != code_key(make(test))  # `evaluate`'s step after `fit`'s.


def test_a_function_that_holds_itself_has_a_key():
    def recursive(n):
        return n if n < 1 else recursive(n - 1)

    assert code_key(recursive) == code_key(recursive)


def test_variable_creation_retrace_is_told_from_a_retrace():
    records = FunctionRecords()
    owner = Function()
    first = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}, owner,
                                     phase="variable_creation", created=["dense/kernel"]))
    again = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}, owner,
                                     phase="no_variable_creation"))
    later = records.on_trace(tracing(train_step, {"inputs": Tensor((4, 4)), "step": 0}, owner,
                                     phase="no_variable_creation"))
    assert first.created_variables == ("dense/kernel",)
    assert list(map(record_kind, (first, again, later))) == ["first", "variable_retrace", "retrace"]
    assert texts(again.changes) == ()


def test_tensor_specs_compare_as_the_tensors_they_describe():
    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    second = records.on_trace(tracing(train_step, {"inputs": TensorSpec((None, 4)), "step": 0}))
    assert [str(c) for c in second.changes] == ["inputs: dim 0 8 -> None"]


def test_records_are_bounded_and_found_by_tensorflow_s_function_text():
    records = FunctionRecords(limit=2)
    for step in range(3):
        records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": step}))
    assert (len(records), records.dropped) == (2, 1)
    assert [r.index for r in records.records_for_function_text(repr(train_step))] == [1, 2]
    assert records.records_for_function_text("<function other>") == []
    with pytest.raises(ValueError, match="Received: limit=0"):
        FunctionRecords(limit=0)


def test_records_keep_no_reference_to_arguments():
    records = FunctionRecords()
    tensor = Tensor((1,))
    record = records.on_trace(tracing(train_step, {"inputs": tensor, "step": 0}))
    assert all(isinstance(spec, tuple) for spec in record.signature.values())
    assert not any(value is tensor for value in vars(record).values())


def test_costs_total_the_tracing_time_per_function_most_expensive_first():
    records = FunctionRecords()
    for step in range(3):
        records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": step}, duration=0.5))
    records.on_trace(tracing(make_function(), {"inputs": Tensor((8, 4))}, duration=0.25))
    first, second = records.costs()
    assert (first.qualname, first.traces, first.retraces, first.objects) == ("train_step", 3, 2, 1)
    assert first.seconds == pytest.approx(1.5)
    assert first.cost_seconds == pytest.approx(1.5)  # No call returned: the misses cost their traces.
    assert (second.qualname, second.traces, second.seconds) == ("make_function.<locals>.step", 1, 0.25)


# --- one diagnosis per trace ------------------------------------------------------------------
def test_a_trace_is_diagnosed_once_for_its_layer_runs_and_its_record(monkeypatch):
    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    diagnosed = []
    diagnose = records._diagnose
    monkeypatch.setattr(records, "_diagnose", lambda *args: diagnosed.append(args) or diagnose(*args))
    running = tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1})
    previews = [records.preview(running) for _ in range(3)]  # Three layer runs inside the trace.
    record = records.on_trace(running)
    assert len(diagnosed) == 1
    assert previews[0].reason is record.reason is previews[2].reason
    assert previews[0].changes == record.changes
    assert [str(change) for change in record.changes] == ["step: 0 -> 1"]


def test_a_trace_recorded_meanwhile_makes_the_end_diagnose_again():
    records = FunctionRecords()
    running = tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0})
    assert records.preview(running).reason.value == "first_trace"
    # The same code traced by another object inside it, and recorded first: the running trace is
    # now that object's second.
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}, owner=Function()))
    record = records.on_trace(running)
    assert record.reason.value == "new_function_object"


def test_each_record_is_classified_once_and_its_event_reads_that_verdict():
    from traceguard._diagnosis.function_runs import function_event

    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    record = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1}))
    assert (record.verdict.kind.value, record.verdict.reason.value) == ("retrace", "signature_changed")
    assert record.verdict.hint is not None
    assert function_event(record).verdict is record.verdict


def test_a_trace_of_other_code_recorded_meanwhile_keeps_the_diagnosis(monkeypatch):
    def inner(inputs):
        return inputs

    records = FunctionRecords()
    records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    running = tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1})
    records.preview(running)
    records.on_trace(tracing(inner, {"inputs": Tensor((8, 4))}))  # Nested, of other code.
    diagnosed = []
    diagnose = records._diagnose
    monkeypatch.setattr(records, "_diagnose", lambda *args: diagnosed.append(args) or diagnose(*args))
    assert texts(records.on_trace(running).changes) == ("step: 0 -> 1",) and not diagnosed


def test_a_fact_the_hook_reads_reaches_the_record_by_its_field_name():
    # A new fact about a trace is a field of `FunctionTracing` and of `FunctionTrace` (and its
    # words): the record takes every field the two share, as the hook read it.
    import dataclasses

    from traceguard._core.functions import FunctionTrace
    from traceguard._record import function_record

    records = FunctionRecords()
    running = tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0})
    shared = function_record._fields_read(running)
    assert {"caller", "entry", "keras_call", "optimizer_builds", "traced_for"} <= set(shared)
    running.caller, running.entry, running.body_of = "loop", "Trainer.fit", "outer"
    running.backend_reasons, running.xla_functions = ("x: dim 0 8 -> 5",), ("train_step",)
    record = records.on_trace(running)
    assert {field: getattr(record, field) for field in shared} == {
        field: getattr(running, field) for field in shared}
    assert (record.caller, record.backend_reasons) == ("loop", ("x: dim 0 8 -> 5",))
    made = {"index", "qualname", "definition", "duration", "miss_cost", "verdict",
            *function_record._MADE_HERE, *function_record._AS_DIAGNOSED}
    assert {field.name for field in dataclasses.fields(FunctionTrace)} == made | set(shared)
    # A trace file keeps every fact with no line of its own: the record its event reads back as is
    # the record (`FunctionTrace.to_json()` writes each field by its type).
    import json

    from traceguard._core.function_event import FunctionEvent

    event = FunctionEvent(record, "why", None, record.miss_cost)
    assert FunctionEvent.from_json(json.loads(json.dumps(event.to_json()))).trace == record
