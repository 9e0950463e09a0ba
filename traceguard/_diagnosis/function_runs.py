"""`FunctionRuns`: the traces of one whole function (`tf.function`, a Keras step, `jax.jit`).

An `Explanation` groups the `FunctionTrace` records it is told of by function (its
code and name), classifies each with `classify_function_trace`, and keeps the words
of the reason and the fix, so a report reads it without the records' store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from traceguard._core.changes import Change
from traceguard._core.function_rules import classify_function_trace
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.kinds import TRACE_KINDS, TraceKind
from traceguard._core.specs import Site, Spec
from traceguard._core.verdicts import Verdict
from traceguard._reports.messages import hint_text, reason_text

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace

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
        signature: Every argument's spec (`_core.specs`), by name; `str()` of one
            reads `"float32[8,4]"`, `"3"`.
        changes: What differs from the closest earlier signature of the
            function, as `Change` values.
        reason: One sentence: why it traced.
        hint: How to avoid it, or None when it is expected.
        call_site: The `Site` (`path`, `line`; `str()` reads `"file:line"`) of
            the user's code that made the trace, if found.
        definition: The `Site` of the function's `def`, if found.
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
        verdict: The classification as codes (`verdict.reason`, `verdict.hint`),
            which `reason` and `hint` word.
    """

    serial: int
    kind: TraceKind
    function: str
    signature: Mapping[str, Spec]
    changes: tuple[Change, ...]
    reason: str
    hint: str | None
    call_site: Site | None
    definition: Site | None
    duration_s: float
    object_number: int
    created_variables: tuple[str, ...]
    parent: int | None = None
    same_graph_as: int | None = None
    verdict: Verdict | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names: specs, changes and sites as
        their text, the codes as `reason_code` and `hint_code`."""
        result = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                  if field.name != "verdict"}
        verdict = self.verdict
        result.update(kind=self.kind.value,
                      signature={str(name): str(spec) for name, spec in self.signature.items()},
                      changes=[str(change) for change in self.changes],
                      created_variables=list(self.created_variables),
                      call_site=None if self.call_site is None else str(self.call_site),
                      definition=None if self.definition is None else str(self.definition),
                      reason_code=None if verdict is None else verdict.reason.value,
                      hint_code=None if verdict is None or verdict.hint is None else verdict.hint.value)
        return result


@dataclasses.dataclass
class FunctionRuns:
    """The traces of one function in an `Explanation`.

    Attributes:
        name: The function's qualified name, e.g. `"train_step"` or
            `"TensorFlowTrainer._make_function.<locals>.one_step_on_data"`.
        function: The backend's name for it, e.g. `"one_step_on_data"`.
        definition: The `Site` of its `def`, if found.
        keras_step: Whether Keras made it (a step of `fit`, `evaluate` or `predict`).
        events: The `FunctionEvent`s, oldest first.
        objects: How many function objects of this code traced.
    """

    name: str
    function: str
    definition: Site | None
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
    return not record.library_function or is_keras_step_function(record.name)


def function_event(record: FunctionTrace, old: Mapping[str, Any] | None) -> FunctionEvent:
    """The record, classified and worded. `old`: the signature its changes are from."""
    keras_step = record.library_function and is_keras_step_function(record.name)
    verdict = classify_function_trace(record, old, record.backend, keras_step, record.keras_call)
    return FunctionEvent(
        serial=record.serial, kind=verdict.kind, function=record.name,
        signature=record.signature, changes=tuple(verdict.changes),
        reason=reason_text(verdict), hint=hint_text(verdict), call_site=record.call_site,
        definition=record.definition, duration_s=record.duration, object_number=record.object_number,
        created_variables=record.created_variables, parent=record.parent,
        same_graph_as=record.same_graph_as if verdict.kind is TraceKind.RETRACE else None, verdict=verdict)


def function_key(record: FunctionTrace) -> str:
    """The key of the record's function in `Explanation.functions`: its name and `def` site."""
    return f"{record.qualname} ({record.definition})" if record.definition else record.qualname


def add_record(functions: dict[str, FunctionRuns], record: FunctionTrace,
               old: Mapping[str, Any] | None) -> tuple[str, FunctionRuns, FunctionEvent]:
    """Adds the record's event to its function's runs in `functions` (keyed by name and site).

    Returns the key, the function's runs and the event added.
    """
    key = function_key(record)
    runs = functions.get(key)
    if runs is None:
        keras_step = record.library_function and is_keras_step_function(record.name)
        runs = functions[key] = FunctionRuns(record.qualname, record.name, record.definition, keras_step)
    if len(runs.events) >= _TRACES_PER_FUNCTION:
        runs.events.pop(0)
    event = function_event(record, old)
    runs.events.append(event)
    runs.objects = max(runs.objects, record.objects)
    return key, runs, event
