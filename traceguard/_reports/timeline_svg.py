"""The timeline drawn as inline SVG: an axis, then per layer a row of marks.

Each mark is a `<g class="mark" data-runs="N">` whose `<title>` is the
tooltip and whose `<rect>`s carry the kind as class `k-<kind>`; each row is a
`<g class="row" data-layer="..." data-runs="N">`. Tests and the browser check
read these, so they are part of the output's contract.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from traceguard._core.events import RETRACE_KINDS, TraceEvent, TraceKind
from traceguard._reports.html_tables import KIND_COLORS, plural
from traceguard._reports.timeline import SEVERITY, Mark, layout, mark_title

LABEL_WIDTH = 210
PLOT_WIDTH = 790
STATS_WIDTH = 260  # "6 runs · 1 variable_retrace · 1 retrace" at 11 px.
PADDING = 8
MIN_CELL_WIDTH = 5
ROW_HEIGHT = 22
MARK_HEIGHT = 12
# Retraces stand out by height as well as colour, for readers who cannot tell the colours apart.
RETRACE_MARK_HEIGHT = 18
AXIS_HEIGHT = 26
TOTAL_WIDTH = LABEL_WIDTH + PADDING + PLOT_WIDTH + STATS_WIDTH
# Past this many rows the axis is repeated under the last row.
_ROWS_FOR_BOTTOM_AXIS = 12
_LABEL_CHARACTERS = 30
# In a stacked mark each kind keeps a minimum height, so a lone retrace among many runs shows.
_MIN_SEGMENT = 2
_MIN_RETRACE_SEGMENT = 5
# A mark with no neighbour within a cell grows into the free space: easier to see and to hover.
_ISOLATED_GROWTH = 2


def _mark_svg(mark: Mark, cell_width: int, y_center: float, title: str, isolated: bool) -> str:
    x = LABEL_WIDTH + PADDING + mark.first_cell * cell_width
    width = (mark.last_cell - mark.first_cell + 1) * cell_width - 1
    if isolated:
        x, width = x - _ISOLATED_GROWTH, width + 2 * _ISOLATED_GROWTH
    kinds = mark.kinds
    present = [kind for kind in SEVERITY if kinds.get(kind)]
    height = RETRACE_MARK_HEIGHT if any(kind in RETRACE_KINDS for kind in present) else MARK_HEIGHT
    top = y_center - height / 2
    parts = [f'<g class="mark" data-runs="{len(mark.events)}"><title>{escape(title)}</title>']
    if len(present) == 1:
        parts.append(f'<rect class="k-{present[0].value}" x="{x}" y="{top:g}" width="{width}" '
                     f'height="{height}" rx="1"/>')
    else:
        minimum = {kind: _MIN_RETRACE_SEGMENT if kind in RETRACE_KINDS else _MIN_SEGMENT for kind in present}
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


def _nice_step(span: float, target: int = 8) -> float:
    """The round step (1, 2 or 5 times a power of ten) giving about `target` ticks over `span`."""
    raw = span / target
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def ticks(span: float, axis: str, count: int) -> list[tuple[float, str]]:
    """Axis ticks as (fraction of the plot, label), at round numbers of seconds or runs."""
    if count == 0:
        return []
    if axis == "order":
        total = max(count - 1, 1)
        run_step = max(1, round(_nice_step(total)))
        return [(value / total, f"run {value + 1:,}") for value in range(0, total + 1, run_step)]
    step = _nice_step(span)
    # A tick within a thousandth of a step past the span still shows: timestamps near 1.8e9 s
    # carry float rounding of about 0.2 us.
    values = [step * i for i in range(int(span / step + 1e-3) + 1)]
    unit, scale = ("s", 1) if span >= 1 else ("ms", 1000)
    decimals = max(0, -math.floor(math.log10(step * scale) + 1e-9))
    return [(value / span, f"{value * scale:.{decimals}f} {unit}") for value in values]


def _axis_svg(tick_list: Sequence[tuple[float, str]], cells: int, cell_width: int, label_y: float,
              grid: tuple[float, float] | None, axis_label: str) -> str:
    parts = [f'<text class="axis-name" x="{LABEL_WIDTH - 8}" y="{label_y}" text-anchor="end">'
             f"{axis_label}</text>"]
    for fraction, label in tick_list:
        x = LABEL_WIDTH + PADDING + fraction * (cells - 1) * cell_width + (cell_width - 1) / 2
        if grid is not None:
            parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{grid[0]}" y2="{grid[1]}"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{label_y}">{escape(label)}</text>')
    return "".join(parts)


def render_timeline(events_by_layer: Mapping[str, Sequence[TraceEvent]], axis: str = "time",
                    function_rows: frozenset[str] = frozenset()) -> str:
    """The `<svg>` element of the timeline: axis, then one row per layer.

    The rows named in `function_rows` are whole functions', one mark per trace: they
    say "traces" where a layer's row says "runs".
    """
    rows, cell_width, span, used_axis = layout(events_by_layer, axis, PLOT_WIDTH, MIN_CELL_WIDTH)
    cells = max(PLOT_WIDTH // cell_width, 1)
    count = sum(len(events) for events in events_by_layer.values())
    first_timestamp = min((event.timestamp for events in events_by_layer.values() for event in events),
                          default=0.0)
    rows_bottom = AXIS_HEIGHT + ROW_HEIGHT * len(events_by_layer)
    bottom_axis = len(events_by_layer) > _ROWS_FOR_BOTTOM_AXIS
    height = rows_bottom + (AXIS_HEIGHT if bottom_axis else 8)
    axis_label = "time since the first run" if used_axis == "time" else "body runs in order"
    tick_list = ticks(span, used_axis, count)
    out = [f'<svg class="timeline" width="{TOTAL_WIDTH}" height="{height}" '
           f'viewBox="0 0 {TOTAL_WIDTH} {height}" role="img" data-axis="{used_axis}" '
           f'data-cell-width="{cell_width}" aria-label="Timeline of body runs per layer; x: {axis_label}">',
           _axis_svg(tick_list, cells, cell_width, 16, (AXIS_HEIGHT - 4, rows_bottom + 2), axis_label)]
    if bottom_axis:
        out.append(_axis_svg(tick_list, cells, cell_width, rows_bottom + 18, None, axis_label))
    stats_x = LABEL_WIDTH + PADDING + PLOT_WIDTH + 12
    for row, ((layer, events), marks) in enumerate(zip(events_by_layer.items(), rows)):
        top = AXIS_HEIGHT + row * ROW_HEIGHT
        center = top + ROW_HEIGHT / 2
        label = layer if len(layer) <= _LABEL_CHARACTERS else layer[:_LABEL_CHARACTERS - 1] + "\u2026"
        function = layer in function_rows
        attribute = f'class="row function" data-function="{escape(layer[2:])}"' if function \
            else f'class="row" data-layer="{escape(layer)}"'
        out.append(f'<g {attribute} data-runs="{len(events)}">'
                   f'<rect class="stripe" x="0" y="{top}" width="{TOTAL_WIDTH}" height="{ROW_HEIGHT}"/>'
                   f'<text class="label" x="{LABEL_WIDTH - 8}" y="{center + 4:g}" text-anchor="end">'
                   f"<title>{escape(layer)}</title>{escape(label)}</text>")
        for before, mark, after in zip([None, *marks], marks, [*marks[1:], None]):
            isolated = ((before is None or before.last_cell < mark.first_cell - 1)
                        and (after is None or after.first_cell > mark.last_cell + 1))
            out.append(_mark_svg(mark, cell_width, center, mark_title(mark, first_timestamp, span), isolated))
        noun = "trace" if function else "run"
        out.append(f'<text class="stats" x="{stats_x}" y="{center + 4:g}">{plural(len(events), noun)}')
        for kind in (*RETRACE_KINDS, TraceKind.COMPILE):  # Named as the legend names them.
            count = sum(mark.kinds.get(kind, 0) for mark in marks)
            if count:
                out.append(f'<tspan class="retraces"> \u00b7 {count:,} {kind.value}</tspan>')
        out.append("</text></g>")
    out.append("</svg>")
    return "".join(out)


def timeline_css() -> str:
    """The CSS rules the timeline's classes need, one colour rule per kind."""
    kind_rules = "".join(f".k-{kind.value}{{fill:{KIND_COLORS[kind.value]}}}" for kind in TraceKind)
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
