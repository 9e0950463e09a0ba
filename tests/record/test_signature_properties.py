"""Property tests: random call signatures never crash classification, and `changes` is
non-empty exactly when the signature differs.

Each generated argument comes with its *key*, what a call signature is made of
(tensor kind, dtype and shape; Python value by type and full repr; the nesting),
built independently of traceguard, so the properties compare traceguard's view
with the truth rather than with itself.
"""

import numpy as np
import pytest
import tensorflow as tf
from helpers import classify, texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traceguard._compat import signature_of, spec_of
from traceguard._core.classify import closest_trace
from traceguard._core.events import TraceKind
from traceguard._core.signature import diff_signatures
from traceguard._core.specs import ArgumentPath, format_signature
from traceguard._core.verdicts import EarlierTrace, RunContext
from traceguard._reports.messages import hint_text, reason_text

pytestmark = pytest.mark.backend("tensorflow")

DTYPES = ["float32", "int32", "bool", "float16", "int64"]
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


@st.composite
def tensors(draw):
    kind = draw(st.sampled_from(["numpy", "tf", "spec", "unknown_rank_spec", "ragged", "sparse"]))
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes)
    if kind == "numpy":
        return np.zeros(shape, dtype), ("dense", dtype, shape)
    if kind == "tf":
        return tf.zeros(shape, dtype), ("dense", dtype, shape)
    if kind == "spec":
        return tf.TensorSpec(shape, dtype), ("TensorSpec", dtype, shape)
    if kind == "unknown_rank_spec":
        return tf.TensorSpec(None, dtype), ("TensorSpec", dtype, None)
    if kind == "ragged":
        lengths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
        values = tf.zeros((sum(lengths),), dtype)
        ragged = tf.RaggedTensor.from_row_lengths(values, lengths)
        return ragged, ("RaggedTensor", dtype, (len(lengths), None))
    rows, columns = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sparse = tf.sparse.SparseTensor(indices=[[0, 0]], values=tf.zeros((1,), dtype),
                                    dense_shape=[rows, columns])
    return sparse, ("SparseTensor", dtype, (rows, columns))


python_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
    st.text(max_size=10), st.binary(max_size=10),
    st.text(min_size=36, max_size=50),  # Around the length where values are shown shortened.
).map(lambda value: (value, ("value", type(value).__name__, repr(value))))


def _sequence(kind, pairs):
    values = [value for value, _ in pairs]
    return (values if kind == "list" else tuple(values)), (kind, tuple(key for _, key in pairs))


def _mapping(pairs):
    return ({name: value for name, (value, _) in pairs.items()},
            ("map", tuple(sorted((repr(name), key) for name, (_, key) in pairs.items()))))


arguments = st.recursive(
    st.one_of(tensors(), python_values),
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda pairs: _sequence("list", pairs)),
        st.lists(children, min_size=15, max_size=18).map(lambda pairs: _sequence("list", pairs)),
        st.lists(children, max_size=4).map(lambda pairs: _sequence("tuple", pairs)),
        st.dictionaries(st.text(max_size=3), children, max_size=3).map(_mapping),
    ),
    max_leaves=24,
)
# Argument name to (value, key); `training` is often a bool, as in Keras.
call_signatures = st.dictionaries(st.sampled_from(["inputs", "mask", "training", "k"]), arguments, max_size=4)


@st.composite
def mutated(draw, pair):
    """`pair` with one change deep inside: the hard case, a signature that differs a little."""
    value, key = pair
    tag = key[0]
    if tag in ("list", "tuple"):
        items = list(zip(value, key[1]))
        action = draw(st.sampled_from(["child", "append", "drop"] if items else ["append"]))
        if action == "append":
            items.append(draw(arguments))
        else:
            # The last item too: long sequences are where a summary would stop looking.
            index = draw(st.sampled_from(sorted({0, len(items) - 1, len(items) // 2})))
            if action == "drop":
                del items[index]
            else:
                items[index] = draw(mutated(items[index]))
        return _sequence(tag, items)
    if tag == "map":
        items = {name: (child, child_key) for (name, child), (_, child_key)
                 in zip(sorted(value.items(), key=lambda item: repr(item[0])), key[1])}
        if items and draw(st.booleans()):
            name = draw(st.sampled_from(sorted(items)))
            items[name] = draw(mutated(items[name]))
        else:
            items[draw(st.text(max_size=3))] = draw(arguments)
        return _mapping(items)
    if isinstance(value, (str, bytes)) and draw(st.booleans()):
        # The same beginning, a different end: long values are shown shortened.
        tail = draw(st.text(min_size=1, max_size=3) if isinstance(value, str)
                    else st.binary(min_size=1, max_size=3))
        changed = value + tail
        return changed, ("value", type(changed).__name__, repr(changed))
    return draw(st.one_of(tensors(), python_values))


@st.composite
def signature_pairs(draw):
    """Two call signatures: the same, one changed a little, or two unrelated ones."""
    old = draw(call_signatures)
    how = draw(st.sampled_from(["same", "mutated", "unrelated"]))
    if how == "same":
        return old, dict(old)
    if how == "unrelated":
        return old, draw(call_signatures)
    new = dict(old)
    if new and draw(st.integers(0, 3)):
        name = draw(st.sampled_from(sorted(new)))
        new[name] = draw(mutated(new[name]))
    else:
        new[draw(st.sampled_from(["inputs", "mask", "training", "k"]))] = draw(arguments)
    return old, new


def specs(signature):
    return {name: spec_of(value) for name, (value, _) in signature.items()}


def keys(signature):
    return {name: key for name, (_, key) in signature.items()}


PROPERTY_SETTINGS = settings(max_examples=100, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@PROPERTY_SETTINGS
@given(signature_pairs())
def test_changes_are_non_empty_exactly_when_the_signature_differs(pair):
    old, new = pair
    changes = diff_signatures(specs(old), specs(new))
    assert bool(changes) == (keys(old) != keys(new)), (keys(old), keys(new), changes)
    assert all(change.parameter in {*old, *new} and str(change).startswith(str(change.argument))
               for change in changes)


@PROPERTY_SETTINGS
@given(signature_pairs(), st.booleans())
def test_classification_never_crashes_and_reports_changes_only_for_a_new_signature(pair, creating):
    old, new = pair
    old_specs, new_specs = specs(old), specs(new)
    verdict = classify(RunContext.GRAPH, new_specs, "step", creating, [EarlierTrace(old_specs, True)])
    assert isinstance(reason_text(verdict), str) and isinstance(hint_text(verdict), str)
    if keys(old) == keys(new):
        assert texts(verdict.changes) == ()
        assert verdict.kind is (TraceKind.RETRACE if creating else TraceKind.VARIABLE_RETRACE)
    else:
        assert verdict.kind is TraceKind.RETRACE and verdict.changes
    for context in (RunContext.EAGER, RunContext.SYMBOLIC, RunContext.SAVE):
        assert classify(context, new_specs, None, None, []).changes == ()
    assert all(isinstance(text, str) for text in format_signature(new_specs).values())


@settings(PROPERTY_SETTINGS, max_examples=50)
@given(st.lists(call_signatures, min_size=1, max_size=4), call_signatures)
def test_closest_trace_has_the_fewest_changes(earlier, new):
    earlier_specs = [specs(signature) for signature in earlier]
    new_specs = specs(new)
    if new_specs in earlier_specs:
        return  # Classified as a repeat before the closest trace is looked for.
    closest, changes = closest_trace([EarlierTrace(s, True) for s in earlier_specs], new_specs)
    counts = [len(diff_signatures(s, new_specs)) for s in earlier_specs]
    assert len(changes) == min(counts)
    newest_best = len(counts) - 1 - counts[::-1].index(min(counts))
    assert closest.signature == earlier_specs[newest_best]


def call(self, inputs, mask=None, training=None, *rest, **options):
    return inputs


def strict(self, inputs):
    return inputs


@PROPERTY_SETTINGS
@given(st.lists(arguments, max_size=5), st.dictionaries(st.text(max_size=8), arguments, max_size=3))
def test_any_call_arguments_give_a_signature(args, kwargs):
    values = tuple(value for value, _ in args)
    named = {name: value for name, (value, _) in kwargs.items()}
    for function in (call, strict):
        signature = signature_of(function, values, named)
        assert all(isinstance(name, (str, ArgumentPath)) for name in signature)
        assert all(isinstance(text, str) for text in format_signature(signature).values())
