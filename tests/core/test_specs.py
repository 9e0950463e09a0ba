"""Specs, sites, argument paths and changes: typed values and their text, without a backend."""

import pytest
from helpers import tensor

from traceguard._core.changes import Aspect, Change
from traceguard._core.signature import add_context, diff_contexts, diff_passing, diff_signatures
from traceguard._core.specs import (
    MAX_ITEMS,
    ArgumentPath,
    MappingSpec,
    NodeSpec,
    ObjectSpec,
    SequenceSpec,
    Site,
    TensorSpec,
    ValueSpec,
    folded_text,
    mapping_spec,
    sequence_spec,
    signature_line,
    value_spec,
)


@pytest.mark.parametrize("spec, text", [
    (TensorSpec("float32", (60, 28, 28)), "float32[60,28,28]"),
    (TensorSpec("int32", (2, None), "RaggedTensor"), "RaggedTensor int32[2,None]"),
    (TensorSpec("float32", None), "float32[?]"),
    (TensorSpec("float32", (), weak_type=True), "weakly typed float32[]"),
    (ValueSpec("True"), "True"),
    (SequenceSpec("list", (tensor(2), ValueSpec("None")), 2), "[float32[2], None]"),
    (SequenceSpec("tuple", (ValueSpec("3"),), 1), "(3,)"),
    (MappingSpec((("'a'", tensor(2)),), 1), "{'a': float32[2]}"),
    (ObjectSpec("function", "make.<locals>.step", 1, Site("/src/train.py", 12)),
     "Python function make.<locals>.step (defined at train.py:12)"),
    (ObjectSpec("method", "Model.step", 1), "bound method Model.step"),
    (ObjectSpec("Config", "Config", 1), "Config object"),
])
def test_a_spec_reads_as_the_reports_show_it(spec, text):
    assert str(spec) == text


def test_specs_of_different_kinds_never_compare_equal():
    specs = [TensorSpec("float32", (2,)), ValueSpec("2"), ObjectSpec("int", "int", 2),
             SequenceSpec("list", (), 0), MappingSpec((), 0)]
    assert len(set(specs)) == len(specs)
    assert TensorSpec("float32", (2,)) != TensorSpec("float32", (2,), weak_type=True)


def test_long_values_and_collections_keep_a_fingerprint_of_what_they_cut():
    long = value_spec("x" * 100)
    assert long.text.endswith("...") and long.rest is not None
    assert value_spec("x" * 100) != value_spec("x" * 99 + "y")
    items = tuple(ValueSpec(str(i)) for i in range(MAX_ITEMS + 2))
    cut = sequence_spec("list", items)
    assert (len(cut.items), cut.length) == (MAX_ITEMS, MAX_ITEMS + 2)
    assert cut != sequence_spec("list", (*items[:-1], ValueSpec("0")))
    assert mapping_spec((("'b'", ValueSpec("1")), ("'a'", ValueSpec("2")))).items[0][0] == "'a'"


def test_sites_and_argument_paths_read_as_text_and_parse_back():
    assert str(Site("/src/train.py", 7)) == "/src/train.py:7"
    assert Site.parse("/src/train.py:7") == Site("/src/train.py", 7)
    assert Site.parse("no line") is None
    path = ArgumentPath("features").child("'ids'").child(0)
    assert (str(path), path.parameter) == ("features['ids'][0]", "features")


@pytest.mark.parametrize("old, new, aspect, text", [
    (tensor(60, 28), tensor(32, 28), Aspect.DIM, "x: dim 0 60 -> 32"),
    (tensor(2), tensor(2, dtype="int32"), Aspect.DTYPE, "x: dtype float32 -> int32"),
    (tensor(2), tensor(2, 1), Aspect.RANK, "x: rank 1 -> 2 (float32[2] -> float32[2,1])"),
    (TensorSpec("float32", (), weak_type=True), TensorSpec("float32", ()), Aspect.WEAK_TYPE,
     "x: weakly typed float32[] -> float32[]"),
    (ValueSpec("3"), ValueSpec("4"), Aspect.VALUE, "x: 3 -> 4"),
    (ObjectSpec("function", "step", 1, Site("/a/t.py", 3)),
     ObjectSpec("function", "step", 2, Site("/a/t.py", 3)), Aspect.IDENTITY,
     "x: a different Python function step (defined at t.py:3) (compared by identity)"),
    (ValueSpec("None"), tensor(3), Aspect.STRUCTURE, "x: None -> float32[3]"),
])
def test_a_change_names_what_the_backend_compared(old, new, aspect, text):
    (change,) = diff_signatures({"x": old}, {"x": new})
    assert (change.aspect, str(change), change.parameter) == (aspect, text, "x")
    assert change == Change(ArgumentPath("x"), aspect, change.old, change.new, change.axis)


def test_nested_changes_name_their_path_and_added_and_removed_arguments_are_changes():
    old = {"x": SequenceSpec("list", (tensor(1), ValueSpec("1")), 2)}
    new = {"x": SequenceSpec("list", (tensor(2), ValueSpec("1")), 2), "y": ValueSpec("0")}
    assert [str(c) for c in diff_signatures(old, new)] == ["x[0]: dim 0 1 -> 2", "y: added (0)"]
    assert [str(c) for c in diff_signatures(new, old)] == ["x[0]: dim 0 2 -> 1", "y: removed"]


def test_an_unknown_dimension_holds_any_value_only_when_asked():
    # TensorFlow looks a call up by subtype: a concrete function traced for float32[None,3]
    # serves every row count, so a later trace's difference is never its dimension 0.
    relaxed, rows = {"x": tensor(None, 3)}, {"x": tensor(5, 3)}
    assert [str(change) for change in diff_signatures(relaxed, rows)] == ["x: dim 0 None -> 5"]
    assert diff_signatures(relaxed, rows, accepts_unknown=True) == []
    assert [change.aspect for change in diff_signatures(relaxed, {"x": tensor(5, 4)}, True)] == [Aspect.DIM]
    # An unknown rank holds any shape; a known one against a new unknown is still a change.
    assert diff_signatures({"x": TensorSpec("float32", None)}, {"x": tensor(2, 2)}, True) == []
    assert [change.aspect for change in diff_signatures(rows, {"x": TensorSpec("float32", None)}, True)] \
        == [Aspect.RANK]


class RaisingEq:
    def __eq__(self, other):
        raise ValueError("no truth value")

    __hash__ = object.__hash__


def test_a_tracing_context_differs_by_name_from_the_closest_earlier_one():
    default = (("jax_enable_x64", False), ("jax_default_matmul_precision", None))
    precise = (("jax_enable_x64", False), ("jax_default_matmul_precision", "float32"))
    wide = (("jax_enable_x64", True), ("jax_default_matmul_precision", None))
    assert diff_contexts((default, precise), precise) == []
    (change,) = diff_contexts((precise, default), wide)  # `default` differs in one value, `precise` in two.
    assert (change.aspect, str(change)) == (Aspect.CONTEXT, "jax_enable_x64: False -> True (tracing context)")
    assert diff_contexts((), wide) == diff_contexts((default,), None) == []  # Not read: no claim.
    (raised,) = diff_contexts(((("mesh", RaisingEq()),),), (("mesh", RaisingEq()),))
    assert raised.parameter == "mesh"  # An `==` that raises is a difference, as JAX's key lookup misses.


def test_contexts_are_kept_latest_last_once_each_and_bounded():
    a, b, c = ((("x64", False),), (("x64", True),), (("x64", None),))
    assert add_context((a, b), a, 8) == (b, a)
    assert add_context((a, b), c, 2) == (b, c)
    first, second = (("mesh", RaisingEq()),), (("mesh", RaisingEq()),)
    kept = add_context((first,), second, 8)  # An `==` that raises is a difference: both are kept.
    assert len(kept) == 2 and kept[0] is first and kept[1] is second


# A Keras step's state on JAX, as `train_step(state, data)` is keyed: trainable, non-trainable,
# optimizer (Adam: an int32 iteration count, a learning rate, two slots per variable) and metrics.
KERAS_JAX_STATE = sequence_spec("tuple", (
    sequence_spec("list", tuple(tensor(*dims) for dims in ((8, 16), (16,), (16, 1), (1,), (1,)))),
    sequence_spec("list", ()),
    sequence_spec("list", (tensor(dtype="int32"), tensor()) + tuple(tensor(8, 16) for _ in range(12))),
    sequence_spec("list", (tensor(), tensor())),
))


def test_folded_text_counts_long_lists_of_arrays_and_keeps_the_structure():
    assert folded_text(KERAS_JAX_STATE) == "([5 arrays], [], [14 arrays], [float32[], float32[]])"
    assert folded_text(sequence_spec("tuple", tuple(tensor(2) for _ in range(5)))) == "(5 arrays)"
    short = sequence_spec("list", tuple(tensor(2) for _ in range(4)))  # Up to FOLDED_ITEMS: whole.
    assert folded_text(short) == str(short) == "[float32[2], float32[2], float32[2], float32[2]]"
    mixed = sequence_spec("list", (*(tensor(2) for _ in range(5)), ValueSpec("None")))
    assert folded_text(mixed) == str(mixed)  # Not only arrays: each item is shown.
    assert folded_text(mapping_spec((("'w'", KERAS_JAX_STATE[1][0]),))) == "{'w': [5 arrays]}"


def test_signature_line_puts_the_folded_arguments_after_the_others():
    data = sequence_spec("tuple", (tensor(32, 8), tensor(32, 1)))
    assert signature_line({"state": KERAS_JAX_STATE, "data": data}) == (
        "data=(float32[32,8], float32[32,1]), state=([5 arrays], [], [14 arrays], [float32[], float32[]])")
    assert signature_line({"x": tensor(8, 4), "n": ValueSpec("3")}, ": ") == "x: float32[8,4], n: 3"
    assert signature_line({}) == ""


def _config(mode, weights=None):
    weights = tensor(3) if weights is None else weights
    return NodeSpec("Config", ((".weights", weights),), ((".mode", ValueSpec(repr(mode), None, True)),))


def test_a_pytree_node_s_static_field_type_and_children_are_named():
    assert str(_config("a")) == "Config(weights=float32[3], mode='a' (static))"
    (field,) = diff_signatures({"cfg": _config("a")}, {"cfg": _config("b")})
    assert (field.aspect, str(field), field.parameter) == (
        Aspect.STATIC_FIELD, "cfg.mode: static field 'a' -> 'b'", "cfg")
    (child,) = diff_signatures({"cfg": _config("a")}, {"cfg": _config("a", tensor(4))})
    assert str(child) == "cfg.weights: dim 0 3 -> 4"
    box = NodeSpec("Box", ((0, tensor(3)),), (("", ValueSpec("'x'", None, True)),))
    (aux,) = diff_signatures({"b": box}, {"b": box._replace(static=(("", ValueSpec("'y'", None, True)),))})
    assert str(aux) == "b: pytree auxiliary data 'x' -> 'y'"
    (node,) = diff_signatures({"b": box}, {"b": SequenceSpec("tuple", (tensor(3),), 1)})
    assert (node.aspect, str(node)) == (
        Aspect.STRUCTURE, "b: pytree node Box -> tuple (Box(float32[3], aux data 'x') -> (float32[3],))")


def test_a_mapping_s_keys_are_named_by_their_delta():
    old = {"batch": mapping_spec((("'x'", tensor(2)), ("'old'", tensor(1))))}
    new = {"batch": mapping_spec((("'x'", tensor(3)), ("'aux'", tensor(2))))}
    assert [str(change) for change in diff_signatures(old, new)] == [
        "batch['aux']: added (float32[2])", "batch['x']: dim 0 2 -> 3", "batch['old']: removed"]


def test_an_argument_passed_another_way_is_named_only_when_both_calls_were_read():
    signature = {"x": tensor(2), "y": ValueSpec("1")}
    (change,) = diff_passing((), ("y",), signature, signature)
    assert (change.aspect, str(change)) == (Aspect.CALL_STRUCTURE, "y: passed positionally -> by keyword")
    (back,) = diff_passing(("x", "y"), ("y",), signature, signature)
    assert str(back) == "x: passed by keyword -> positionally"
    assert diff_passing(None, ("y",), signature, signature) == []
    assert diff_passing((), ("y",), {"x": tensor(2)}, signature) == []  # `y` added: said once.


def test_a_sharding_jax_keys_in_the_abstract_value_is_a_change_of_its_own():
    sharded = TensorSpec("float32", (4,), sharding="P('i',) over i=2 (Explicit)")
    assert str(sharded) == "float32[4] sharded P('i',) over i=2 (Explicit)"
    (change,) = diff_signatures({"x": tensor(4)}, {"x": sharded})
    assert (change.aspect, str(change)) == (
        Aspect.SHARDING, "x: sharding unsharded -> P('i',) over i=2 (Explicit)")
