"""A function trace's record: the `FunctionTrace` made of the hook's `FunctionTracing`, its
`Diagnosis` and its verdict, classified once here for every report and guard to read."""

from __future__ import annotations

import time
import types
from collections.abc import Mapping
from typing import Any

from traceguard._core.function_rules import classify_function_trace
from traceguard._core.functions import Diagnosis, FunctionTrace, MissCost
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.specs import Site, Spec
from traceguard._record.function_identity import TraceFacts


def function_trace(index: int, tracing: Any, facts: TraceFacts, diagnosis: Diagnosis, number: int,
                   objects: int, old: Mapping[Any, Spec] | None) -> FunctionTrace:
    """The record of `tracing` (a `_compat._function_tracing.FunctionTracing`), with its verdict.

    `number` and `objects` number its function object among those of its `def` site; `old` is the
    signature of the trace its changes are from (`diagnosis.closest`), or None.
    """
    site, signature = facts.site, facts.signature
    record = FunctionTrace(
        index=index, serial=tracing.serial, parent=tracing.parent, origin=tracing.origin,
        name=tracing.name, qualname=site[0] if site else tracing.name,
        definition=Site(site[1], site[2]) if site else None,
        call_site=None if tracing.call_site is None else Site(*tracing.call_site),
        caller=tracing.caller, entry=tracing.entry,
        signature=types.MappingProxyType(signature), kind=diagnosis.kind, reason=diagnosis.reason,
        changes=diagnosis.changes, closest=diagnosis.closest, duration=tracing.duration,
        object_number=number, objects=objects, saving=tracing.saving,
        phase=tracing.phase, created_variables=tuple(tracing.created_variables),
        relaxed=tracing.relaxed, raised=tracing.raised,
        library_function=tracing.library_function, keras_call=tracing.keras_call,
        lifted_variables=diagnosis.lifted_variables, optimizer_builds=tracing.optimizer_builds,
        same_graph_as=getattr(tracing, "same_graph_as", None),
        relaxed_signature=None if tracing.relaxed_signature is None
        else types.MappingProxyType(tracing.relaxed_signature),
        data=tracing.data, same_model=diagnosis.same_model,
        xla_functions=tuple(getattr(tracing, "xla_functions", ())),
        miss_cost=MissCost(types.MappingProxyType(dict(getattr(tracing, "phases", {}))),
                           started=_epoch(tracing.start)),
        requested=getattr(tracing, "requested", False),
        restored=getattr(tracing, "restored", False),
        traced_for=getattr(tracing, "traced_for", None), body_of=getattr(tracing, "body_of", None),
        backend_reasons=tuple(getattr(tracing, "backend_reasons", ())),
        graph_breaks=tuple((what, Site(file, line)) for what, file, line
                           in getattr(tracing, "graph_breaks", ())))
    # The verdict reads the record itself; set once, as `__post_init__` would, before anyone holds it
    # (a second `__init__` over every field would double what making a record costs).
    keras_step = record.library_function and is_keras_step_function(record.name)
    object.__setattr__(record, "verdict", classify_function_trace(record, old, record.backend, keras_step,
                                                                  record.keras_call))
    return record


def _epoch(perf_counter_time: float) -> float:
    """A `time.perf_counter()` reading of this process as seconds since the epoch."""
    return time.time() - (time.perf_counter() - perf_counter_time)
