"""`Change`: the structured difference between signatures reads as the string diff.

Property tests compare `str()` of every change with `_signature.diff_specs` on
generated specs, so the string diff can be replaced by the structured one.
"""

from hypothesis import given
from hypothesis import strategies as st

from traceguard._changes import CHANGE_ASPECTS, Change, diff_signatures_structured, diff_specs_structured
from traceguard._signature import diff_signatures, diff_specs, spec_of


class Tensor:
    """Anything with `shape` and `dtype` is a tensor to the signature."""

    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype


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
