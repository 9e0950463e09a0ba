"""HTML tables of trace events, shared by notebook displays and the HTML report.

Every piece of user text (layer names, function names, signatures, reasons,
hints, errors) goes through `html.escape`. Kind colours are inline styles, so
they survive notebook front ends that drop `<style>` blocks.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from html import escape
from typing import Protocol, TypeAlias

from traceguard._core.events import RETRACE_KINDS, RUN_KINDS, TRACE_KINDS, TraceEvent, TraceKind
from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._reports import function_costs as costs
from traceguard._reports.fixes import backend_of, same_graph_changes, same_graph_text
from traceguard._reports.headline import function_counts, layer_runs_phrase
from traceguard._reports.torch_words import frames_text

# The Okabe-Ito palette, readable with every common colour-vision deficiency: cool colours
# for the expected runs, warm ones for the retraces worth fixing.
KIND_COLORS = {
    TraceKind.EAGER.value: "#56B4E9",
    TraceKind.SYMBOLIC.value: "#CC79A7",
    TraceKind.TRACE.value: "#0072B2",
    TraceKind.VARIABLE_RETRACE.value: "#E69F00",
    TraceKind.RETRACE.value: "#D55E00",
    TraceKind.SAVE.value: "#009E73",
    TraceKind.COMPILE.value: "#F0E442",
}
# Text on a kind's colour: the one of black and white with the higher contrast.
KIND_TEXT_COLORS = {
    TraceKind.EAGER.value: "#000",
    TraceKind.SYMBOLIC.value: "#000",
    TraceKind.TRACE.value: "#fff",
    TraceKind.VARIABLE_RETRACE.value: "#000",
    TraceKind.RETRACE.value: "#000",
    TraceKind.SAVE.value: "#000",
    TraceKind.COMPILE.value: "#000",
}
KIND_DESCRIPTIONS = {
    TraceKind.EAGER.value: "TensorFlow ran call op by op, outside any graph",
    TraceKind.SYMBOLIC.value: "Keras ran call on symbolic inputs to build the layer or infer output shapes",
    TraceKind.TRACE.value: "the first trace of a function object for this signature",
    TraceKind.VARIABLE_RETRACE.value: "traced again because the first trace created variables",
    TraceKind.RETRACE.value: "the same function object traced again, for a new key",
    TraceKind.SAVE.value: "traced by SavedModel saving or model.export",
    TraceKind.COMPILE.value: "a whole function compiled again by XLA for new input shapes, without a retrace",
}

TABLE_CSS = (
    ".traceguard{font:13px/1.4 system-ui,sans-serif}"
    ".tg-table{border-collapse:collapse;font:13px/1.4 system-ui,sans-serif;margin:4px 0 12px}"
    ".tg-table th,.tg-table td{text-align:left;vertical-align:top;padding:3px 8px;"
    "border-bottom:1px solid #e1e4e8}"
    ".tg-table th{font-weight:600;background:#f6f8fa}.tg-table td.num,.tg-table th.num{text-align:right;"
    "white-space:nowrap}"
    ".tg-table td.zero{color:#bbb}.tg-table .tg-text{max-width:46em}"
    ".tg-table .tg-fix{color:#57606a;margin-top:2px}.tg-table code{font-size:12px;white-space:nowrap}"
    ".tg-kind{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;white-space:nowrap}"
)
_INDICES_SHOWN = 8
_NONE = "\u00b7"
_BACKTICKED = re.compile(r"`([^`<>]+)`")


class EventLog(Protocol):
    """A layer's log as reports read it (a `TraceLog`): its events and counters."""

    owner: str

    @property
    def eager_calls(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    def __iter__(self) -> Iterator[TraceEvent]: ...

    def __len__(self) -> int: ...


class _LayerRunsLike(Protocol):
    """A layer's runs with their counters, as `explanation.layers` holds them (`LayerRuns`)."""

    @property
    def events(self) -> Sequence[TraceEvent]: ...


# What `events_by_layer` maps a layer's name to: its `TraceLog` (iterable), a `LayerRuns`, or
# a list of events.
LayerEvents: TypeAlias = "Iterable[TraceEvent] | _LayerRunsLike"


class LayerSnapshot(list):
    """One layer's events at one moment, with the counters its log or `LayerRuns` kept."""

    def __init__(self, runs: LayerEvents) -> None:
        super().__init__(runs.events if hasattr(runs, "events") else runs)
        self.eager_calls = getattr(runs, "eager_calls", 0)
        self.dropped = getattr(runs, "dropped", 0)


def snapshot(events_by_layer: Mapping[str, LayerEvents]) -> dict[str, LayerSnapshot]:
    """Layer name to a `LayerSnapshot` of its `TraceLog`, `LayerRuns` or list of events."""
    return {layer: LayerSnapshot(runs) for layer, runs in events_by_layer.items()}


def plural(count: int, word: str) -> str:
    """e.g. "1 run", "1,000 runs"."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def kind_badge(kind: str, text: str | None = None) -> str:
    """A pill in the kind's colour, with the kind's description as tooltip."""
    return (f'<span class="tg-kind" style="background:{KIND_COLORS[kind]};color:{KIND_TEXT_COLORS[kind]}" '
            f'title="{escape(KIND_DESCRIPTIONS[kind])}">{escape(text or kind)}</span>')


def _code(text: object) -> str:
    return f"<code>{escape(str(text))}</code>"


def _signature_html(event: TraceEvent) -> str:
    return ", ".join(_code(f"{name}={spec}") for name, spec in event.signature.items()) or "&ndash;"


def prose(text: str) -> str:
    """Escaped text whose `backticked` names render as code, as in the text reports."""
    return _BACKTICKED.sub(r"<code>\1</code>", escape(text))


def _why_and_fix(reason: str, hint: str | None, error: str | None = None) -> str:
    cell = f'<div class="tg-text">{prose(reason)}</div>'
    if hint:
        cell += f'<div class="tg-text tg-fix"><b>Fix:</b> {prose(hint)}</div>'
    if error:
        cell += f'<div class="tg-text tg-fix"><b>Error:</b> {escape(error)}</div>'
    return cell


def _indices_text(indices: Sequence[int]) -> str:
    shown = ", ".join(f"#{index}" for index in indices[:_INDICES_SHOWN])
    if len(indices) > _INDICES_SHOWN:
        shown += f", \u2026 ({len(indices)} runs)"
    elif len(indices) > 1:
        shown += f" ({len(indices)} runs)"
    return shown


def counts_table(events_by_layer: Mapping[str, Sequence[TraceEvent]]) -> str:
    """One row per layer: its runs of each kind and in all.

    Values that count more than their events (a `TraceLog`: `eager_calls`,
    `dropped`) add those columns when any is non-zero.
    """
    eager_calls = {layer: getattr(events, "eager_calls", 0) for layer, events in events_by_layer.items()}
    dropped = {layer: getattr(events, "dropped", 0) for layer, events in events_by_layer.items()}
    show_eager_calls, show_dropped = any(eager_calls.values()), any(dropped.values())
    header = "".join(f'<th class="num">{kind_badge(kind.value)}</th>' for kind in RUN_KINDS)
    header += '<th class="num">body runs</th>'
    header += '<th class="num" title="eager runs counted, logged or not">eager calls</th>' \
        if show_eager_calls else ""
    header += '<th class="num" title="older events dropped from the log">dropped</th>' if show_dropped else ""
    rows = []
    for layer, events in events_by_layer.items():
        counts = collections.Counter(event.kind for event in events)
        cells = "".join(f'<td class="num">{counts[kind]:,}</td>' if counts[kind] else
                        f'<td class="num zero">{_NONE}</td>' for kind in RUN_KINDS)
        cells += f'<td class="num">{len(events):,}</td>'
        cells += f'<td class="num">{eager_calls[layer]:,}</td>' if show_eager_calls else ""
        cells += f'<td class="num">{dropped[layer]:,}</td>' if show_dropped else ""
        rows.append(f"<tr><td>{escape(layer)}</td>{cells}</tr>")
    return (f'<table class="tg-table tg-counts"><thead><tr><th>layer</th>{header}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _runs_text(layers: Sequence[str], runs: Sequence[tuple[str, TraceEvent]]) -> str:
    """One layer's run numbers ("#2, #3 (2 runs)"), or how many runs the layers made."""
    return _indices_text([event.index for _, event in runs]) if len(layers) == 1 else plural(len(runs), "run")


def retraces_table(events_by_layer: Mapping[str, Sequence[TraceEvent]], groups: int = 40) -> str:
    """The layers' retraces, one row per cause (kind, function, why and fix) with the layers it
    covers and what changed: a cause shared by every layer of a model is said once.

    Returns "" when no layer retraced.
    """
    by_cause: dict[tuple, list[tuple[str, TraceEvent]]] = {}
    for layer, events in events_by_layer.items():
        for event in events:
            if event.kind in RETRACE_KINDS:
                key = (event.kind, event.function, event.reason, event.hint, event.error)
                by_cause.setdefault(key, []).append((layer, event))
    rows = []
    for (kind, function, reason, hint, error), runs in list(by_cause.items())[:groups]:
        layers = list(dict.fromkeys(layer for layer, _ in runs))
        named = ", ".join(escape(layer) for layer in layers[:6])
        named += f", … {len(layers):,} layers in all" if len(layers) > 6 else ""
        changes = list(dict.fromkeys(str(change) for _, event in runs for change in event.changes))
        changed = "<br>".join(_code(change) for change in changes[:3]) or "&ndash;"
        changed += f"<br><small>… {len(changes) - 3:,} more</small>" if len(changes) > 3 else ""
        rows.append(f"<tr><td>{named}</td><td>{kind_badge(kind.value)}</td>"
                    f"<td>{_code(function) if function else '&ndash;'}</td>"
                    f"<td>{_runs_text(layers, runs)}</td><td>{changed}</td>"
                    f"<td>{_why_and_fix(reason, hint, error)}</td></tr>")
    if len(by_cause) > groups:
        rows.append(f'<tr><td colspan="6">… and {len(by_cause) - groups:,} more causes; see '
                    "<code>traceguard run --full</code></td></tr>")
    if not rows:
        return ""
    return ('<table class="tg-table tg-retraces"><thead><tr><th>layers</th><th>kind</th><th>function</th>'
            f"<th>runs</th><th>changed</th><th>why, and the fix</th></tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>")


def events_table(events: Sequence[TraceEvent], max_rows: int = 60) -> str:
    """One row per event; past `max_rows`, the first and last halves with a gap row between."""
    events = list(events)
    shown: list[TraceEvent | None] = list(events)
    if len(events) > max_rows:
        head = max_rows // 2
        shown = [*events[:head], None, *events[len(events) - (max_rows - head):]]
    rows = []
    for event in shown:
        if event is None:
            rows.append(f'<tr><td colspan="6">\u2026 {len(events) - max_rows} more runs; all of them: '
                        "<code>trace_log.summary()</code></td></tr>")
            continue
        changed = "<br>".join(_code(change) for change in event.changes) or "&ndash;"
        rows.append(f'<tr><td class="num">{event.index}</td><td>{kind_badge(event.kind.value)}</td>'
                    f"<td>{_code(event.function) if event.function else '&ndash;'}</td>"
                    f"<td>{_signature_html(event)}</td><td>{changed}</td>"
                    f"<td>{_why_and_fix(event.reason, event.hint, event.error)}</td></tr>")
    return ('<table class="tg-table tg-events"><thead><tr><th class="num">#</th><th>kind</th>'
            "<th>function</th><th>signature</th><th>changed</th><th>why, and the fix</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def counts_badges(events: Sequence[TraceEvent]) -> str:
    """The counts by kind as coloured pills, e.g. [1 symbolic] [1 trace]."""
    counts = collections.Counter(event.kind.value for event in events)
    return " ".join(kind_badge(kind, f"{counts[kind]} {kind}") for kind in TRACE_KINDS if counts[kind]) \
        or "no runs recorded"


def log_html(log: EventLog, max_rows: int = 60) -> str:
    """The notebook display of one `TraceLog`: a heading with the counts, then the events table."""
    events = list(log)
    extras = []
    if log.eager_calls:
        extras.append(f"{log.eager_calls} eager call{'s' if log.eager_calls != 1 else ''}")
    if log.dropped:
        extras.append(f"{log.dropped} older event{'s' if log.dropped != 1 else ''} dropped")
    extra = f" <small>({escape('; '.join(extras))})</small>" if extras else ""
    table = events_table(events, max_rows) if events else ""
    return (f'<div class="traceguard"><style>{TABLE_CSS}</style>'
            f"<div><b>TraceLog of layer <code>{escape(log.owner)}</code></b>: {counts_badges(events)}{extra}"
            f"</div>{table}</div>")


def _waste(event: FunctionEvent, numbers: Mapping[int, int], events: Sequence[FunctionEvent]) -> str:
    """A retrace that built the same graph as an earlier one: why it was waste, what to relax."""
    if event.same_graph_as is None:
        return ""
    earlier = numbers.get(event.same_graph_as)
    same_as = f"#{earlier}" if earlier else "an earlier trace"
    text = same_graph_text(same_graph_changes(event, events), same_as, backend_of(event))
    return f'<div class="tg-text tg-fix"><b>Waste:</b> {prose(text)}</div>'


def functions_table(functions: Sequence[FunctionRuns]) -> str:
    """The traced functions (`FunctionRuns`), the most expensive first (by what all their misses
    cost), with a column per phase measured, and each one's traces with their costs.

    Returns "" when no function was recorded.
    """
    if not functions:
        return ""
    table = costs.table_rows(functions, lambda definition: str(definition or ""))
    header, rows = table[0], []
    for runs, cells in zip(costs.ranked(functions), table[1:]):
        numbers = {event.serial: runs.dropped + number for number, event in enumerate(runs.events, 1)}
        detail = "".join(
            f"<div>#{numbers[event.serial]} {kind_badge(event.kind.value)} "
            f"<small>{escape(costs.event_cost_text(event))}</small> "
            f"{'<br>'.join(_code(change) for change in event.changes) or escape(event.reason)}"
            f"{_waste(event, numbers, runs.events)}{_why_and_fix('', event.hint) if event.hint else ''}</div>"
            for event in runs.events)
        dropped = (f"<div><small>{runs.dropped:,} older events dropped; the counts and seconds cover "
                   "them</small></div>") if runs.dropped else ""
        summary = escape(costs.function_phrase(runs))
        frames = frames_text(runs)  # torch: the frames its graph breaks split it into.
        if frames:
            summary += f"; {escape(frames)}"
        numeric = "".join(f'<td class="num">{"&ndash;" if cell == "-" else escape(cell)}</td>'
                          for cell in cells[2:])
        inside = costs.enclosers(runs, functions)  # Its seconds are in that function's total too.
        within = f" <small>in {', '.join(map(_code, inside))}</small>" if inside else ""
        rows.append(f"<tr><td>{_code(runs.function)}{within}"
                    f"<br><small>{escape(str(runs.definition or ''))}</small>"
                    f"<br><small>{summary}</small></td>{numeric}<td>{dropped}{detail or '&ndash;'}</td></tr>")
    heads = "".join(f'<th class="num">{escape(name)}</th>' for name in header[2:])
    cache = costs.cache_phrase(functions)
    return (f'<table class="tg-table tg-functions"><thead><tr><th>function</th>{heads}'
            f"<th>each trace: what it cost, what changed, and the fix</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            + (f'<p class="tg-fix">{escape(cache)}</p>' if cache else ""))


def layers_html(events_by_layer: Mapping[str, LayerEvents], heading: str,
                functions: Sequence[FunctionRuns] = ()) -> str:
    """The notebook display of several layers' runs: the counts per layer, then the retraces.

    `events_by_layer` maps a layer name to its `TraceLog`, `LayerRuns` or list
    of events, e.g. `explanation.layers`.
    """
    events_by_layer = snapshot(events_by_layer)
    everything = [event for events in events_by_layer.values() for event in events]
    # Function traces as badges, the unit of every headline; the layer runs said as such.
    badges = " ".join(kind_badge(kind, f"{count:,} {kind}")
                      for kind, count in function_counts(functions).items())
    layer_runs = escape(layer_runs_phrase(len(events_by_layer), everything, functions))
    counts = f"{badges} <small>{layer_runs}</small>" if functions else layer_runs
    return (f'<div class="traceguard"><style>{TABLE_CSS}</style>'
            f"<div><b>{escape(heading)}</b>: {counts}</div>"
            f"{functions_table(functions)}"
            f"{counts_table(events_by_layer)}{retraces_table(events_by_layer)}</div>")
