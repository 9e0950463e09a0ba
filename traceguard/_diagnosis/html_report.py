"""`write_html()`: the HTML report of several layers' logs, written by an `Explanation` of them.

Each report object has one HTML entry point, `to_html(path)` (`TraceLog`,
`Explanation`); `python -m traceguard run --html` and `TraceMonitor(html=...)`
call the `Explanation`'s. `write_html()` is for logs that no report holds
together (several `TraceAwareLayer`s' `trace_log`s): it makes an `Explanation`
of them and calls its `to_html()`.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

from traceguard._core.function_runs import FunctionRuns
from traceguard._core.functions import FunctionId
from traceguard._core.layer_runs import LayerRuns
from traceguard._diagnosis.explanation import Explanation
from traceguard._reports.html import DEFAULT_TITLE, check_events_by_layer
from traceguard._reports.html_tables import LayerEvents


def write_html(path: str | os.PathLike[str], events_by_layer: Mapping[str, LayerEvents],
               title: str | None = None, axis: str = "time",
               functions: Sequence[Any] = ()) -> pathlib.Path:
    """Writes the self-contained HTML report of several layers' events to `path`.

    The report of an `Explanation` made of them (`Explanation.to_html()`): a
    timeline with one row per layer and one mark per body run, coloured by
    kind, with the reason, changes and fix in each mark's tooltip; then the
    runs of each kind per layer and the retraces with their fixes. One file,
    no scripts and nothing fetched: it opens offline in any browser. For one
    layer, `layer.trace_log.to_html(path)`; for what `traceguard.watch()` or
    `traceguard.explain()` recorded, `explanation.to_html(path)`.

    Args:
        path: File to write (str or path-like); its directory must exist.
        events_by_layer: Mapping of layer name to its events: a `TraceLog`
            (e.g. `{layer.name: layer.trace_log for layer in layers}`), a
            `LayerRuns` (`explanation.layers`) or a list of `TraceEvent`s.
        title: The page's heading. Defaults to `"traceguard report"`.
        axis: One of `{"time", "order"}`: place runs by seconds since the
            first run, or by their order. Defaults to `"time"`.
        functions: The traced functions, `explanation.functions.values()`,
            shown in a table above the timeline. Defaults to none.

    Returns:
        The path written, as a `pathlib.Path`.

    Raises:
        TypeError: If `path` or `events_by_layer` has the wrong type.
        ValueError: If `axis` is not one of the choices.

    Example:

    ```python
    traceguard.write_html("traces.html", {layer.name: layer.trace_log for layer in model.layers
                                          if isinstance(layer, traceguard.TraceAwareMixin)})
    ```
    """
    check_events_by_layer(events_by_layer)
    report = Explanation(DEFAULT_TITLE if title is None else str(title))
    # Each log read once, so the timeline and the tables agree while a log keeps growing.
    report._restore([_layer_runs(name, events) for name, events in events_by_layer.items()],
                    {FunctionId(f"{runs.name} {number}"): runs for number, runs in enumerate(functions)
                     if isinstance(runs, FunctionRuns)})
    return report.to_html(path, axis=axis)


def _layer_runs(name: str, events: Any) -> LayerRuns:
    if isinstance(events, LayerRuns):
        return events
    return LayerRuns(name, "", True, list(events), getattr(events, "eager_calls", 0),
                     getattr(events, "dropped", 0))
