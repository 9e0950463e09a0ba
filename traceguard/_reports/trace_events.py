"""The Trace Event Format export: function traces and layer runs on the timeline of Perfetto.

The JSON object format of Chrome's Trace Event Format (the one the TensorFlow
profiler, `chrome://tracing` and ui.perfetto.dev open): `{"traceEvents": [...],
"displayTimeUnit": "ms"}`. Each trace file is a process (`pid`, named by its label);
each traced function and each layer is a thread of it (`tid`, named by the function
or layer), so that no two marks of one track overlap; each function trace and each
layer body run is a complete event (`"ph": "X"`) with its start (`ts`) and length
(`dur`) in microseconds since the epoch, and its kind, reason, fix, changes and
signature as `args`. A function trace spans its whole miss, from its call's entry to
its return, when the file has it, and holds a nested slice per phase (`trace`,
`lower`, `compile`, `first_call`), laid one after the other from the trace's start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol  # Any: the values of JSON objects, of every JSON type.

from traceguard._core.function_runs import FunctionRuns
from traceguard._core.functions import FunctionId
from traceguard._core.layer_runs import LayerRuns


class _TraceFileLike(Protocol):
    """What the export reads of a trace file (`_diagnosis.trace_file_reader.TraceFile`)."""

    @property
    def layers(self) -> Mapping[str, LayerRuns]: ...  # Layer name to its runs.

    @property
    def functions(self) -> Mapping[FunctionId, FunctionRuns]: ...

    @property
    def function_starts(self) -> Mapping[int, float]: ...  # A function event's serial to its start.

    @property
    def call_starts(self) -> Mapping[int, float]: ...  # Its serial to when its call started.


def _microseconds(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _thread_name(pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


_PHASE_ORDER = ("trace", "lower", "compile", "first_call")


def _phase_slices(pid: int, tid: int, start: float, phases: Mapping[str, float],
                  end: float) -> list[dict[str, Any]]:
    """A complete event per phase, one after the other from `start`, each within `end`."""
    slices = []
    for phase in sorted(phases, key=lambda name: _PHASE_ORDER.index(name) if name in _PHASE_ORDER else 9):
        seconds = min(phases[phase], max(end - start, 0.0))
        slices.append({"ph": "X", "cat": "phase", "name": phase, "pid": pid, "tid": tid,
                       "ts": _microseconds(start), "dur": _microseconds(seconds),
                       "args": {"seconds": phases[phase]}})
        start += seconds
    return slices


def trace_events(trace_files: Sequence[_TraceFileLike], labels: Sequence[str]) -> dict[str, Any]:
    """The Trace Event Format object of `trace_files`, each a process named by its label in `labels`."""
    events: list[dict[str, Any]] = []
    for pid, (trace_file, label) in enumerate(zip(trace_files, labels), start=1):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
        tid = 0
        for runs in trace_file.functions.values():
            tid += 1
            events.append(_thread_name(pid, tid, f"function {runs.function}"))
            track_end = float("-inf")
            paid: dict[float, float] = {}  # A call's start -> what its earlier traces cost.
            for event in runs.events:
                start = trace_file.function_starts.get(event.serial)
                if start is None:
                    continue
                call_start = getattr(trace_file, "call_starts", {}).get(event.serial)
                phases = dict(getattr(event, "phases", None) or {}) or {"trace": event.duration_s}
                miss = getattr(event, "miss_s", None)
                # A call that traced twice (a first trace that made variables, then its retrace)
                # gives its last trace the call less the earlier trace: that span begins after the
                # earlier one ends, and ends with the call.
                # (Each trace's epoch times are converted apart: one call's starts differ by microseconds.)
                same_call = next((known for known in paid if abs(known - call_start) < 1e-3), call_start) \
                    if call_start is not None else None
                if call_start is not None and miss is not None and same_call is not None:
                    begin, length = call_start, paid.pop(same_call, 0.0) + miss
                else:
                    begin, length = start, sum(phases.values())
                    if same_call is not None:
                        paid[same_call] = paid.get(same_call, 0.0) + length
                end = begin + length
                begin = min(max(begin, track_end), start)
                length, track_end = end - begin, max(track_end, end)
                events.append({
                    "ph": "X", "cat": "function_trace", "name": f"{event.function} ({event.kind.value})",
                    "pid": pid, "tid": tid, "ts": _microseconds(begin), "dur": _microseconds(length),
                    "args": {"kind": event.kind.value, "reason": event.reason, "hint": event.hint,
                             "changes": [str(change) for change in event.changes],
                             "signature": {str(name): str(spec) for name, spec in event.signature.items()},
                             "call_site": None if event.call_site is None else str(event.call_site),
                             "serial": event.serial, "phases": phases, "miss_s": miss}})
                events.extend(_phase_slices(pid, tid, max(start, begin), phases, end))
        for layer in trace_file.layers.values():
            tid += 1
            events.append(_thread_name(pid, tid, f"layer {layer.name}"))
            for run in layer.events:
                events.append({
                    "ph": "X", "cat": "layer_run", "name": f"{layer.name} ({run.kind.value})",
                    "pid": pid, "tid": tid, "ts": _microseconds(run.timestamp),
                    "dur": _microseconds(run.duration_s),
                    "args": {"kind": run.kind.value, "run": run.index, "function": run.function,
                             "reason": run.reason, "hint": run.hint,
                             "changes": [str(change) for change in run.changes],
                             "signature": {str(name): str(spec) for name, spec in run.signature.items()},
                             "function_trace": run.function_trace}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}
