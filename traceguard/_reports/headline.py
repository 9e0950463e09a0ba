"""The counts a report leads with, in one unit each: function traces, then layer runs.

A whole function's trace is what the backend counts (TensorFlow's
`experimental_get_tracing_count()`, JAX's tracing cache) and what a fix removes; one
trace of a Keras step runs the `call` of every layer in the model, so layer runs are
many times more. The text report's first line, the HTML page's and the notebook's
heading count function traces by kind, and say the layer runs as such: "8 layers:
40 layer runs, 20 of them in 1 retrace". Without function records (a layer's own
log), the layer runs by kind, named so.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from traceguard._core.events import TraceEvent
from traceguard._core.function_runs import FunctionRuns
from traceguard._core.kinds import FUNCTION_KINDS, RETRACE_KINDS, TRACE_KINDS, TraceKind


def plural(count: int, noun: str) -> str:
    """e.g. "1 layer", "1,000 layer runs"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def function_counts(functions: Sequence[FunctionRuns]) -> dict[str, int]:
    """The traces of all `functions` (`FunctionRuns`) by kind name, those dropped included: the
    kinds seen, in `FUNCTION_KINDS` order."""
    counts: collections.Counter[str] = collections.Counter()
    for runs in functions:
        counts.update(runs.kind_counts)
    return {kind.value: counts[kind.value] for kind in FUNCTION_KINDS if counts[kind.value]}


def kinds_text(counts: dict[str, int]) -> str:
    """"2 trace, 1 variable_retrace": each kind counted, in the order given."""
    return ", ".join(f"{count:,} {kind}" for kind, count in counts.items() if count)


def functions_phrase(functions: Sequence[FunctionRuns]) -> str:
    """"2 functions traced 3 times: 2 trace, 1 variable_retrace" (compilations without a trace
    are no trace, and are counted by their kind)."""
    if not functions:
        return "0 functions traced"
    counts = function_counts(functions)
    traces = sum(count for kind, count in counts.items() if kind != TraceKind.COMPILE.value)
    text = f"{plural(len(functions), 'function')} traced {plural(traces, 'time')}"
    return f"{text}: {kinds_text(counts)}" if counts else text


def layer_runs_phrase(layer_count: int, events: Sequence[TraceEvent],
                      functions: Sequence[FunctionRuns]) -> str:
    """"8 layers: 40 layer runs, 20 of them in 1 retrace": the layers' traced and symbolic runs,
    and how many ran in the functions' retraces; by kind when no function was recorded."""
    runs = [event for event in events if event.kind is not TraceKind.EAGER]
    text = f"{plural(layer_count, 'layer')}: {plural(len(runs), 'layer run')}"
    if not runs:
        return text
    if not functions:  # No function records: the layer runs' own kinds.
        counts = collections.Counter(event.kind.value for event in runs)
        return f"{text} ({kinds_text({kind: counts[kind] for kind in TRACE_KINDS})})"
    retraces = {event.serial for function in functions for event in function.events
                if event.kind in RETRACE_KINDS}
    in_retraces = [event for event in runs if event.function_trace in retraces]
    if in_retraces:
        count = len({event.function_trace for event in in_retraces})
        text += f", {len(in_retraces):,} of them in {plural(count, 'retrace')}"
    return text


def headline(functions: Sequence[FunctionRuns], layer_count: int, events: Sequence[TraceEvent],
             eager: int) -> str:
    """The counts a report leads with: "2 functions traced 3 times: 2 trace, 1 variable_retrace;
    8 layers: 40 layer runs, 20 of them in 1 retrace; 0 eager layer runs"."""
    return "; ".join([functions_phrase(functions), layer_runs_phrase(layer_count, events, functions),
                      plural(eager, "eager layer run")])
