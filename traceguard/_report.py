"""Plain-text rendering of trace events: log summaries and budget messages."""

from __future__ import annotations

import collections
import textwrap
from collections.abc import Sequence

from traceguard._events import TRACE_KINDS, TraceEvent

_WIDTH = 100


def _signature_text(event: TraceEvent) -> str:
    return ", ".join(f"{name}={spec}" for name, spec in event.signature.items()) or "-"


def format_counts(events: Sequence[TraceEvent]) -> str:
    counts = collections.Counter(event.kind.value for event in events)
    return ", ".join(f"{counts[kind]} {kind}" for kind in TRACE_KINDS if counts[kind]) or "no events"


def format_event(event: TraceEvent, indent: str = "") -> str:
    """One event as a header line and its why / changed / fix lines."""
    where = f" in {event.function}" if event.function else ""
    lines = [f"{indent}#{event.index} {event.kind.value}{where}  ({_signature_text(event)})"]

    def add(label: str, text: str) -> None:
        lines.extend(textwrap.wrap(text, _WIDTH, initial_indent=f"{indent}   {label}: ",
                                   subsequent_indent=f"{indent}   {' ' * len(label)}  "))

    if event.changes:
        add("changed", "; ".join(event.changes))
    if event.created_variables:
        add("created", ", ".join(event.created_variables))
    add("why", event.reason)
    if event.hint:
        add("fix", event.hint)
    if event.error:
        add("error", event.error)
    return "\n".join(lines)


def format_log(owner: str, events: Sequence[TraceEvent], dropped: int, eager_calls: int) -> str:
    """The text of `TraceLog.summary()`."""
    header = f"TraceLog of layer '{owner}': {format_counts(events)}"
    extras = []
    if eager_calls:
        extras.append(f"{eager_calls} eager call{'s' if eager_calls != 1 else ''}")
    if dropped:
        extras.append(f"{dropped} older event{'s' if dropped != 1 else ''} dropped")
    if extras:
        header += f" ({'; '.join(extras)})"
    return "\n".join([header, *(format_event(event, "  ") for event in events)])


def format_budget_excess(layer: str, budget: int | None, traces: int, event: TraceEvent) -> str:
    """The text of the retrace-budget warning and `RetraceError`."""
    changes = "; ".join(event.changes) or "none of this layer's arguments"
    return (
        f"Layer '{layer}' traced {traces} times, over its budget of max_traces={budget}.\n"
        f"  Event #{event.index} ({event.kind.value} in {event.function}): {event.reason}\n"
        f"  Changed: {changes}\n"
        f"  Fix: {event.hint or 'see the reason above.'}\n"
        f"  All events: layer.trace_log.summary()"
    )
