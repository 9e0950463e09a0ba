"""A comparison of trace files as HTML: a self-contained page, or a block for a notebook.

The same words as the text report (`_reports.compare`), in tables: each divergence (or
each run's new and missing traces), then every function's traces per process, kind by
kind. Every piece of recorded text goes through `html.escape`.
"""

from __future__ import annotations

import datetime
from html import escape

from traceguard._core.comparison import Difference, Step
from traceguard._reports.compare import (
    ComparisonLike,
    comparison_heading,
    consequence,
    function_name,
    note_text,
    runs_named,
    signature_text,
)
from traceguard._reports.html_tables import KIND_COLORS, TABLE_CSS, kind_badge, prose
from traceguard._version import __version__

_PAGE_CSS = (
    "body{margin:24px;color:#1f2328;background:#fff;font:14px/1.5 system-ui,-apple-system,'Segoe UI',"
    "sans-serif}h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 6px}"
    ".meta{color:#57606a;margin:0 0 12px}.ok{color:#1a7f37}.bad{color:#cf222e}"
)


def _step_html(step: Step | None, missing: str = "no trace") -> str:
    if step is None:
        return f"<i>{escape(missing)}</i>"
    badge = _badge(step)
    graph = f" (the same graph as #{step.same_graph_as})" if step.same_graph_as is not None else ""
    if step.resumed_after is not None:  # torch: a frame compiled after a graph break.
        graph += f" (the part after the graph break at {step.resumed_after})"
    return f"{badge} <code>{escape(signature_text(step.signature))}</code>{escape(graph)}"


def _changes_html(changes: object) -> str:
    return "; ".join(f"<code>{escape(str(change))}</code>" for change in changes) or "&ndash;"  # type: ignore[attr-defined]


def _divergences_html(comparison: ComparisonLike) -> str:
    rows = []
    for divergence in comparison.divergences:
        others = ", ".join(divergence.others)
        differs = _changes_html(divergence.changes)
        if divergence.difference is Difference.EXTRA and divergence.closest is not None:
            differs = f"from {escape(others)}'s #{divergence.closest.number}: {differs}"
        rows.append(
            f"<tr><td>{escape(divergence.source)}</td><td>{prose(function_name(divergence.function))}</td>"
            f'<td class="num">#{divergence.number}</td><td>{escape(divergence.difference.value)}</td>'
            f"<td>{_step_html(divergence.step)}</td><td>{_step_html(divergence.reference)}<br>"
            f"<small>{escape(others)}</small></td><td>{differs}</td>"
            f'<td><div class="tg-text">{prose(consequence(divergence))}</div></td></tr>')
    return ('<table class="tg-table"><tr><th>worker</th><th>function</th><th class="num">trace</th>'
            "<th>difference</th><th>its trace</th><th>the others'</th><th>what differs</th>"
            "<th>in a collective job</th></tr>" + "".join(rows) + "</table>")


def _runs_html(comparison: ComparisonLike) -> str:
    baseline = escape(str(comparison.baseline))
    parts = []
    if comparison.new_traces:
        rows = [f"<tr><td>{escape(trace.source)}</td><td>{prose(function_name(trace.function))}</td>"
                f"<td>{_step_html(trace.step)}</td>"
                f"<td>{_step_html(trace.closest, 'never traced')}</td>"
                f"<td>{_changes_html(trace.changes)}</td></tr>"
                for trace in comparison.new_traces]
        parts.append(f"<h2>Traces {baseline} did not make</h2>"
                     '<table class="tg-table"><tr><th>run</th><th>function</th><th>trace</th>'
                     f"<th>closest in {baseline}</th><th>what differs</th></tr>" + "".join(rows) + "</table>")
    if comparison.missing_traces:
        rows = [f"<tr><td>{escape(trace.source)}</td><td>{prose(function_name(trace.function))}</td>"
                f"<td>{_step_html(trace.step)}</td></tr>" for trace in comparison.missing_traces]
        parts.append(f"<h2>Traces {baseline} made and {escape(runs_named(comparison))} did not</h2>"
                     '<table class="tg-table"><tr><th>run</th><th>function</th>'
                     f"<th>{baseline}'s trace</th></tr>" + "".join(rows) + "</table>")
    return "".join(parts)


def _sequences_html(comparison: ComparisonLike) -> str:
    labels = [source.label for source in comparison.sources]
    head = "".join(f"<th>{escape(label)}</th>" for label in labels)
    rows = []
    for traces in comparison.functions:
        cells = []
        for label in labels:
            steps = traces.steps.get(label, ())
            badges = [f'<span title="{escape(signature_text(step.signature))}">{_badge(step)}</span>'
                      for step in steps]
            cells.append(f"<td>{' '.join(badges) or '&ndash;'}</td>")
        rows.append(f"<tr><td>{prose(function_name(traces.function))}</td>{''.join(cells)}</tr>")
    return f'<table class="tg-table"><tr><th>function</th>{head}</tr>{"".join(rows)}</table>'


def _badge(step: Step) -> str:
    kind = step.kind.value
    text = f"#{step.number} {kind}"
    return kind_badge(kind, text) if kind in KIND_COLORS else escape(text)


def comparison_html(comparison: ComparisonLike, fragment: bool = False) -> str:
    """The comparison as HTML: a page, or (`fragment`) a block for a notebook."""
    title, *summary = comparison_heading(comparison)
    good = not comparison.divergences and not comparison.new_traces and not comparison.missing_traces
    summary_html = "".join(f'<p class="{"ok" if good else "bad"}">{prose(line)}</p>' for line in summary)
    body = [summary_html]
    if comparison.divergences:
        body += ["<h2>Workers that traced differently</h2>", _divergences_html(comparison)]
    body.append(_runs_html(comparison))
    if comparison.functions:
        body += ["<h2>Traces per function</h2>", _sequences_html(comparison)]
    if comparison.notes:
        body += ["<h2>Notes</h2><ul>", *(f"<li>{prose(note_text(note))}</li>" for note in comparison.notes),
                 "</ul>"]
    if fragment:
        return (f'<div class="traceguard"><style>{TABLE_CSS}</style><b>{escape(title)}</b>'
                + "".join(body) + "</div>")
    generated = datetime.datetime.now().isoformat(timespec="seconds")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">",
        f"<title>{escape(title)}</title><style>{_PAGE_CSS}{TABLE_CSS}</style></head><body>",
        f'<h1>{escape(title)}</h1><p class="meta">written {generated} by traceguard {__version__}</p>',
        *body, "</body></html>\n",
    ])
