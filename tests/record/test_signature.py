"""Signatures of calls and their differences."""

import numpy as np
import pytest
import tensorflow as tf

from traceguard._compat._specs import _bound_signature, signature_of, spec_of
from traceguard._core.signature import diff_signatures
from traceguard._core.specs import format_signature

pytestmark = pytest.mark.backend("tensorflow")


def call(self, inputs, mask=None, training=None, *rest, **options):
    return inputs


@pytest.mark.parametrize(
    "value, text",
    [
        (tf.zeros((2, 3)), "float32[2,3]"),
        (np.zeros((4,), np.int64), "int64[4]"),
        (tf.TensorSpec((None, 3), tf.float16), "TensorSpec float16[None,3]"),
        (tf.ragged.constant([[1], [2, 3]]), "RaggedTensor int32[2,None]"),
        (tf.sparse.from_dense(tf.eye(2)), "SparseTensor float32[2,2]"),
        ([tf.zeros(1), None], "[float32[1], None]"),
        ((3,), "(3,)"),
        ({"b": 1, "a": tf.zeros(2)}, "{'a': float32[2], 'b': 1}"),
        (True, "True"),
        ("x" * 100, repr("x" * 100)[:37] + "..."),
        (list(range(20)), "[" + ", ".join(map(str, range(16))) + ", ... 20 items]"),
        ({i: i for i in range(17)}, "{" + ", ".join(f"{k}: {k}" for k in sorted(map(str, range(17)))[:16])
         + ", ... 17 items}"),
    ],
)
def test_spec_strings(value, text):
    assert format_signature({"v": spec_of(value)}) == {"v": text}


def test_signature_names_arguments_and_includes_training_default():
    signature = signature_of(call, (tf.zeros((2,)),), {})
    assert format_signature(signature) == {"inputs": "float32[2]", "training": "None"}


def test_signature_expands_variadic_arguments():
    signature = signature_of(call, (1, 2, 3, 4, 5), {"scale": 2})
    assert list(map(str, signature)) == ["inputs", "mask", "training", "rest[0]", "rest[1]", "scale"]


def named_call(self, inputs, mask=None, training=True, *, scale=1.0):
    return inputs


def positional_only_call(self, inputs, /, training=None):
    return inputs


@pytest.mark.parametrize("function", [named_call, positional_only_call, call])
@pytest.mark.parametrize("args, kwargs", [
    ((1,), {}),
    ((1, 2), {"training": False}),
    ((), {"inputs": 1, "scale": 2.0}),
    ((1, 2, 3), {}),
    ((1, 2, 3, 4), {}),
    ((1,), {"inputs": 2}),
    ((1,), {"unknown": 2}),
    ((1,), {"self": 2}),
    ((), {}),
])
def test_signature_binds_as_bind_partial_does(function, args, kwargs):
    # signature_of binds the usual named `call` by hand; _bound_signature uses inspect.
    signature = signature_of(function, args, kwargs)
    assert signature == _bound_signature(function, args, kwargs)
    assert list(signature) == list(_bound_signature(function, args, kwargs))


def test_named_call_signature_follows_parameter_order_not_call_order():
    signature = signature_of(named_call, (), {"scale": 3.0, "mask": None, "inputs": tf.zeros(2)})
    assert format_signature(signature) == {"inputs": "float32[2]", "mask": "None", "training": "True",
                                           "scale": "3.0"}


def test_unbindable_call_is_described_positionally():
    def strict(self, a):
        return a

    assert list(signature_of(strict, (1, 2), {"z": 3})) == ["arg0", "arg1", "z"]


def test_unknown_rank_is_a_question_mark():
    assert format_signature({"v": spec_of(tf.TensorSpec(None, tf.float32))}) == {"v": "TensorSpec float32[?]"}


@pytest.mark.parametrize(
    "old, new, changes",
    [
        (tf.zeros((60, 28)), tf.zeros((32, 28)), ["x: dim 0 60 -> 32"]),
        (tf.zeros((2, 3)), tf.zeros((4, 5)), ["x: dim 0 2 -> 4", "x: dim 1 3 -> 5"]),
        (tf.zeros((2,)), tf.zeros((2,), tf.int32), ["x: dtype float32 -> int32"]),
        (tf.zeros((2,)), tf.zeros((2, 1)), ["x: rank 1 -> 2 (float32[2] -> float32[2,1])"]),
        (3, 4, ["x: 3 -> 4"]),
        (True, False, ["x: True -> False"]),
        ([tf.zeros(1), 1], [tf.zeros(2), 1], ["x[0]: dim 0 1 -> 2"]),
        ({"a": 1}, {"a": 2}, ["x['a']: 1 -> 2"]),
        ([1], [1, 2], ["x: [1] -> [1, 2]"]),
        ("a" * 50 + "b", "a" * 50 + "c",
         [f"x: {repr('a' * 50)[:37]}... -> {repr('a' * 50)[:37]}... (they differ past the part shown)"]),
        (list(range(20)), [*range(19), 0], ["x[16:]: the items past the first 16 changed"]),
        ([0] * 17 + [tf.zeros(2)], [1] + [0] * 16 + [tf.zeros(3)],
         ["x[0]: 0 -> 1", "x[16:]: the items past the first 16 changed"]),
        (tf.zeros(2), None, ["x: float32[2] -> None"]),
    ],
)
def test_diffs_name_the_argument_and_what_changed(old, new, changes):
    assert [str(change) for change in diff_signatures({"x": spec_of(old)}, {"x": spec_of(new)})] == changes


def test_added_and_removed_arguments():
    old = {"a": spec_of(1)}
    new = {"b": spec_of(2)}
    assert list(map(str, diff_signatures(old, new))) == ["b: added (2)", "a: removed"]
    assert diff_signatures(old, old) == []


def test_a_structure_that_contains_itself_has_a_finite_spec():
    loop = [1]
    loop.append(loop)
    assert format_signature({"x": spec_of(loop)}) == {"x": "[1, [1, [...]]]"}
    changes = diff_signatures({"x": spec_of(loop)}, {"x": spec_of([1, [1, 2]])})
    assert list(map(str, changes)) == ["x[1]: [1, [...]] -> [1, 2]"]
