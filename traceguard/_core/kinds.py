"""The kinds of run and trace: `TraceKind`, and which kinds count as graph traces and retraces."""

from __future__ import annotations

import enum
from typing import Any


class TraceKind(str, enum.Enum):
    """Why a layer's `call` body ran.

    - `eager`: TensorFlow ran the body op by op, outside any graph.
    - `symbolic`: Keras ran the body on symbolic inputs to build the layer or
      infer its output shapes (no graph is kept).
    - `trace`: the first trace of a function object for this signature; a new
      object of code that traced before (a new model's step, a `tf.function`
      made per call) starts with an empty cache, so its first trace is one too.
    - `variable_retrace`: the same function traced the same signature again
      because its first trace created variables.
    - `retrace`: the same function object traced again, a miss of its own cache
      (TensorFlow's `experimental_get_tracing_count()` moved): a new signature,
      or a key that differs elsewhere (the tracing context).
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
# What `Explanation.count(of=...)` counts: whole functions' traces, or layers' body runs.
COUNT_UNITS = ("functions", "layers")

def normalize_kinds(kind: Any, argument: str = "kind") -> frozenset[TraceKind] | None:
    """Turns a kind, a kind name or a collection of them into a set of kinds."""
    if kind is None:
        return None
    kinds = [kind] if isinstance(kind, str) else kind
    try:
        kinds = list(kinds)
    except TypeError:
        kinds = [kinds]
    result = set()
    for item in kinds:
        if isinstance(item, str) and item in TRACE_KINDS:
            result.add(TraceKind(item))
        else:
            culprit = f"; {item!r} is none of them" if item is not kind else ""
            raise ValueError(
                f"`{argument}` expects a TraceKind, one of {', '.join(TRACE_KINDS)}, "
                f"or a collection of them{culprit}. Received: {argument}={kind!r}"
            )
    return frozenset(result)


__all__ = ["COUNT_UNITS", "FUNCTION_KINDS", "GRAPH_TRACE_KINDS", "MISS_KINDS", "RETRACE_KINDS", "RUN_KINDS",
           "TRACE_KINDS", "TraceKind", "normalize_kinds"]
