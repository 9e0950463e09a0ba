"""A function trace's record: the `FunctionTrace` made of the hook's `FunctionTracing`, its
`Diagnosis` and its verdict, classified once here for every report and guard to read."""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Mapping
from typing import Any

from traceguard._core.function_rules import classify_function_trace
from traceguard._core.functions import Diagnosis, FunctionTrace, MissCost
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.specs import Site, Spec
from traceguard._record.function_identity import TraceFacts

# A record's facts as the hook read them and as its diagnosis found them: each a field of the record
# by the same name, so a new fact is a field of those values (and its words), not a line here.
_RECORD_FIELDS = frozenset(field.name for field in dataclasses.fields(FunctionTrace))
_MADE_HERE = frozenset({"call_site", "signature", "relaxed_signature", "graph_breaks", "kind",
                        "object_number", "objects", "resumed_after"})
_AS_DIAGNOSED = tuple(sorted(
    _RECORD_FIELDS.intersection(field.name for field in dataclasses.fields(Diagnosis)) - _MADE_HERE))
_as_read: dict[type, tuple[str, ...]] = {}  # The tracing's class -> the record's fields it holds.


def _fields_read(tracing: Any) -> tuple[str, ...]:
    """The record's fields `_compat._function_tracing.FunctionTracing` holds by the same name."""
    names = _as_read.get(type(tracing))
    if names is None:
        fields = (field.name for field in dataclasses.fields(tracing))
        names = _as_read[type(tracing)] = tuple(sorted(_RECORD_FIELDS.intersection(fields) - _MADE_HERE))
    return names


def function_trace(index: int, tracing: Any, facts: TraceFacts, diagnosis: Diagnosis, number: int,
                   objects: int, old: Mapping[Any, Spec] | None) -> FunctionTrace:
    """The record of `tracing` (a `_compat._function_tracing.FunctionTracing`), with its verdict.

    `number` and `objects` number its function object among those of its `def` site; `old` is the
    signature of the trace its changes are from (`diagnosis.closest`), or None.
    """
    site = facts.site
    record = FunctionTrace(
        index=index, **{name: _immutable(getattr(tracing, name)) for name in _fields_read(tracing)},
        **{name: getattr(diagnosis, name) for name in _AS_DIAGNOSED},
        qualname=site[0] if site else tracing.name, definition=Site(site[1], site[2]) if site else None,
        call_site=None if tracing.call_site is None else Site(*tracing.call_site),
        signature=types.MappingProxyType(facts.signature), kind=diagnosis.kind, duration=tracing.duration,
        object_number=number, objects=objects,
        relaxed_signature=None if tracing.relaxed_signature is None
        else types.MappingProxyType(tracing.relaxed_signature),
        miss_cost=MissCost(types.MappingProxyType(dict(tracing.phases)), started=_epoch(tracing.start)),
        graph_breaks=tuple((what, Site(file, line)) for what, file, line in tracing.graph_breaks),
        resumed_after=None if getattr(tracing, "resumed_after", None) is None
        else Site(*tracing.resumed_after))
    # The verdict reads the record itself; set once, as `__post_init__` would, before anyone holds it
    # (a second `__init__` over every field would double what making a record costs).
    keras_step = record.library_function and is_keras_step_function(record.name)
    object.__setattr__(record, "verdict", classify_function_trace(record, old, record.backend, keras_step,
                                                                  record.keras_call))
    return record


def _immutable(value: Any) -> Any:
    """A list the hook built, as the tuple a record keeps."""
    return tuple(value) if isinstance(value, list) else value


def _epoch(perf_counter_time: float) -> float:
    """A `time.perf_counter()` reading of this process as seconds since the epoch."""
    return time.time() - (time.perf_counter() - perf_counter_time)
