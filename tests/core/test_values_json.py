"""Trace files' typed values: each core value written as JSON reads back as itself."""

import json

import pytest
from helpers import tensor

from traceguard._core.changes import Aspect, Change
from traceguard._core.keras_names import KerasCall
from traceguard._core.kinds import TraceKind
from traceguard._core.specs import (
    ArgumentPath,
    MappingSpec,
    NodeSpec,
    ObjectSpec,
    SequenceSpec,
    Site,
    ValueSpec,
)
from traceguard._core.values_json import (
    change_from_json,
    change_json,
    signature_from_json,
    signature_json,
    verdict_from_json,
    verdict_json,
)
from traceguard._core.verdicts import Hint, Reason, Verdict

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


def test_a_signature_reads_back_as_written():
    assert signature_from_json(through_json(signature_json(SIGNATURE))) == SIGNATURE


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
    data = through_json(change_json(change))
    assert change_from_json(data) == change and data["text"] == str(change)


def test_a_verdict_reads_back_with_what_its_words_name():
    changes = (Change(ArgumentPath("x"), Aspect.DIM, 32, None, axis=0),)
    verdict = Verdict(TraceKind.RETRACE, changes, Reason.SIGNATURE_CHANGED, Hint.RELAXED_DIMENSION, "f",
                      "tensorflow", "x", KerasCall("fit", "arrays", 70, 32, 7), data="dataset",
                      relaxed_to=tensor(None, 3), of_function=True)
    assert verdict_from_json(through_json(verdict_json(verdict)), changes) == verdict
