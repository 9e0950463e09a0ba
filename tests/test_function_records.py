"""`FunctionRecords`: kinds, the closest earlier signature, function identity, `Change` text.

Fed with `FunctionTracing` values as the hook makes them, without tracing anything;
tests/test_compat_tf_traces.py feeds it from real traces.
"""

import itertools
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

from traceguard._compat._function_tracing import FunctionTracing
from traceguard._function_records import (
    CHANGE_ASPECTS,
    Change,
    FunctionRecords,
    code_key,
    diff_signatures_structured,
    diff_specs_structured,
)
from traceguard._signature import diff_signatures, diff_specs, spec_of

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


# --- Change and the structured diff ----------------------------------------------------
def test_changes_read_as_the_string_diff():
    assert [str(c) for c in diff_specs_structured(
        "inputs", spec_of(Tensor((60, 28))), spec_of(Tensor((32, 28))))] == ["inputs: dim 0 60 -> 32"]
    assert str(diff_specs_structured("inputs", spec_of(Tensor((2,))),
                                     spec_of(Tensor((2,), "int32")))[0]) \
        == "inputs: dtype float32 -> int32"
    assert str(diff_specs_structured("step", spec_of(0), spec_of(1))[0]) == "step: 0 -> 1"
    rank = diff_specs_structured("x", spec_of(Tensor((2, 3))), spec_of(Tensor((2, 3, 4))))[0]
    assert (rank.aspect, rank.old, rank.new) == ("rank", 2, 3)
    assert str(rank) == "x: rank 2 -> 3 (float32[2,3] -> float32[2,3,4])"


def test_changes_are_values_code_can_branch_on():
    change = diff_specs_structured("data", spec_of((Tensor((32, 4)), Tensor((32,)))),
                                   spec_of((Tensor((6, 4)), Tensor((6,)))))
    assert change == [Change("data[0]", "dim", 32, 6, axis=0), Change("data[1]", "dim", 32, 6, axis=0)]
    assert {c.aspect for c in diff_signatures_structured(
        {"x": spec_of(1), "y": spec_of(2)}, {"x": spec_of("a"), "z": spec_of(2)})} \
        == {"value", "added", "removed"}
    assert diff_specs_structured("x", spec_of(1), spec_of(Tensor((1,))))[0].aspect == "structure"
    assert set(CHANGE_ASPECTS) >= {"dim", "rank", "dtype", "value", "structure", "added", "removed",
                                   "function-object"}


def test_a_long_sequence_changed_past_the_items_shown():
    old, new = spec_of(list(range(40))), spec_of(list(range(39)) + [99])
    assert [str(c) for c in diff_specs_structured("xs", old, new)] == diff_specs("xs", old, new)


specs = st.recursive(
    st.one_of(
        st.builds(lambda shape, dtype: spec_of(Tensor(shape, dtype)),
                  st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=3)),
                  st.sampled_from(["float32", "int32"])),
        st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.text(max_size=45)).map(spec_of),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=18).map(lambda items: spec_of([Wrapped(s) for s in items])),
        st.dictionaries(st.sampled_from("abc"), children, max_size=3).map(
            lambda items: spec_of({k: Wrapped(s) for k, s in items.items()})),
    ),
    max_leaves=8,
)


class Wrapped:
    """A value whose spec is a given spec: lets specs nest in generated structures."""

    def __init__(self, spec):
        self.spec = spec

    def __repr__(self):
        return repr(self.spec)


@given(specs, specs)
def test_structured_diff_reads_exactly_as_diff_specs(old, new):
    assert [str(c) for c in diff_specs_structured("arg", old, new)] == diff_specs("arg", old, new)


@given(st.dictionaries(st.sampled_from("xyz"), specs, max_size=3),
       st.dictionaries(st.sampled_from("xyz"), specs, max_size=3))
def test_structured_signature_diff_reads_exactly_as_diff_signatures(old, new):
    assert [str(c) for c in diff_signatures_structured(old, new)] == diff_signatures(old, new)


# --- kinds and the closest earlier signature ------------------------------------------------
def test_a_python_int_argument_retraces_with_step_named():
    records = FunctionRecords()
    first = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 0}))
    second = records.on_trace(tracing(train_step, {"inputs": Tensor((8, 4)), "step": 1}))
    assert (first.kind, first.changes, first.closest) == ("first", (), None)
    assert second.kind == "retrace"
    assert [str(c) for c in second.changes] == ["step: 0 -> 1"]
    assert second.closest == first.index
    assert second.definition.endswith(f"test_function_records.py:{train_step.__code__.co_firstlineno}")
    assert (second.call_site, second.qualname, second.objects) == ("train.py:7", "train_step", 1)
    assert second.format_signature() == {"inputs": "float32[8,4]", "step": "1"}


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
    assert [r.kind for r in results] == ["first", "new_function", "new_function"]
    assert [r.object_number for r in results] == [1, 2, 3]
    assert results[-1].objects == 3
    assert [str(c) for c in results[2].changes] == [
        "make_function.<locals>.step: function object #2 -> #3 (a new function object from the same code)"]


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
    assert [first.kind, again.kind, later.kind] == ["first", "variable_retrace", "retrace"]
    assert again.changes == ()


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
