"""A function trace's record as a report shows it: its `FunctionEvent` (the record's verdict,
worded), and its place among its function's `FunctionRuns` in `Explanation.functions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.functions import FunctionId
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.kinds import TraceKind
from traceguard._reports.messages import hint_text, reason_text
from traceguard._reports.torch_words import torch_details

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace


def function_event(record: FunctionTrace) -> FunctionEvent:
    """The record, worded: its verdict (classified once, as the record was made) and its words."""
    verdict = record.verdict
    if verdict is None:  # `FunctionRecords` classifies each record as it makes it.
        raise ValueError(f"A function trace without its verdict. Received: record of {record.name!r}")
    return FunctionEvent(
        serial=record.serial, kind=verdict.kind, function=record.name,
        signature=record.signature, changes=tuple(verdict.changes),
        reason=_with_backend_words(reason_text(verdict), record), hint=hint_text(verdict),
        call_site=record.call_site,
        definition=record.definition,
        duration_s=0.0 if verdict.kind is TraceKind.COMPILE else record.duration,
        object_number=record.object_number, created_variables=record.created_variables,
        parent=record.parent,
        same_graph_as=record.same_graph_as if verdict.kind is TraceKind.RETRACE else None,
        phases=dict(record.phases), miss_s=record.miss, persistent_cache=record.persistent_cache,
        cache_saved_s=record.cache_saved, verdict=verdict, started=record.started)


def _with_backend_words(reason: str, record: FunctionTrace) -> str:
    """`reason`, then what the backend itself said of the trace (torch: its guard failure, graph breaks)."""
    details = torch_details(record) if record.origin == "torch.compile" else ""
    return f"{reason} {details}" if details else reason


def function_key(record: FunctionTrace) -> FunctionId:
    """The key of the record's function in `Explanation.functions`: its name and `def` site."""
    return FunctionId(record.qualname, record.definition)


def add_record(functions: dict[FunctionId, FunctionRuns],
               record: FunctionTrace) -> tuple[FunctionId, FunctionRuns, FunctionEvent]:
    """Adds the record's event to its function's runs in `functions` (keyed by name and site).

    Returns the key, the function's runs and the event added.
    """
    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        keras_step = record.library_function and is_keras_step_function(record.name)
        runs = functions[key] = FunctionRuns(record.qualname, record.name, record.definition, keras_step)
    event = function_event(record)
    runs.add(event)
    runs.objects = max(runs.objects, record.objects)
    return key, runs, event


def add_cost(functions: dict[FunctionId, FunctionRuns],
             record: FunctionTrace) -> tuple[FunctionId, FunctionRuns, FunctionEvent] | None:
    """The record's event in `functions`, its costs final (`FunctionRecords.on_complete`).

    Returns the key, the function's runs and the event, or None when the event is not
    kept (a helper function, or dropped).
    """
    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        return None
    for event in reversed(runs.events):
        if event.serial == record.serial:
            break
    else:
        return None
    # A copy with the costs, as `dataclasses.replace` would make it, without `__init__` over every field.
    costed = object.__new__(FunctionEvent)
    costed.__dict__.update(event.__dict__, phases=dict(record.phases), miss_s=record.miss,
                           persistent_cache=record.persistent_cache, cache_saved_s=record.cache_saved,
                           started=record.started if record.started is not None else event.started)
    runs.replace(costed)
    return key, runs, costed
