"""The observer that fills an `Explanation`: what `watch()`, `explain()`, `run`, `TraceMonitor`
and the test helpers register with the recorder (`_record.observers.observing(Filler(report))`).

Kept apart from `explanation`, which `report` reads without any backend: the recorder's
observers know the backend's function-trace hook.
"""

from __future__ import annotations

from typing import Any

from traceguard import _compat
from traceguard._core.events import TraceEvent
from traceguard._core.functions import FunctionTrace, MissCost
from traceguard._diagnosis.explanation import Explanation
from traceguard._record.observers import traced_function
from traceguard._reports.text import format_retracing_note


class Filler:
    """The observer that fills an `Explanation` with what the recorder reports.

    What `watch()`, `explain()`, `run`, `TraceMonitor` and the test helpers register
    (`_record.observers.observing(Filler(report))`); the report itself stays a value
    for its readers, with no method the recorder calls.
    """

    __slots__ = ("eager_step", "report")

    def __init__(self, report: Explanation) -> None:
        self.report = report
        # torch: whether an eager run inside a Keras step that runs uneagerly was seen (`uncached`).
        self.eager_step = not _compat.IS_TORCH

    def record_event(self, layer: Any, event: TraceEvent) -> str:
        return self.report._add_event(layer, event)

    def record_run(self, layer: Any, run: Any) -> str:
        return self.report._add_run(layer, run)

    def record_eager(self, layer: Any) -> None:
        self.report._add_eager(layer)
        if not self.eager_step:  # torch: said once, the Keras step and setting that run eagerly.
            setting = _compat.uncached_setting()
            if setting is not None:
                self.eager_step = True
                self.report._add_uncached((), setting)

    def record_uncached(self, transformations: tuple[str, ...]) -> None:
        """Said once per transformations: the Keras step and setting that run them (a stack walk)."""
        if transformations not in self.report._uncached:
            self.report._add_uncached(transformations, _compat.uncached_setting())

    def record_function(self, record: FunctionTrace) -> None:
        self.report._add_function_trace(record, traced_function(record))

    def record_function_cost(self, record: FunctionTrace, cost: MissCost) -> None:
        self.report._add_function_cost(record, cost)

    @staticmethod
    def retracing_note(records: list[FunctionTrace]) -> str | None:
        """traceguard's measured cause, added to TensorFlow's retracing warning."""
        return format_retracing_note(records)
