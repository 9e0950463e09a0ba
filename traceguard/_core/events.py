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
from traceguard._core.specs import Spec, signature_from_json, signature_to_json
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

    def to_json(self) -> dict[str, Any]:
        """The event as JSON data (a trace file's `event`): its fields, with the signature, changes and
        verdict as typed values (`from_json` rebuilds them) and the verdict's codes as `reason_code`
        and `hint_code`."""
        # The fields as they are (a dataclass without slots keeps them in `__dict__`), then the typed
        # values: a new plain field is written without a line here.
        result = dict(self.__dict__)
        verdict = result.pop("verdict")
        result.update(kind=self.kind.value, signature=signature_to_json(self.signature),
                      changes=[change.to_json() for change in self.changes],
                      created_variables=list(self.created_variables), messages=list(self.messages),
                      reason_code=None if verdict is None else verdict.reason.value,
                      hint_code=None if verdict is None or verdict.hint is None else verdict.hint.value,
                      verdict=None if verdict is None else verdict.to_json())
        return result

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceEvent:
        """The event `to_json` wrote; fields it does not know (a newer writer's) are left out."""
        changes = tuple(Change.from_json(change) for change in data["changes"])
        verdict = data.get("verdict")
        values = {name: data[name] for name in _FIELDS if name in data}
        values.update(kind=TraceKind(data["kind"]), signature=signature_from_json(data["signature"]),
                      changes=changes, created_variables=tuple(data["created_variables"]),
                      messages=tuple(data.get("messages", ())),
                      verdict=None if verdict is None else Verdict.from_json(verdict, changes))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names.

        `signature` holds each spec's text, `changes` each change's; the codes are
        `reason_code` and `hint_code` (`Reason` and `Hint` values, or None). The text view of
        `to_json()`.
        """
        result = self.to_json()
        del result["verdict"]
        result.update(signature={str(name): str(spec) for name, spec in self.signature.items()},
                      changes=[str(change) for change in self.changes])
        return result


_FIELDS = tuple(field.name for field in dataclasses.fields(TraceEvent))

__all__ = ["FUNCTION_KINDS", "GRAPH_TRACE_KINDS", "MISS_KINDS", "RETRACE_KINDS", "RUN_KINDS", "TRACE_KINDS",
           "TraceEvent", "TraceKind"]
