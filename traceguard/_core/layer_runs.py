"""`LayerRuns`: the body runs of one layer in an `Explanation`, as plain data.

A value the live report fills (`_diagnosis.explanation`) and the trace file reader rebuilds
(`_diagnosis.trace_file_reader`), read by the renderers as it is: events and counters, never
the layer.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from traceguard._core.events import TraceEvent
from traceguard._core.kinds import TRACE_KINDS, TraceKind, normalize_kinds


@dataclasses.dataclass
class LayerRuns:
    """The body runs of one layer in an `Explanation`.

    Attributes:
        name: The layer's Keras `name`; `"dense#2"` when an earlier layer of
            the report already had the name `"dense"`.
        class_name: Name of the layer's class, e.g. `"Dense"`.
        trace_aware: Whether the layer is a `TraceAwareLayer` (which also logs
            each run in its own `trace_log`).
        events: The `TraceEvent`s, oldest first (at most 1000; older ones are
            counted in `dropped`).
        eager_calls: How many eager runs the body made, logged as events or
            not.
        dropped: How many older events were dropped.
    """

    name: str
    class_name: str
    trace_aware: bool
    events: list[TraceEvent] = dataclasses.field(default_factory=list)
    eager_calls: int = 0
    dropped: int = 0

    def count(self, kind: Any = None) -> int:
        """How many events are of the given kind(s); all when None."""
        kinds = normalize_kinds(kind)
        return sum(kinds is None or event.kind in kinds for event in self.events)

    def counts(self) -> dict[str, int]:
        """Events per kind name, every `TraceKind` included; `eager` counts all eager runs."""
        counts = collections.Counter(event.kind.value for event in self.events)
        counts[TraceKind.EAGER.value] = max(self.eager_calls, counts[TraceKind.EAGER.value])
        return {kind: counts[kind] for kind in TRACE_KINDS}
