"""`FunctionRuns`: the traces of one whole function (`tf.function`, a Keras step, `jax.jit`,
`torch.compile`), as a report holds them, each a `FunctionEvent` (`_core.function_event`).

Values the live report fills (`_diagnosis.explanation`, with the words of each trace's verdict)
and the trace file reader rebuilds, read by the renderers as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard._core.function_event import FunctionEvent
from traceguard._core.functions import MissCost
from traceguard._core.kinds import COUNT_UNITS, FUNCTION_KINDS, TraceKind
from traceguard._core.specs import Site

_TRACES_PER_FUNCTION = 1000


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

    @property
    def frames(self) -> int:
        """torch: how many frames Dynamo compiled the function as, over the events kept: its own,
        and one per graph break whose code after it compiled as a frame of its own
        (`Verdict.resumed_after`); 1 on the other backends."""
        return len({None} | {event.verdict.resumed_after for event in self.events if event.verdict})

    @property
    def graph_breaks(self) -> tuple[tuple[str, Site], ...]:
        """torch: the graph breaks in the function's compiles kept, each once, in the order seen:
        torch's kind of break and where it happened (`Verdict.graph_breaks`)."""
        seen: dict[tuple[str, Site], None] = {}
        for event in self.events:
            for graph_break in event.verdict.graph_breaks if event.verdict else ():
                seen.setdefault(graph_break, None)
        return tuple(seen)

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

    def set_cost(self, serial: int, cost: MissCost) -> FunctionEvent | None:
        """Sets what the miss of the event of `serial` cost, once its call returned, recounting its
        seconds; the event itself, or None when it is not kept (dropped)."""
        for position in range(len(self.events) - 1, -1, -1):
            event = self.events[position]
            if event.serial == serial:
                self._count(event, -1)
                object.__setattr__(event, "cost", cost)  # The one field set after it is made.
                self._count(event, 1)
                return event
        return None

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
        """A snapshot: its own lists and counts (its events are the report's: a cost set on one later
        shows in both)."""
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


__all__ = ["FunctionEvent", "FunctionRuns", "count_traces"]
