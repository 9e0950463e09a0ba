"""What one run of a layer's `call` body was: `TraceEvent`.

Plain data only: an event holds specs, codes, strings and numbers, never a tensor,
graph or layer, so a log of them keeps nothing of TensorFlow alive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Change
from traceguard._core.kinds import (
    FUNCTION_KINDS,
    GRAPH_TRACE_KINDS,
    MISS_KINDS,
    RETRACE_KINDS,
    RUN_KINDS,
    TRACE_KINDS,
    TraceKind,
)
from traceguard._core.specs import Spec
from traceguard._core.verdicts import Verdict


@dataclasses.dataclass(frozen=True, repr=False)
class TraceEvent:
    """One run of a layer's `call` body, classified.

    Attributes:
        index: The run's number among the layer's recorded runs, counting from
            1 (`#1` in reports) and going on after old events are dropped or the
            log is cleared; `trace_log[0]` is the oldest event kept.
        kind: The `TraceKind`.
        layer: The layer's Keras `name`.
        function: Name of the innermost enclosing `tf.function` or graph
            (e.g. `one_step_on_data` inside Keras 3 `fit`); None when eager.
        signature: Argument name to spec (`_core.specs`: `str()` of one reads
            `"float32[60,28,28]"`, `"True"`).
        changes: What differs from the closest earlier trace of the same
            function, as `Change` values (`str()` of one reads
            `"inputs: dim 0 60 -> 32"`).
        created_variables: Paths of the variables created while this run was
            in progress (by the layer's `build()`, its sublayers or `call`).
        reason: One sentence: why this run happened.
        hint: How to avoid the run, or None when it is expected.
        timestamp: When the run started, in seconds since the epoch.
        duration_s: How long the body ran, in seconds.
        thread: Name of the thread that ran the body.
        replica: Replica id under `tf.distribute`, else None.
        messages: Text that `side_effects(print="log")` routed to this event.
        error: `repr()` of the exception the body raised, else None.
        function_trace: The number of the whole-function trace the run was part
            of (`FunctionEvent.serial` in `Explanation.functions`), when
            `watch()`, `explain()`, `run` or `TraceMonitor` recorded function
            traces; else None.
        verdict: The classification as codes: `verdict.reason` (a `Reason`)
            and `verdict.hint` (a `Hint` or None), which `reason` and `hint`
            word, and what their words name.
    """

    index: int
    kind: TraceKind
    layer: str
    function: str | None
    signature: Mapping[str, Spec]
    changes: tuple[Change, ...]
    created_variables: tuple[str, ...]
    reason: str
    hint: str | None
    timestamp: float
    duration_s: float
    thread: str
    replica: int | None = None
    messages: tuple[str, ...] = ()
    error: str | None = None
    function_trace: int | None = None
    verdict: Verdict | None = None

    def __repr__(self) -> str:
        where = f" in {self.function}" if self.function else ""
        changes = f": {'; '.join(map(str, self.changes))}" if self.changes else ""
        return f"<TraceEvent #{self.index} {self.kind.value} of {self.layer!r}{where}{changes}>"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names.

        `signature` holds each spec's text, `changes` each change's; the codes are
        `reason_code` and `hint_code` (`Reason` and `Hint` values, or None).
        """
        result = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                  if field.name != "verdict"}
        result["kind"] = self.kind.value
        result["signature"] = {str(name): str(spec) for name, spec in self.signature.items()}
        result["changes"] = [str(change) for change in self.changes]
        result["created_variables"] = list(self.created_variables)
        result["messages"] = list(self.messages)
        verdict = self.verdict
        result["reason_code"] = None if verdict is None else verdict.reason.value
        result["hint_code"] = None if verdict is None or verdict.hint is None else verdict.hint.value
        return result


__all__ = ["FUNCTION_KINDS", "GRAPH_TRACE_KINDS", "MISS_KINDS", "RETRACE_KINDS", "RUN_KINDS", "TRACE_KINDS",
           "TraceEvent", "TraceKind"]
