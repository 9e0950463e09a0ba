"""The self-contained HTML report: a timeline of body runs per layer, then tables.

One file with inline CSS and SVG: no script, no font, no image, no address to
fetch, so it opens offline, attaches to a bug report and passes strict content
security policies. Pure Python; it never imports TensorFlow. Each report object
writes it with its own `to_html()` (`TraceLog`, `Explanation`), through
`write_document(path, render_html(...))`; `traceguard.write_html()` makes an
`Explanation` of several logs and calls its `to_html()`.
"""

from __future__ import annotations

import collections
import datetime
import os
import pathlib
from collections.abc import Mapping, Sequence
from html import escape

from traceguard._core.events import RETRACE_KINDS, TRACE_KINDS, TraceEvent
from traceguard._core.function_runs import FunctionRuns
from traceguard._reports.headline import functions_phrase, layer_runs_phrase
from traceguard._reports.html_tables import (
    KIND_COLORS,
    KIND_DESCRIPTIONS,
    TABLE_CSS,
    LayerEvents,
    counts_table,
    functions_table,
    retraces_table,
    snapshot,
)
from traceguard._reports.timeline import AXES
from traceguard._reports.timeline_svg import render_timeline, timeline_css
from traceguard._version import __version__

DEFAULT_TITLE = "traceguard report"

_PAGE_CSS = (
    "body{margin:24px;color:#1f2328;background:#fff;font:14px/1.5 system-ui,-apple-system,'Segoe UI',"
    "sans-serif}h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 6px}"
    ".meta{color:#57606a;margin:0 0 12px}.note{color:#57606a;font-size:12px;margin:2px 0 8px}"
    ".legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:8px 0 12px;font-size:13px}"
    ".legend .item{display:flex;align-items:center;gap:6px}.legend .none{opacity:.45}"
    ".legend .swatch{display:inline-block;width:14px;height:12px;border-radius:2px}"
    ".legend .tall{height:18px}.scroll{overflow-x:auto}.ok{color:#1a7f37}"
)


def check_events_by_layer(events_by_layer: object) -> None:
    """Checks the report's input where it is given, naming what was received."""
    if not isinstance(events_by_layer, Mapping):
        raise TypeError("`events_by_layer` expects a mapping of layer name to its events: a "
                        "`TraceLog`, a `LayerRuns` or a list of `traceguard.TraceEvent`. "
                        f"Received: events_by_layer={events_by_layer!r}")
    for layer, runs in events_by_layer.items():
        if not isinstance(layer, str):
            raise TypeError(f"`events_by_layer` expects layer names (str) as keys. Received: key={layer!r}")
        events = getattr(runs, "events", runs)  # A LayerRuns holds its events in `events`.
        if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
            raise TypeError(f"`events_by_layer[{layer!r}]` expects a `TraceLog`, a `LayerRuns` or a "
                            f"sequence of `traceguard.TraceEvent`. Received: {type(runs).__name__}")
        for event in events:
            if not isinstance(event, TraceEvent):
                raise TypeError(f"`events_by_layer[{layer!r}]` expects `traceguard.TraceEvent` items. "
                                f"Received: {event!r}")


def _legend(rows: Mapping[str, Sequence[TraceEvent]], eager_calls: int) -> str:
    """One swatch per kind with the marks of that kind the rows draw; eager calls that no row
    draws (not logged) are said apart, not counted as marks."""
    counts = collections.Counter(event.kind.value for events in rows.values() for event in events)
    items = []
    for kind in (*TRACE_KINDS, *(["compile"] if counts["compile"] else [])):
        tall = " tall" if kind in RETRACE_KINDS else ""
        dim = "" if counts[kind] else " none"
        undrawn = eager_calls - counts[kind] if kind == "eager" else 0
        note = f"; {undrawn:,} calls not logged" if undrawn > 0 else ""
        items.append(f'<span class="item{dim}" title="{escape(KIND_DESCRIPTIONS[kind])}">'
                     f'<span class="swatch{tall}" style="background:{KIND_COLORS[kind]}"></span>'
                     f"{kind} ({counts[kind]:,}{note})</span>")
    return f'<div class="legend">{"".join(items)}</div>'


def function_rows(functions: Sequence[FunctionRuns]) -> dict[str, list[TraceEvent]]:
    """A timeline row per function ("ƒ name"), one mark per trace or compilation that has a start."""
    rows = {}
    for runs in functions:
        events = [TraceEvent(index=number, kind=event.kind, layer=f"\u0192 {runs.function}",
                             function=runs.function, signature=event.signature, changes=event.changes,
                             created_variables=(), reason=event.reason, hint=event.hint,
                             timestamp=event.started, duration_s=event.cost_s, thread="")
                  for number, event in enumerate(runs.events, runs.dropped + 1) if event.started is not None]
        if events:
            rows[f"\u0192 {runs.function}"] = events
    return rows


def render_html(events_by_layer: Mapping[str, LayerEvents], title: str | None = None,
                axis: str = "time", functions: Sequence[FunctionRuns] = ()) -> str:
    """The report as one HTML document (a string).

    Args:
        events_by_layer: Mapping of layer name to its events: a `TraceLog`
            (e.g. `{layer.name: layer.trace_log for layer in layers}`), a
            `LayerRuns` (`explanation.layers`) or a list of `TraceEvent`s.
            The first two also contribute their eager-call and dropped-event
            counts.
        title: The page's heading. Defaults to `"traceguard report"`.
        axis: Where a run sits on the timeline. One of `{"time", "order"}`:
            seconds since the first run, or the runs' order. Defaults to
            `"time"`.
        functions: The traced functions (`explanation.functions.values()`),
            shown in a table above the layers. Defaults to none.

    Raises:
        TypeError: If `events_by_layer` is not such a mapping.
        ValueError: If `axis` is not one of the choices.
    """
    check_events_by_layer(events_by_layer)
    if axis not in AXES:
        raise ValueError(f"`axis` expects one of {', '.join(AXES)}. Received: axis={axis!r}")
    # One snapshot per log, so the timeline and the tables agree while a log keeps growing.
    events_by_layer = snapshot(events_by_layer)
    title = DEFAULT_TITLE if title is None else str(title)
    everything = [event for events in events_by_layer.values() for event in events]
    generated = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    # The same terms and counts as the text report's first line: function traces, then layer runs.
    # A layer's own log records no function: its page counts the layer runs alone.
    counts = [*([functions_phrase(functions)] if functions else []),
              layer_runs_phrase(len(events_by_layer), everything, functions)]
    meta = " \u00b7 ".join([*counts, f"written {generated} by traceguard {__version__}"])
    function_section = ["<h2>Functions</h2>", f'<div class="scroll">{functions_table(functions)}</div>'] \
        if functions else []
    functions_drawn = function_rows(functions)
    timeline_rows = {**functions_drawn, **events_by_layer}
    retrace_section = retraces_table(events_by_layer) or \
        '<p class="ok">No layer retraced: every graph was traced once per signature.</p>'
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title><style>{_PAGE_CSS}{TABLE_CSS}{timeline_css()}</style></head><body>",
        f"<h1>{escape(title)}</h1><p class=\"meta\">{escape(meta)}</p>",
        *function_section,
        "<h2>Timeline</h2>",
        '<p class="note">One row per traced function (\u0192, one mark per trace), then one row per layer, '
        "one mark per run of its <code>call</code> body. Hover a mark "
        "for the kind, function, reason, changes and fix; runs a few pixels apart share a mark "
        "(stacked by kind when they differ). Retraces are the tall marks.</p>",
        _legend(timeline_rows, sum(getattr(events, "eager_calls", 0) for events in events_by_layer.values())),
        f'<div class="scroll">{render_timeline(timeline_rows, axis, frozenset(functions_drawn))}</div>',
        "<h2>Body runs by layer</h2>", counts_table(events_by_layer),
        "<h2>Retraces</h2>", retrace_section,
        "</body></html>\n",
    ])


def write_document(path: str | os.PathLike[str], document: str) -> pathlib.Path:
    """Writes an HTML document (`render_html`) to `path`; the one writer of every `to_html()`."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` expects a file path (str or path-like). Received: path={path!r}")
    target = pathlib.Path(path)
    # Lone surrogates in user text cannot be encoded; a report with a replacement character beats none.
    target.write_text(document, encoding="utf-8", errors="replace")
    return target
