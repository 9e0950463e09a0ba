"""What one run of a layer's `call` body was: `TraceKind` and `TraceEvent`.

Plain data only: an event holds strings and numbers, never a tensor, graph or
layer, so a log of them keeps nothing of TensorFlow alive.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any


class TraceKind(str, enum.Enum):
    """Why a layer's `call` body ran.

    - `eager`: TensorFlow ran the body op by op, outside any graph.
    - `symbolic`: Keras ran the body on symbolic inputs to build the layer or
      infer its output shapes (no graph is kept).
    - `trace`: the first trace of a `tf.function` for this signature.
    - `variable_retrace`: the same function traced the same signature again
      because its first trace created variables.
    - `retrace`: the function traced again for a new signature.
    - `save`: traced by SavedModel saving or `model.export`.
    - `compile`: a whole function only, never a layer's run: XLA compiled the
      function for new input shapes without a trace (`jit_compile=True` with a
      relaxed signature, a Keras step's new batch shape), or JAX compiled it
      again without tracing.
    """

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    TRACE = "trace"
    VARIABLE_RETRACE = "variable_retrace"
    RETRACE = "retrace"
    SAVE = "save"
    COMPILE = "compile"

    def __str__(self) -> str:
        return self.value


# The kinds of a layer's body runs: every kind but `compile`, which only a whole function has.
TRACE_KINDS = tuple(kind.value for kind in TraceKind if kind is not TraceKind.COMPILE)
RUN_KINDS = tuple(kind for kind in TraceKind if kind is not TraceKind.COMPILE)
# The kinds of a whole function's events (`FunctionEvent`).
FUNCTION_KINDS = (TraceKind.TRACE, TraceKind.VARIABLE_RETRACE, TraceKind.RETRACE, TraceKind.SAVE,
                  TraceKind.COMPILE)
# The kinds that build a graph a training or serving loop will run again; the
# ones a retrace budget counts.
GRAPH_TRACE_KINDS = frozenset({TraceKind.TRACE, TraceKind.VARIABLE_RETRACE, TraceKind.RETRACE})
# The traces a user can avoid: they repeat a function's trace. A tuple, so that kinds
# given as their names (`"retrace"`) are found too.
RETRACE_KINDS = (TraceKind.VARIABLE_RETRACE, TraceKind.RETRACE)
# The function events a guard fails after warm-up: the retraces, and the compilations without one.
MISS_KINDS = (*RETRACE_KINDS, TraceKind.COMPILE)


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
        signature: Argument name to spec string, e.g.
            `{"inputs": "float32[60,28,28]", "training": "True"}`.
        changes: What differs from the closest earlier trace of the same
            function, e.g. `("inputs: dim 0 60 -> 32",)`.
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
    """

    index: int
    kind: TraceKind
    layer: str
    function: str | None
    signature: Mapping[str, str]
    changes: tuple[str, ...]
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

    def __repr__(self) -> str:
        where = f" in {self.function}" if self.function else ""
        changes = f": {'; '.join(self.changes)}" if self.changes else ""
        return f"<TraceEvent #{self.index} {self.kind.value} of {self.layer!r}{where}{changes}>"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names."""
        result = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        result["kind"] = self.kind.value
        result["signature"] = dict(self.signature)
        result["changes"] = list(self.changes)
        result["created_variables"] = list(self.created_variables)
        result["messages"] = list(self.messages)
        return result
