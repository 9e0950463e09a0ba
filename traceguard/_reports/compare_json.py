"""A comparison of trace files as JSON-serialisable values: what `Comparison.to_dict()` and
`traceguard compare --json` give, with the words of `_reports.compare` where a person reads them
(each divergence's consequence, each note)."""

from __future__ import annotations

from typing import Any  # Any: the values of JSON objects, of every JSON type.

from traceguard._core.changes import Change
from traceguard._core.comparison import Function, Step
from traceguard._reports.compare import ComparisonLike, consequence, note_text


def _function_dict(function: Function) -> dict[str, Any]:
    return {"name": function.name, "qualname": function.qualname, "definition": function.definition,
            "keras_step": function.keras_step}


def _change_dict(change: Change | str) -> dict[str, Any]:
    fields = {"argument": str(change.argument), "aspect": str(change.aspect), "old": _plain(change.old),
              "new": _plain(change.new), "axis": change.axis} if isinstance(change, Change) else {}
    return {**fields, "text": str(change)}


def _plain(value: object) -> bool | int | float | str | None:
    """A JSON value: a number, text or null as it is, anything else (a spec) as its text."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _step_dict(step: Step | None) -> dict[str, Any] | None:
    return None if step is None else step.to_dict()


def comparison_dict(comparison: ComparisonLike) -> dict[str, Any]:
    """The comparison as JSON-serialisable values."""
    return {
        "mode": comparison.mode.value, "mode_reason": comparison.mode_reason.value,
        "baseline": comparison.baseline, "diverged": bool(comparison.divergences),
        "sources": [vars(source).copy() for source in comparison.sources],
        "functions": [{**_function_dict(traces.function),
                       "traces": {label: [step.to_dict() for step in steps]
                                  for label, steps in traces.steps.items()}}
                      for traces in comparison.functions],
        "divergences": [{
            "source": divergence.source, "function": _function_dict(divergence.function),
            "number": divergence.number,
            "differences": [difference.value for difference in divergence.differences],
            "step": _step_dict(divergence.step), "reference": _step_dict(divergence.reference),
            "others": list(divergence.others),
            "changes": [_change_dict(change) for change in divergence.changes],
            "closest": _step_dict(divergence.closest),
            "traces": {"worker": divergence.traces[0], "others": divergence.traces[1]},
            "consequence": consequence(divergence)} for divergence in comparison.divergences],
        "stopped": [{"source": stop.source, "function": _function_dict(stop.function), "traces": stop.traces,
                     "expected": stop.expected, "others": list(stop.others)} for stop in comparison.stopped],
        "new_traces": [{"source": trace.source, "function": _function_dict(trace.function),
                        "step": trace.step.to_dict(), "closest": _step_dict(trace.closest),
                        "changes": [_change_dict(change) for change in trace.changes]}
                       for trace in comparison.new_traces],
        "missing_traces": [{"source": trace.source, "function": _function_dict(trace.function),
                            "step": trace.step.to_dict()} for trace in comparison.missing_traces],
        "notes": [{"kind": note.kind.value, "sources": list(note.sources), "details": list(note.details),
                   "text": note_text(note)} for note in comparison.notes],
    }

