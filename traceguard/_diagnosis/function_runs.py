"""A function trace's record as a report shows it: its `FunctionEvent` (the record's verdict,
worded), and its place among its function's `FunctionRuns` in `Explanation.functions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.functions import FunctionId
from traceguard._core.keras_names import is_keras_step_function
from traceguard._reports.messages import hint_text, reason_text
from traceguard._reports.torch_words import torch_details

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace, MissCost


def function_event(record: FunctionTrace, cost: MissCost | None = None) -> FunctionEvent:
    """The record, worded: a view of it and its cost (`cost`, else its cost as it ended), with the
    words of its verdict (classified once, as the record was made)."""
    verdict = record.verdict
    if verdict is None:  # `FunctionRecords` classifies each record as it makes it.
        raise ValueError(f"A function trace without its verdict. Received: record of {record.name!r}")
    # The event holds the record itself, and its cost beside it: nothing copied.
    return FunctionEvent(record, _with_backend_words(reason_text(verdict), record), hint_text(verdict),
                         record.miss_cost if cost is None else cost)


def _with_backend_words(reason: str, record: FunctionTrace) -> str:
    """`reason`, then what the backend itself said of the trace (torch: its guard failure, graph breaks)."""
    details = torch_details(record) if record.origin == "torch.compile" else ""
    return f"{reason} {details}" if details else reason


def function_key(record: FunctionTrace) -> FunctionId:
    """The key of the record's function in `Explanation.functions`: its name and `def` site."""
    return FunctionId(record.qualname, record.definition)


def add_record(functions: dict[FunctionId, FunctionRuns], record: FunctionTrace,
               cost: MissCost | None = None) -> tuple[FunctionId, FunctionRuns, FunctionEvent]:
    """Adds the record's event to its function's runs in `functions` (keyed by name and site), with
    `cost` if its call returned already (a held library trace, `LibraryTraces`).

    Returns the key, the function's runs and the event added.
    """
    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        keras_step = record.library_function and is_keras_step_function(record.name)
        runs = functions[key] = FunctionRuns(record.qualname, record.name, record.definition, keras_step)
    event = function_event(record, cost)
    runs.add(event)
    runs.objects = max(runs.objects, record.objects)
    return key, runs, event


def add_cost(functions: dict[FunctionId, FunctionRuns], record: FunctionTrace,
             cost: MissCost) -> tuple[FunctionId, FunctionRuns, FunctionEvent] | None:
    """The record's event in `functions`, its costs final: `cost` (`FunctionRecords.on_complete`).

    Returns the key, the function's runs and the event, or None when the event is not
    kept (a helper function, or dropped).
    """
    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        return None
    event = runs.set_cost(record.serial, cost)  # Set once on the event; the record is not copied.
    return None if event is None else (key, runs, event)
