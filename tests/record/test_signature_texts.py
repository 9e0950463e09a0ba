"""Signatures read back from a trace file's text: the specs `format_spec` wrote, and the same
`Change`s as `_core.signature.diff_signatures` gives within the process that recorded them.

The signatures are the property tests' random calls (tests/record/test_signature_properties.py):
tensors of every kind, Python values of every type, nested lists, tuples and dicts.
"""

import pytest
from hypothesis import given
from test_signature_properties import PROPERTY_SETTINGS, call_signatures, signature_pairs, specs

from traceguard._core.changes import Aspect
from traceguard._core.signature import diff_signatures
from traceguard._core.specs import MappingSpec, SequenceSpec, ValueSpec, format_signature, format_spec
from traceguard._diagnosis.signature_texts import read_signature, read_spec

pytestmark = pytest.mark.backend("tensorflow")


def without_cut_fingerprints(spec):
    """The spec as its text shows it: the fingerprint of what a long value or sequence cut is not."""
    if isinstance(spec, SequenceSpec):
        return SequenceSpec(spec.kind, tuple(map(without_cut_fingerprints, spec.items)), spec.length)
    if isinstance(spec, MappingSpec):
        items = tuple((key, without_cut_fingerprints(item)) for key, item in spec.items)
        return MappingSpec(items, spec.length)
    if isinstance(spec, ValueSpec):
        return ValueSpec(spec.text)
    return spec


def diff_signature_texts(old, new):
    """The changes between two signatures written as text, read back into specs."""
    return diff_signatures(read_signature(old), read_signature(new))


def fields(changes):
    return [(str(change.argument), change.aspect, str(change.old), str(change.new), change.axis, str(change))
            for change in changes]


@PROPERTY_SETTINGS
@given(call_signatures)
def test_a_spec_read_back_from_its_text_is_the_spec(signature):
    for spec in specs(signature).values():
        assert read_spec(format_spec(spec)) == without_cut_fingerprints(spec), format_spec(spec)


@PROPERTY_SETTINGS
@given(signature_pairs())
def test_changes_between_texts_are_the_changes_between_the_specs(pair):
    old, new = (specs(signature) for signature in pair)
    # What the texts cannot show: items past a long sequence's cut, the end of a long repr.
    seen = [change for change in diff_signatures(old, new) if change.aspect is not Aspect.ITEMS_PAST_CUT
            and not str(change).endswith("(they differ past the part shown)")]
    assert fields(diff_signature_texts(format_signature(old), format_signature(new))) == fields(seen)


@pytest.mark.parametrize("old, new, expected", [
    ({"data": "(float32[32,8], float32[32,4])"}, {"data": "(float32[6,8], float32[6,4])"},
     [("data[0]", Aspect.DIM, "32", "6", 0, "data[0]: dim 0 32 -> 6"),
      ("data[1]", Aspect.DIM, "32", "6", 0, "data[1]: dim 0 32 -> 6")]),
    ({"x": "float32[8,3]", "training": "True"}, {"x": "float32[8]", "training": "False", "y": "int32[2]"},
     [("x", Aspect.RANK, "float32[8,3]", "float32[8]", None, "x: rank 2 -> 1 (float32[8,3] -> float32[8])"),
      ("training", Aspect.VALUE, "True", "False", None, "training: True -> False"),
      ("y", Aspect.ADDED, "None", "int32[2]", None, "y: added (int32[2])")]),
    ({"features": "{'ids': int32[4], 'mask': bool[4]}"}, {"features": "{'ids': int64[4], 'mask': bool[4]}"},
     [("features['ids']", Aspect.DTYPE, "int32", "int64", None, "features['ids']: dtype int32 -> int64")]),
    # A repr cut short inside its quotes, in a list: the item, not the whole argument, differs.
    ({"names": "['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..., 3]"},
     {"names": "['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..., 4]"},
     [("names[1]", Aspect.VALUE, "3", "4", None, "names[1]: 3 -> 4")]),
    # Not a spec's text (an object's repr with an unbalanced bracket): the argument as a whole.
    ({"config": "[Config(a=1, b=[2)]"}, {"config": "[Config(a=1, b=[3)]"},
     [("config", Aspect.VALUE, "[Config(a=1, b=[2)]", "[Config(a=1, b=[3)]", None,
       "config: [Config(a=1, b=[2)] -> [Config(a=1, b=[3)]")]),
])
def test_changes_name_the_argument_and_the_aspect(old, new, expected):
    assert fields(diff_signature_texts(old, new)) == expected
