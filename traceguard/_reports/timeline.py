"""Where the timeline puts each body run: positions, cells, marks and their tooltips.

Pure layout, no markup (`_timeline_svg.py` draws it). The x axis is time since
the first run, or the runs' order (`axis="order"`), snapped to a grid of cells
a few pixels wide so marks never overlap: the runs of one row that share a
cell share a mark, and consecutive cells whose runs all have one explanation
(kind, function, changes, reason, hint) merge into one bar. Past a budget of
marks the cells widen, so a page stays a few megabytes whatever the logs hold.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping, Sequence

from traceguard._core.changes import Change
from traceguard._core.events import TraceEvent, TraceKind

AXES = ("time", "order")
# Most costly first: the order in which a tooltip explains runs and a mark stacks them, top down.
SEVERITY = (TraceKind.RETRACE, TraceKind.VARIABLE_RETRACE, TraceKind.COMPILE, TraceKind.SAVE,
            TraceKind.TRACE, TraceKind.SYMBOLIC, TraceKind.EAGER)
# Marks for the whole timeline before cells widen (x2 each time): the benchmark's 100 layers of
# 1,000 runs at random need 17,500 marks at 5 px, a 19 MB page that Chromium takes 9 s to load.
MARK_BUDGET = 8000
# A tooltip of several runs lists at most this many explanations; one of a run this many variables.
_TITLE_EXPLANATIONS = 3
_TITLE_VARIABLES = 3

# What explains a run in a tooltip: its (kind, function, changes, reason, hint, error).
RunExplanation = tuple[TraceKind, str | None, tuple[Change, ...], str, str | None, str | None]


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
    explanations: tuple[RunExplanation, ...]


def _explanation(event: TraceEvent) -> RunExplanation:
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


def _same_explanation(one: TraceEvent, other: TraceEvent) -> bool:
    # Field by field rather than by hashing explanation tuples: this is the report's inner
    # loop (100,000 runs in the benchmark), and most neighbouring runs do share one.
    return (one.kind is other.kind and one.function == other.function and one.changes == other.changes
            and one.reason == other.reason and one.hint == other.hint and one.error == other.error)


def _spans(events: Sequence[TraceEvent], positions: Sequence[float], cells: int) -> list[list]:
    """Per mark [first cell, last cell, events]: runs in a cell, merged across cells of one explanation."""
    by_cell: dict[int, list[TraceEvent]] = collections.defaultdict(list)
    for event, position in zip(events, positions):
        by_cell[round(position * (cells - 1))].append(event)
    spans: list[list] = []
    mergeable: TraceEvent | None = None  # A run of the last span if all its runs share one explanation.
    for cell in sorted(by_cell):
        cell_events = by_cell[cell]
        first = cell_events[0]
        uniform = all(_same_explanation(first, event) for event in cell_events)
        if uniform and mergeable is not None and spans[-1][1] == cell - 1 \
                and _same_explanation(mergeable, first):
            spans[-1][1] = cell
            spans[-1][2].extend(cell_events)
        else:
            spans.append([cell, cell, cell_events])
            mergeable = first if uniform else None
    return spans


def layout_row(events: Sequence[TraceEvent], positions: Sequence[float], cells: int) -> list[Mark]:
    """The marks of one row, left to right, given each event's x in [0, 1] and the number of cells."""
    marks = []
    explanations: tuple[RunExplanation, ...]
    for first_cell, last_cell, span_events in _spans(events, positions, cells):
        first = span_events[0]
        if all(_same_explanation(first, event) for event in span_events):
            kinds, explanations = {first.kind: len(span_events)}, (_explanation(first),)
        else:
            kinds = dict(collections.Counter(event.kind for event in span_events))
            explanations = tuple(dict.fromkeys(_explanation(event) for event in span_events))
        marks.append(Mark(first_cell, last_cell, tuple(span_events), kinds, explanations))
    return marks


def layout(events_by_layer: Mapping[str, Sequence[TraceEvent]], axis: str, plot_width: int,
           min_cell_width: int) -> tuple[list[list[Mark]], int, float, str]:
    """Every row's marks, the cell width used, the time span and the axis used.

    Starts at `min_cell_width` pixels a cell and doubles it while the marks
    would exceed `MARK_BUDGET`.
    """
    positions, span, used_axis = event_positions(events_by_layer, axis)
    rows = list(zip(events_by_layer.values(), positions))

    def mark_count(cells: int) -> int:
        return sum(len(_spans(events, row_positions, cells)) for events, row_positions in rows)

    cell_width = min_cell_width
    while plot_width // cell_width > 1 and mark_count(plot_width // cell_width) > MARK_BUDGET:
        cell_width *= 2
    cells = max(plot_width // cell_width, 1)
    marks = [layout_row(events, row_positions, cells) for events, row_positions in rows]
    return marks, cell_width, span, used_axis


def format_offset(seconds: float, span: float) -> str:
    """Seconds since the first run, in ms when the whole timeline is shorter than a second."""
    return f"{seconds * 1000:.1f} ms" if span < 1 else f"{seconds:.3f} s"


def _event_title(event: TraceEvent, offset: float, span: float) -> str:
    where = f" in {event.function}" if event.function else ""
    signature = ", ".join(f"{name}={spec}" for name, spec in event.signature.items()) or "no arguments"
    lines = [f"#{event.index} {event.kind.value}{where}",
             f"at +{format_offset(offset, span)}, ran {event.duration_s * 1000:.1f} ms ({signature})"]
    if event.changes:
        lines.append("changed: " + "; ".join(map(str, event.changes)))
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
    """The tooltip of a mark: every detail of one run; a digest of several.

    Runs with one explanation get its reason and fix; runs with several get a
    line per explanation (kind, function, changes) and the fix of the most
    costly one, which keeps a page of 100,000 runs a few megabytes.
    """
    events = mark.events
    if len(events) == 1:
        return _event_title(events[0], events[0].timestamp - first_timestamp, span)
    start = min(event.timestamp for event in events) - first_timestamp
    end = max(event.timestamp for event in events) - first_timestamp
    counts = ", ".join(f"{mark.kinds[kind]:,} {kind.value}" for kind in TraceKind if mark.kinds.get(kind))
    lines = [f"{len(events):,} body runs, #{min(event.index for event in events)}\u2013"
             f"#{max(event.index for event in events)}, +{format_offset(start, span)} to "
             f"+{format_offset(end, span)}: {counts}"]
    explanations = sorted(mark.explanations, key=lambda explanation: SEVERITY.index(explanation[0]))
    for kind, function, changes, _, _, error in explanations[:_TITLE_EXPLANATIONS]:
        where = f" in {function}" if function else ""
        detail = "; ".join(map(str, changes)) + (f" (error: {error})" if error else "")
        lines.append(f"{kind.value}{where}" + (f": {detail}" if detail else ""))
    if len(explanations) > _TITLE_EXPLANATIONS:
        lines.append(f"and {len(explanations) - _TITLE_EXPLANATIONS} more; the tables below list them all")
    if len(explanations) == 1:
        lines.append("why: " + explanations[0][3])
    fixed = next(((kind, hint) for kind, _, _, _, hint, _ in explanations if hint), None)
    if fixed is not None:
        lines.append(("fix: " if len(explanations) == 1 else f"fix ({fixed[0].value}): ") + fixed[1])
    return "\n".join(lines)
