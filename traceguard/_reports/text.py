"""Plain-text rendering of trace events: log summaries, budget messages and reports."""

from __future__ import annotations

import collections
import itertools
import textwrap
from collections.abc import Sequence
from typing import Any

from traceguard._core.events import TRACE_KINDS, TraceEvent

_WIDTH = 100


def _signature_text(event: TraceEvent) -> str:
    return ", ".join(f"{name}={spec}" for name, spec in event.signature.items()) or "-"


def format_counts(events: Sequence[TraceEvent]) -> str:
    counts = collections.Counter(event.kind.value for event in events)
    return ", ".join(f"{counts[kind]} {kind}" for kind in TRACE_KINDS if counts[kind]) or "no events"


def format_event(event: TraceEvent, indent: str = "", show_hint: bool = True) -> str:
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
        add("fix", event.hint if show_hint else "as above.")
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


def format_layer_table(layers: Sequence[Any]) -> str:
    """One row of counts by kind per `LayerRuns`; `-` for none."""
    if not layers:
        return "(no Keras layer ran its `call` body)"
    kinds = [kind for kind in TRACE_KINDS if kind != "eager"] + ["eager"]
    header = ["layer", "class", *kinds]
    rows = [[runs.name, runs.class_name, *(str(runs.counts()[kind] or "-") for kind in kinds)]
            for runs in layers]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        text = [cell.ljust(width) if column < 2 else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(cells, widths))]
        return "  ".join(text).rstrip()

    return "\n".join(line(row) for row in [header, *rows])


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def format_explanation(title: str, layers: Sequence[Any]) -> str:
    """The text of `Explanation.summary()`: totals, table, retraces, then each layer's runs."""
    events = [event for runs in layers for event in runs.events]
    traced = [event for event in events if event.kind.value != "eager"]
    eager = sum(runs.counts()["eager"] for runs in layers)
    lines = [f"traceguard report for {title}: {_plural(len(layers), 'layer')}; "
             f"{format_counts(traced) if traced else 'no traced or symbolic runs'}; "
             f"{_plural(eager, 'eager run')}", "", format_layer_table(layers)]
    retraces = [(runs, event) for runs in layers for event in runs.events if event.kind.value == "retrace"]
    if retraces:
        lines += ["", f"Retraces ({len(retraces)}):"]
        lines += [f"  {runs.name} #{event.index} in {event.function}: "
                  f"{'; '.join(event.changes) or 'no argument of the layer changed'}"
                  for runs, event in retraces]
    for runs in layers:
        if not runs.events:
            continue
        kind = "TraceAwareLayer" if runs.trace_aware else "plain Keras layer"
        extras = f"; {runs.dropped} older events dropped" if runs.dropped else ""
        lines += ["", f"Layer '{runs.name}' ({runs.class_name}, {kind}): "
                  f"{format_counts(runs.events)}{extras}"]
        hints_shown: set[str] = set()
        for event in runs.events:
            lines.append(format_event(event, "  ", show_hint=event.hint not in hints_shown))
            hints_shown.add(event.hint)
    return "\n".join(lines)


def format_budget_failure(subject: str, n: int, count: int, events: list[TraceEvent],
                    where: str = "inside the block") -> str:
    """The text of an `assert_max_traces()` or `max_traces` marker failure."""
    lines = [f"{subject} traced {count} times {where}, more than the {n} allowed."]
    if events:
        lines.append("The traces of TraceAwareLayers counted, with their reasons:")
        for layer, layer_events in itertools.groupby(events, key=lambda event: event.layer):
            lines.append(f"  layer '{layer}':")
            lines.extend(format_event(event, "    ") for event in layer_events)
    else:
        lines.append("No TraceAwareLayer ran in these traces; wrap the code in "
                     "`traceguard.explain()` to see every layer's runs.")
    return "\n".join(lines)


def format_late_retrace(layers: Sequence[str], tracer: str, function: str | None, where: str,
                        changes: Sequence[str], fix: str) -> str:
    """The text of `TraceMonitor`'s warning of a retrace after the first epoch or call."""
    subject = f"Layer {layers[0]}" if len(layers) == 1 else f"Layers {', '.join(layers)}"
    return (f"{subject} retraced {tracer} `{function}` during {where}: "
            f"{'; '.join(changes) or 'none of its arguments changed'}. "
            f"Fix: {fix} All runs: TraceMonitor.report.")
