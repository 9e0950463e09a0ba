"""`FunctionEvent` and `FunctionRuns`: the traces of one whole function (`tf.function`, a Keras
step, `jax.jit`, `torch.compile`), as a report holds them.

Values the live report fills (`_diagnosis.explanation`, with the words of each trace's verdict)
and the trace file reader rebuilds, read by the renderers as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Change
from traceguard._core.function_rules import is_avoidable
from traceguard._core.kinds import COUNT_UNITS, FUNCTION_KINDS, MISS_KINDS, TraceKind
from traceguard._core.specs import Site, Spec, signature_from_json, signature_to_json
from traceguard._core.verdicts import Verdict

_TRACES_PER_FUNCTION = 1000


@dataclasses.dataclass(frozen=True)
class FunctionEvent:
    """One trace of a whole function, classified; or one XLA compilation without a trace.

    Attributes:
        serial: The trace's number in this process; a layer's `TraceEvent`
            made during the trace has it as `function_trace`.
        kind: The `TraceKind`: `trace` (the first of its function object, a new
            object of the same code included), `retrace` (the same object
            missed its cache: a new signature), `variable_retrace`,
            `save`, or `compile`: no trace, but XLA compiled the function for
            input shapes it had not run (`jit_compile=True` with a relaxed
            signature, a Keras step's new batch shape); then `signature` holds
            those shapes and `changes` what differs from the closest shapes
            compiled before.
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
        duration_s: Seconds spent tracing (0 for a `compile`).
        object_number: Which function object of this code traced (1, 2, ...).
        created_variables: Names of the variables the trace created.
        parent: The `serial` of the trace this one ran inside (a Keras step
            inside `multi_step_on_iterator`), else None.
        same_graph_as: For a retrace that built the same graph as an earlier
            trace of the same function object (same ops, wiring and constants;
            only shapes differ): that trace's `serial`. The retrace was pure
            waste, and what changed is safe to relax. None otherwise, and on
            JAX.
        phases: Seconds per phase of the miss, only the phases measured:
            `trace` (Python ran the body), `lower` (TensorFlow: building and
            optimizing the new concrete function's graph in its first call,
            that call's one execution included; JAX: the jaxpr to MLIR),
            `compile` (XLA compiling; on TensorFlow the first call of a
            function that runs XLA, graph building and one execution
            included; on JAX the backend's compilation, or the persistent
            cache's read), `first_call` (JAX: dispatching the first
            execution). Device time is not counted: on a GPU a call returns
            before the device finishes.
        miss_s: Seconds from the call's entry to its return (the dispatcher's
            cache lookup and bookkeeping, the trace, and the phases after it),
            less the earlier traces the same call made, on the last trace that
            call made; None for an earlier trace of the same call (a first
            trace that created variables: its cost is its phases) or when the
            call was not seen. The traces of a call add up to the call.
        persistent_cache: JAX's persistent compilation cache for this
            compilation: `"hit"` (read from the cache) or `"miss"` (compiled
            and written); None without such a cache.
        cache_saved_s: On a hit, the compilation seconds the cache saved
            (the original compilation's time less the read), as JAX reports it.
        started: When the trace started, in seconds since the epoch, if known.
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
    phases: Mapping[str, float] = dataclasses.field(default_factory=dict)
    miss_s: float | None = None
    persistent_cache: str | None = None
    cache_saved_s: float | None = None
    verdict: Verdict | None = None
    started: float | None = None

    @property
    def cost_s(self) -> float:
        """What the miss cost, in seconds, each second once: the whole call when measured (less
        the earlier trace the same call made), else its phases. A trace made while another
        function traced is in that one's cost too."""
        if self.miss_s is not None:
            return self.miss_s
        return sum(self.phases.values()) if self.phases else self.duration_s

    @property
    def avoidable(self) -> bool:
        """Whether a fix removes this miss: a retrace or compilation with a fix (not a first
        trace, a save, or a one-time cost such as metrics' state)."""
        if self.verdict is None:  # Read back without its codes.
            return self.kind in MISS_KINDS
        return is_avoidable(self.kind, self.verdict.hint, self.verdict.reason)

    def to_json(self) -> dict[str, Any]:
        """The event as JSON data (a trace file's `event`): its fields, with the signature, changes,
        sites and verdict as typed values (`from_json` rebuilds them) and the verdict's codes as
        `reason_code` and `hint_code`."""
        result = dict(self.__dict__)  # The fields (a dataclass without slots keeps them there).
        verdict = result.pop("verdict")
        call_site, definition = self.call_site, self.definition
        result.update(kind=self.kind.value, signature=signature_to_json(self.signature),
                      changes=[change.to_json() for change in self.changes],
                      created_variables=list(self.created_variables), phases=dict(self.phases),
                      call_site=None if call_site is None else call_site.to_json(),
                      definition=None if definition is None else definition.to_json(),
                      reason_code=None if verdict is None else verdict.reason.value,
                      hint_code=None if verdict is None or verdict.hint is None else verdict.hint.value,
                      verdict=None if verdict is None else verdict.to_json())
        return result

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FunctionEvent:
        """The event `to_json` wrote; fields it does not know (a newer writer's) are left out."""
        changes = tuple(Change.from_json(change) for change in data["changes"])
        verdict, call_site, definition = data.get("verdict"), data.get("call_site"), data.get("definition")
        values = {name: data[name] for name in _EVENT_FIELDS if name in data}
        values.update(kind=TraceKind(data["kind"]), signature=signature_from_json(data["signature"]),
                      changes=changes, created_variables=tuple(data["created_variables"]),
                      phases={str(phase): float(seconds)
                              for phase, seconds in (data.get("phases") or {}).items()},
                      call_site=None if call_site is None else Site.from_json(call_site),
                      definition=None if definition is None else Site.from_json(definition),
                      verdict=None if verdict is None else Verdict.from_json(verdict, changes))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the field names: specs, changes and sites as
        their text, the codes as `reason_code` and `hint_code`. The text view of `to_json()`."""
        result = self.to_json()
        del result["verdict"]
        result.update(signature={str(name): str(spec) for name, spec in self.signature.items()},
                      changes=[str(change) for change in self.changes],
                      call_site=None if self.call_site is None else str(self.call_site),
                      definition=None if self.definition is None else str(self.definition))
        return result


_EVENT_FIELDS = tuple(field.name for field in dataclasses.fields(FunctionEvent))


@dataclasses.dataclass
class FunctionRuns:
    """The traces of one function in an `Explanation`.

    The counts and seconds cover every trace and compilation seen, the events
    dropped from `events` included.

    Attributes:
        name: The function's qualified name, e.g. `"train_step"` or
            `"TensorFlowTrainer._make_function.<locals>.one_step_on_data"`.
        function: The backend's name for it, e.g. `"one_step_on_data"`.
        definition: The `Site` of its `def`, if found.
        keras_step: Whether Keras made it (a step of `fit`, `evaluate` or `predict`).
        events: The `FunctionEvent`s kept, oldest first (the last 1000).
        objects: How many function objects of this code traced.
        dropped: How many older events were dropped from `events`.
        kind_counts: Events per kind name, over all of them.
        phase_seconds: Seconds per phase (`FunctionEvent.phases`), over all.
        cost_seconds: What its misses cost, in seconds, over all (each event's
            `cost_s`): each second once; a function's traces made while
            another function traced are in that one's too.
        avoidable_seconds: The part of `cost_seconds` a fix removes: its
            retraces and compilations that have one (`FunctionEvent.avoidable`).
        cache_counts: JAX's persistent compilation cache: compilations per
            outcome (`"hit"`: read from the cache, `"miss"`: compiled and written).
        cache_saved_seconds: The seconds the cache's hits saved, over all.
    """

    name: str
    function: str
    definition: Site | None
    keras_step: bool
    events: list[FunctionEvent] = dataclasses.field(default_factory=list)
    objects: int = 1
    dropped: int = 0
    kind_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    phase_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    cost_seconds: float = 0.0
    avoidable_seconds: float = 0.0
    cache_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    cache_saved_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        """The time spent tracing it, in seconds, over every trace."""
        return self.phase_seconds.get("trace", 0.0)

    @property
    def traces(self) -> int:
        """How many traces it made, kept or dropped (its compilations without one aside)."""
        return sum(count for kind, count in self.kind_counts.items() if kind != TraceKind.COMPILE.value)

    @property
    def compilations(self) -> int:
        """How many times XLA (or JAX) compiled it without a trace."""
        return self.kind_counts.get(TraceKind.COMPILE.value, 0)

    def counts(self) -> dict[str, int]:
        """Events per kind name, over every event seen."""
        return {kind.value: self.kind_counts.get(kind.value, 0) for kind in FUNCTION_KINDS}

    def dominant_phase(self) -> str | None:
        """The phase that took the most seconds over all its events, or None."""
        return max(self.phase_seconds, key=self.phase_seconds.__getitem__) if self.phase_seconds else None

    def add(self, event: FunctionEvent) -> None:
        """Keeps `event` (dropping the oldest past 1000) and counts it."""
        if len(self.events) >= _TRACES_PER_FUNCTION:
            self.events.pop(0)
            self.dropped += 1
        self.events.append(event)
        self.kind_counts[event.kind.value] = self.kind_counts.get(event.kind.value, 0) + 1
        self._count(event, 1)

    def replace(self, event: FunctionEvent) -> bool:
        """Puts `event` where the event of the same serial is, recounting its seconds."""
        for position in range(len(self.events) - 1, -1, -1):
            if self.events[position].serial == event.serial:
                self._count(self.events[position], -1)
                self.events[position] = event
                self._count(event, 1)
                return True
        return False

    def _count(self, event: FunctionEvent, sign: int) -> None:
        for phase, seconds in (event.phases or {"trace": event.duration_s}).items():
            self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + sign * seconds
        self.cost_seconds += sign * event.cost_s
        if event.avoidable:
            self.avoidable_seconds += sign * event.cost_s
        if event.persistent_cache is not None:
            outcome = event.persistent_cache
            self.cache_counts[outcome] = self.cache_counts.get(outcome, 0) + sign
            self.cache_saved_seconds += sign * (event.cache_saved_s or 0.0)

    def to_json(self) -> dict[str, Any]:
        """The runs as JSON data: their fields, the events' `to_json()` and the `def` site's."""
        result = dict(self.__dict__)
        definition = self.definition
        result.update(definition=None if definition is None else definition.to_json(),
                      events=[event.to_json() for event in self.events], kind_counts=dict(self.kind_counts),
                      phase_seconds=dict(self.phase_seconds), cache_counts=dict(self.cache_counts))
        return result

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FunctionRuns:
        """The runs `to_json` wrote."""
        definition = data.get("definition")
        values = {name: data[name] for name in _RUNS_FIELDS if name in data}
        values.update(definition=None if definition is None else Site.from_json(definition),
                      events=[FunctionEvent.from_json(event) for event in data.get("events", ())],
                      kind_counts=dict(data.get("kind_counts", {})),
                      phase_seconds=dict(data.get("phase_seconds", {})),
                      cache_counts=dict(data.get("cache_counts", {})))
        return cls(**values)

    def copy(self) -> FunctionRuns:
        """A snapshot: its own lists and counts."""
        return dataclasses.replace(self, events=list(self.events), kind_counts=dict(self.kind_counts),
                                   phase_seconds=dict(self.phase_seconds),
                                   cache_counts=dict(self.cache_counts))


_RUNS_FIELDS = tuple(field.name for field in dataclasses.fields(FunctionRuns))


def count_traces(functions: Any, kind: Any = None, layer: str | None = None,
                 of: str | None = None) -> int | None:
    """`Explanation.count`: how many traces (and compilations) of `functions` (`FunctionRuns`)
    are of the given kind(s), dropped events included (all when None); None when it counts layer
    runs instead (`of="layers"`, or by default when `layer` is named)."""
    if of is None:
        of = "layers" if layer is not None else "functions"
    if of not in COUNT_UNITS:
        raise ValueError(f"`of` expects one of {', '.join(COUNT_UNITS)}. Received: of={of!r}")
    if of == "layers":
        return None
    if layer is not None:
        raise ValueError("A layer's runs are counted with `of=\"layers\"`, not as function traces. "
                         f"Received: of={of!r}, layer={layer!r}")
    names = None if kind is None else [kind] if isinstance(kind, (str, TraceKind)) else list(kind)
    valid = {kind.value for kind in FUNCTION_KINDS}
    if names is not None:
        names = [getattr(name, "value", name) for name in names]
        wrong = [name for name in names if name not in valid]
        if wrong:
            raise ValueError(
                f"`kind` of a function's trace expects one of {', '.join(sorted(valid))}, or a "
                f"collection of them; {wrong[0]!r} is none of them (eager and symbolic runs are a "
                f"layer's: count them with `of=\"layers\"`). Received: kind={kind!r}")
    return int(sum(count for runs in functions for name, count in runs.kind_counts.items()
                   if names is None or name in names))
