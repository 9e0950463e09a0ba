"""`FunctionRuns`: the traces of one whole function (`tf.function`, a Keras step, `jax.jit`).

An `Explanation` groups the `FunctionTrace` records it is told of by function (its
code and name), classifies each with `classify_function_trace`, and keeps the words
of the reason and the fix, so a report reads it without the records' store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from traceguard._core.events import TRACE_KINDS, TraceKind

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace

# `_compat`, `classify` and `messages` (which import TensorFlow or JAX) are imported where records
# are classified, so that `python -m traceguard report` reads these values without them.

_TRACES_PER_FUNCTION = 1000


@dataclasses.dataclass(frozen=True)
class FunctionEvent:
    """One trace of a whole function, classified.

    Attributes:
        serial: The trace's number in this process; a layer's `TraceEvent`
            made during the trace has it as `function_trace`.
        kind: The `TraceKind`: `trace` (its first), `retrace` (a new signature,
            or a new function object from the same code), `variable_retrace`,
            or `save`.
        function: The backend's name for the function, e.g. `train_step`.
        signature: Every argument's spec, e.g. `{"x": "float32[8,4]", "step": "3"}`.
        changes: What differs from the closest earlier signature of the function.
        reason: One sentence: why it traced.
        hint: How to avoid it, or None when it is expected.
        call_site: `"file:line"` of the user's code that made the trace, if found.
        definition: `"file:line"` of the function's `def`, if found.
        duration_s: Seconds spent tracing.
        object_number: Which function object of this code traced (1, 2, ...).
        created_variables: Names of the variables the trace created.
        parent: The `serial` of the trace this one ran inside (a Keras step
            inside `multi_step_on_iterator`), else None.
        same_graph_as: For a retrace that built the same graph as an earlier
            trace of the same function object (same ops, wiring and constants;
            only shapes differ): that trace's `serial`. The retrace was pure
            waste, and what changed is safe to relax. None otherwise, and on
            JAX.
    """

    serial: int
    kind: TraceKind
    function: str
    signature: Mapping[str, str]
    changes: tuple[str, ...]
    reason: str
    hint: str | None
    call_site: str | None
    definition: str | None
    duration_s: float
    object_number: int
    created_variables: tuple[str, ...]
    parent: int | None = None
    same_graph_as: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names."""
        result = dataclasses.asdict(self)
        result.update(kind=self.kind.value, signature=dict(self.signature), changes=list(self.changes),
                      created_variables=list(self.created_variables))
        return result


@dataclasses.dataclass
class FunctionRuns:
    """The traces of one function in an `Explanation`.

    Attributes:
        name: The function's qualified name, e.g. `"train_step"` or
            `"TensorFlowTrainer._make_function.<locals>.one_step_on_data"`.
        function: The backend's name for it, e.g. `"one_step_on_data"`.
        definition: `"file:line"` of its `def`, if found.
        keras_step: Whether Keras made it (a step of `fit`, `evaluate` or `predict`).
        events: The `FunctionEvent`s, oldest first.
        objects: How many function objects of this code traced.
    """

    name: str
    function: str
    definition: str | None
    keras_step: bool
    events: list[FunctionEvent] = dataclasses.field(default_factory=list)
    objects: int = 1

    @property
    def seconds(self) -> float:
        """The time spent tracing it, in seconds."""
        return sum(event.duration_s for event in self.events)

    def counts(self) -> dict[str, int]:
        """Traces per kind name."""
        return {kind: sum(event.kind.value == kind for event in self.events) for kind in TRACE_KINDS}


def is_reported(record: FunctionTrace) -> bool:
    """Whether a report shows the record: the user's functions and Keras's steps, not the
    library's own helpers (Keras's data-adapter `tf.data` functions, TensorFlow's)."""
    from traceguard import _compat

    return not record.library_function or _compat.is_keras_step_function(record.name)


def function_event(record: FunctionTrace, old: Mapping[str, Any] | None) -> FunctionEvent:
    """The record, classified and worded. `old`: the signature its changes are from."""
    from traceguard import _compat
    from traceguard._core.classify import classify_function_trace
    from traceguard._reports.messages import hint_text, reason_text

    keras_step = record.library_function and _compat.is_keras_step_function(record.name)
    verdict = classify_function_trace(record, old, _compat.BACKEND, keras_step, record.keras_call)
    return FunctionEvent(
        serial=record.serial, kind=verdict.kind, function=record.name,
        signature=record.format_signature(), changes=tuple(verdict.changes),
        reason=reason_text(verdict), hint=hint_text(verdict), call_site=record.call_site,
        definition=record.definition, duration_s=record.duration, object_number=record.object_number,
        created_variables=record.created_variables, parent=record.parent,
        same_graph_as=record.same_graph_as if verdict.kind is TraceKind.RETRACE else None)


def function_key(record: FunctionTrace) -> str:
    """The key of the record's function in `Explanation.functions`: its name and `def` site."""
    return f"{record.qualname} ({record.definition})" if record.definition else record.qualname


def add_record(functions: dict[str, FunctionRuns], record: FunctionTrace,
               old: Mapping[str, Any] | None) -> tuple[str, FunctionRuns, FunctionEvent]:
    """Adds the record's event to its function's runs in `functions` (keyed by name and site).

    Returns the key, the function's runs and the event added.
    """
    from traceguard import _compat

    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        keras_step = record.library_function and _compat.is_keras_step_function(record.name)
        runs = functions[key] = FunctionRuns(record.qualname, record.name, record.definition, keras_step)
    if len(runs.events) >= _TRACES_PER_FUNCTION:
        runs.events.pop(0)
    event = function_event(record, old)
    runs.events.append(event)
    runs.objects = max(runs.objects, record.objects)
    return key, runs, event
