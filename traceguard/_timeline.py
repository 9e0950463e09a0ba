"""The SVG timeline of the HTML report: one row per layer, one mark per body run.

Layout is a pure function of the events. The x axis is time since the first
run (or the order of the runs, `axis="order"`), snapped to a grid of
`CELL_WIDTH`-pixel cells so marks never overlap: a cell holding runs of one
kind and one explanation is one mark, and consecutive such cells merge into one
bar; a cell holding runs of different kinds is one mark stacked by kind. That
keeps 100 layers x 1,000 runs to a few thousand SVG elements.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Mapping, Sequence
from html import escape

from traceguard._events import TraceEvent, TraceKind
from traceguard._html_tables import KIND_COLORS, plural

AXES = ("time", "order")

LABEL_WIDTH = 210
PLOT_WIDTH = 880
STATS_WIDTH = 165
PADDING = 8
CELL_WIDTH = 5
ROW_HEIGHT = 22
MARK_HEIGHT = 12
# Retraces stand out by height as well as colour, for readers who cannot tell the colours apart.
RETRACE_MARK_HEIGHT = 18
AXIS_HEIGHT = 26
TOTAL_WIDTH = LABEL_WIDTH + PLOT_WIDTH + STATS_WIDTH
CELLS = PLOT_WIDTH // CELL_WIDTH
# Past this many rows the axis is repeated under the last row.
_ROWS_FOR_BOTTOM_AXIS = 12
_LABEL_CHARACTERS = 30
_RETRACE_KINDS = (TraceKind.VARIABLE_RETRACE, TraceKind.RETRACE)
# Most costly first: the order in which a digest explains runs and a stacked mark stacks them, top down.
SEVERITY = (TraceKind.RETRACE, TraceKind.VARIABLE_RETRACE, TraceKind.SAVE, TraceKind.TRACE,
            TraceKind.SYMBOLIC, TraceKind.EAGER)
# A merged or stacked mark describes at most this many distinct explanations.
_TITLE_EXPLANATIONS = 3
_TITLE_VARIABLES = 3
_MIN_SEGMENT = 2
_MIN_RETRACE_SEGMENT = 5
_ISOLATED_GROWTH = 2


@dataclasses.dataclass(frozen=True)
class Mark:
    """One drawn mark: the runs of one row that fall in cells `first_cell..last_cell`.

    Attributes:
        kinds: How many of the runs are of each kind.
        explanations: The distinct `(kind, function, changes, reason, hint,
            error)` of the runs, in order of first appearance.
    """

    first_cell: int
    last_cell: int
    events: tuple[TraceEvent, ...]
    kinds: Mapping[TraceKind, int]
    explanations: tuple[tuple, ...]


def _explanation(event: TraceEvent) -> tuple:
    """What a mark's title says about a run, apart from its index, time and signature."""
    return (event.kind, event.function, event.changes, event.reason, event.hint, event.error)


def event_positions(events_by_layer: Mapping[str, Sequence[TraceEvent]], axis: str) -> tuple[
        list[list[float]], float, str]:
    """Per row, each event's x in [0, 1]; the time span in seconds; and the axis used.

    Falls back to the order axis when all runs share one timestamp.
    """
    rows = [[event.timestamp for event in events] for events in events_by_layer.values()]
    timestamps = [timestamp for row in rows for timestamp in row]
    if not timestamps:
        return rows, 0.0, axis
    first = min(timestamps)
    span = max(timestamps) - first
    if axis == "time" and span > 0:
        return [[(timestamp - first) / span for timestamp in row] for row in rows], span, axis
    # Ties (one timestamp for many runs) keep the mapping's row order, then each log's order.
    ranks = sorted((timestamp, row, column) for row, values in enumerate(rows)
                   for column, timestamp in enumerate(values))
    last = max(len(ranks) - 1, 1)
    for rank, (_, row, column) in enumerate(ranks):
        rows[row][column] = rank / last
    return rows, span, "order"


def _shares_one_explanation(events: Sequence[TraceEvent]) -> bool:
    # Field by field rather than by hashing explanation tuples: most cells hold runs that
    # share one, and this is the report's inner loop (100,000 runs in the benchmark).
    first = events[0]
    return all(event.kind is first.kind and event.function == first.function
               and event.changes == first.changes and event.reason == first.reason
               and event.hint == first.hint and event.error == first.error for event in events)


def layout_row(events: Sequence[TraceEvent], positions: Sequence[float]) -> list[Mark]:
    """The marks of one row, left to right, given each event's x in [0, 1]."""
    last_cell = CELLS - 1
    by_cell: dict[int, list[TraceEvent]] = collections.defaultdict(list)
    for event, position in zip(events, positions):
        by_cell[round(position * last_cell)].append(event)
    # [first cell, last cell, events, kinds, explanations] of each mark, frozen at the end.
    spans: list[list] = []
    for cell in sorted(by_cell):
        cell_events = by_cell[cell]
        if _shares_one_explanation(cell_events):
            explanations = (_explanation(cell_events[0]),)
            previous = spans[-1] if spans else None
            if previous is not None and previous[1] == cell - 1 and previous[4] == explanations:
                previous[1] = cell
                previous[2].extend(cell_events)
                previous[3][cell_events[0].kind] += len(cell_events)
                continue
            kinds = collections.Counter({cell_events[0].kind: len(cell_events)})
        else:
            explanations = tuple(dict.fromkeys(_explanation(event) for event in cell_events))
            kinds = collections.Counter(event.kind for event in cell_events)
        spans.append([cell, cell, cell_events, kinds, explanations])
    return [Mark(first, last, tuple(events), dict(kinds), explanations)
            for first, last, events, kinds, explanations in spans]


def _format_seconds(seconds: float, span: float) -> str:
    if span < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.3f} s"


def _event_title(event: TraceEvent, offset: float, span: float) -> str:
    where = f" in {event.function}" if event.function else ""
    signature = ", ".join(f"{name}={spec}" for name, spec in event.signature.items()) or "no arguments"
    lines = [f"#{event.index} {event.kind.value}{where}",
             f"at +{_format_seconds(offset, span)}, ran {event.duration_s * 1000:.1f} ms ({signature})"]
    if event.changes:
        lines.append("changed: " + "; ".join(event.changes))
    lines.append("why: " + event.reason)
    if event.hint:
        lines.append("fix: " + event.hint)
    if event.created_variables:
        shown = ", ".join(event.created_variables[:_TITLE_VARIABLES])
        more = len(event.created_variables) - _TITLE_VARIABLES
        lines.append(f"created: {shown}" + (f" and {more} more" if more > 0 else ""))
    if event.error:
        lines.append("error: " + event.error)
    return "\n".join(lines)


def mark_title(mark: Mark, first_timestamp: float, span: float) -> str:
    """The tooltip of a mark: every detail of a single run, a digest of several."""
    events = mark.events
    if len(events) == 1:
        return _event_title(events[0], events[0].timestamp - first_timestamp, span)
    start = min(event.timestamp for event in events) - first_timestamp
    end = max(event.timestamp for event in events) - first_timestamp
    counts = ", ".join(f"{mark.kinds[kind]} {kind.value}" for kind in TraceKind if mark.kinds.get(kind))
    lines = [f"{len(events)} body runs, #{min(event.index for event in events)}\u2013"
             f"#{max(event.index for event in events)}, +{_format_seconds(start, span)} to "
             f"+{_format_seconds(end, span)}: {counts}"]
    seen_texts: set[str] = set()
    distinct = sorted(mark.explanations, key=lambda explanation: SEVERITY.index(explanation[0]))
    for kind, function, changes, reason, hint, error in distinct[:_TITLE_EXPLANATIONS]:
        where = f" in {function}" if function else ""
        lines.append(f"{kind.value}{where}" + (": " + "; ".join(changes) if changes else ""))
        for label, text in (("why", reason), ("fix", hint), ("error", error)):
            if text and text not in seen_texts:
                seen_texts.add(text)
                lines.append(f"  {label}: {text}")
    if len(distinct) > _TITLE_EXPLANATIONS:
        lines.append(f"and {len(distinct) - _TITLE_EXPLANATIONS} more explanations; see the tables below")
    return "\n".join(lines)


def _mark_svg(mark: Mark, y_center: float, title: str, isolated: bool) -> str:
    x = LABEL_WIDTH + PADDING + mark.first_cell * CELL_WIDTH
    width = (mark.last_cell - mark.first_cell + 1) * CELL_WIDTH - 1
    if isolated:
        # No mark within a cell on either side: widen into the free space, easier to see and hover.
        x, width = x - _ISOLATED_GROWTH, width + 2 * _ISOLATED_GROWTH
    kinds = mark.kinds
    has_retrace = any(kinds.get(kind) for kind in _RETRACE_KINDS)
    height = RETRACE_MARK_HEIGHT if has_retrace else MARK_HEIGHT
    top = y_center - height / 2
    parts = [f'<g class="mark" data-runs="{len(mark.events)}"><title>{escape(title)}</title>']
    present = [kind for kind in SEVERITY if kinds.get(kind)]
    if len(present) == 1:
        parts.append(f'<rect class="k-{present[0].value}" x="{x}" y="{top:g}" width="{width}" '
                     f'height="{height}" rx="1"/>')
    else:
        # Stacked by kind, most costly on top; each kind keeps a minimum height so a lone
        # retrace among many eager runs still shows.
        minimum = {kind: _MIN_RETRACE_SEGMENT if kind in _RETRACE_KINDS else _MIN_SEGMENT
                   for kind in present}
        spare = height - sum(minimum.values())
        total = sum(kinds[kind] for kind in present)
        y = top
        for position, kind in enumerate(present):
            last = position == len(present) - 1
            segment = top + height - y if last else minimum[kind] + round(spare * kinds[kind] / total)
            parts.append(f'<rect class="k-{kind.value}" x="{x}" y="{y:g}" width="{width}" '
                         f'height="{segment:g}"/>')
            y += segment
    parts.append("</g>")
    return "".join(parts)


def _ticks(span: float, axis: str, count: int) -> list[tuple[float, str]]:
    """Axis ticks as (fraction of the plot, label), at round numbers."""
    if axis == "order":
        total = max(count - 1, 1)
        step = max(1, round(_nice_step(total)))
        return [(value / total, f"run {value + 1}") for value in range(0, total + 1, step)]
    step = _nice_step(span)
    return [(value / span, _format_tick(value, step))
            for value in (step * i for i in range(int(span / step + 1e-9) + 1))]


def _nice_step(span: float, target: int = 8) -> float:
    """The round step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`."""
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def _format_tick(seconds: float, step: float) -> str:
    if step < 1e-3:
        return f"{seconds * 1000:.{max(0, -math.floor(math.log10(step * 1000)))}f} ms"
    if step < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.0f} s"


def _axis_svg(ticks: Sequence[tuple[float, str]], label_y: float, grid_top: float, grid_bottom: float,
              axis_label: str) -> str:
    parts = [f'<text class="axis-name" x="{LABEL_WIDTH - 8}" y="{label_y}" text-anchor="end">'
             f"{axis_label}</text>"]
    for fraction, label in ticks:
        x = LABEL_WIDTH + PADDING + fraction * (CELLS - 1) * CELL_WIDTH + (CELL_WIDTH - 1) / 2
        if grid_bottom > grid_top:
            parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{grid_top}" y2="{grid_bottom}"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{label_y}">{escape(label)}</text>')
    return "".join(parts)


def render_timeline(events_by_layer: Mapping[str, Sequence[TraceEvent]], axis: str = "time") -> str:
    """The `<svg>` element of the timeline: axis, then one row per layer."""
    positions, span, used_axis = event_positions(events_by_layer, axis)
    count = sum(len(events) for events in events_by_layer.values())
    first_timestamp = min((event.timestamp for events in events_by_layer.values() for event in events),
                          default=0.0)
    rows_bottom = AXIS_HEIGHT + ROW_HEIGHT * len(events_by_layer)
    bottom_axis = len(events_by_layer) > _ROWS_FOR_BOTTOM_AXIS
    height = rows_bottom + (AXIS_HEIGHT if bottom_axis else 8)
    axis_label = "time since the first run" if used_axis == "time" else "body runs in order"
    ticks = _ticks(span, used_axis, count) if count else []
    out = [f'<svg class="timeline" width="{TOTAL_WIDTH}" '
           f'height="{height}" viewBox="0 0 {TOTAL_WIDTH} {height}" role="img" '
           f'aria-label="Timeline of body runs per layer, x axis: {axis_label}">',
           _axis_svg(ticks, 16, AXIS_HEIGHT - 4, rows_bottom + 2, axis_label)]
    if bottom_axis:
        out.append(_axis_svg(ticks, rows_bottom + 18, 0, 0, axis_label))
    stats_x = LABEL_WIDTH + PADDING + PLOT_WIDTH + 12
    for row, ((layer, events), row_positions) in enumerate(zip(events_by_layer.items(), positions)):
        top = AXIS_HEIGHT + row * ROW_HEIGHT
        center = top + ROW_HEIGHT / 2
        label = layer if len(layer) <= _LABEL_CHARACTERS else layer[:_LABEL_CHARACTERS - 1] + "\u2026"
        retraces = sum(event.kind in _RETRACE_KINDS for event in events)
        out.append(f'<g class="row" data-layer="{escape(layer)}" data-runs="{len(events)}">'
                   f'<rect class="stripe" x="0" y="{top}" width="{TOTAL_WIDTH}" height="{ROW_HEIGHT}"/>'
                   f'<text class="label" x="{LABEL_WIDTH - 8}" y="{center + 4:g}" text-anchor="end">'
                   f'<title>{escape(layer)}</title>{escape(label)}</text>')
        marks = layout_row(events, row_positions)
        for before, mark, after in zip([None, *marks], marks, [*marks[1:], None]):
            isolated = ((before is None or before.last_cell < mark.first_cell - 1)
                        and (after is None or after.first_cell > mark.last_cell + 1))
            out.append(_mark_svg(mark, center, mark_title(mark, first_timestamp, span), isolated))
        out.append(f'<text class="stats" x="{stats_x}" y="{center + 4:g}">{plural(len(events), "run")}')
        if retraces:
            out.append(f'<tspan class="retraces"> \u00b7 {plural(retraces, "retrace")}</tspan>')
        out.append("</text></g>")
    out.append("</svg>")
    return "".join(out)


def timeline_css() -> str:
    """The CSS rules the timeline's classes need, one colour rule per kind."""
    kind_rules = "".join(f".k-{kind}{{fill:{color}}}" for kind, color in KIND_COLORS.items())
    return kind_rules + (
        ".timeline{display:block;max-width:100%;height:auto;font:12px system-ui,sans-serif}"
        ".timeline .stripe{fill:transparent}"
        ".timeline .row:nth-of-type(even) .stripe{fill:#1f2328;fill-opacity:.04}"
        ".timeline .row:hover .stripe{fill:#0969da;fill-opacity:.09}"
        ".timeline .label{fill:#1f2328}.timeline .stats{fill:#57606a;font-size:11px}"
        ".timeline .retraces{fill:#b34700;font-weight:600}"
        ".timeline .grid{stroke:#d0d7de;stroke-width:1;stroke-dasharray:2 3}"
        ".timeline .tick{fill:#57606a;font-size:11px;text-anchor:middle}"
        ".timeline .axis-name{fill:#57606a;font-size:11px;font-style:italic}"
        ".timeline .mark:hover rect{stroke:#1f2328;stroke-width:1}"
    )
