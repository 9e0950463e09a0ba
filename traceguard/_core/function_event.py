"""`FunctionEvent`: one trace of a whole function as a report shows it, a view of its
`FunctionTrace` and its `MissCost`, with the words of its verdict.

The event holds the trace the recorder made, not a copy of its fields: its attributes are
properties over the trace, and the cost that arrives when the call that traced returns is set
once (`FunctionRuns.set_cost`). A trace file holds the event as `to_json()` gives it, and
`from_json()` rebuilds the same trace, so an event read back equals the live one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Change
from traceguard._core.function_rules import is_avoidable
from traceguard._core.functions import FunctionTrace, MissCost
from traceguard._core.kinds import MISS_KINDS, TraceKind
from traceguard._core.specs import Site, Spec
from traceguard._core.verdicts import Verdict


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
        trace: The `FunctionTrace` recorded: every fact of the trace, of which
            the attributes above are views (a trace file holds it whole).
        cost: Its `MissCost`: until the call that traced returns, the trace's
            own phase; then set once to what the whole miss cost.
    """

    trace: FunctionTrace
    reason: str
    hint: str | None
    cost: MissCost

    # The attributes a report reads, each a view of the trace, its verdict or its cost.
    @property
    def serial(self) -> int:
        return self.trace.serial

    @property
    def kind(self) -> TraceKind:
        verdict = self.trace.verdict
        return self.trace.kind if verdict is None else verdict.kind

    @property
    def function(self) -> str:
        return self.trace.name

    @property
    def signature(self) -> Mapping[Any, Spec]:
        return self.trace.signature

    @property
    def changes(self) -> tuple[Change, ...]:
        return self.trace.changes

    @property
    def call_site(self) -> Site | None:
        return self.trace.call_site

    @property
    def definition(self) -> Site | None:
        return self.trace.definition

    @property
    def duration_s(self) -> float:
        return 0.0 if self.kind is TraceKind.COMPILE else self.trace.duration

    @property
    def object_number(self) -> int:
        return self.trace.object_number

    @property
    def created_variables(self) -> tuple[str, ...]:
        return self.trace.created_variables

    @property
    def parent(self) -> int | None:
        return self.trace.parent

    @property
    def same_graph_as(self) -> int | None:
        return self.trace.same_graph_as if self.kind is TraceKind.RETRACE else None

    @property
    def phases(self) -> Mapping[str, float]:
        return self.cost.phases

    @property
    def miss_s(self) -> float | None:
        return self.cost.miss

    @property
    def persistent_cache(self) -> str | None:
        return self.cost.persistent_cache

    @property
    def cache_saved_s(self) -> float | None:
        return self.cost.cache_saved

    @property
    def verdict(self) -> Verdict | None:
        return self.trace.verdict

    @property
    def started(self) -> float | None:
        started = self.cost.started
        return self.trace.started if started is None else started

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
        """The event as JSON data, in three parts (a trace file's `function_trace` line holds them):
        `event`, its attributes (`ATTRIBUTES`: the signature, changes, sites and verdict as typed
        values, the verdict's codes as `reason_code` and `hint_code`); `trace`, the trace's other
        facts; `call_started`, its cost's. `from_json` rebuilds the trace from them."""
        trace = self.trace.to_json()
        same_cost = self.cost is self.trace.miss_cost or self.cost == self.trace.miss_cost
        cost = trace["miss_cost"] if same_cost else self.cost.to_json()
        verdict = self.trace.verdict
        event = {"serial": trace["serial"], "kind": self.kind.value, "function": trace["name"],
                 "signature": trace["signature"], "changes": trace["changes"], "reason": self.reason,
                 "hint": self.hint, "reason_code": None if verdict is None else verdict.reason.value,
                 "hint_code": None if verdict is None or verdict.hint is None else verdict.hint.value,
                 "verdict": trace["verdict"], "call_site": trace["call_site"],
                 "definition": trace["definition"],
                 "duration_s": self.duration_s, "object_number": trace["object_number"],
                 "created_variables": trace["created_variables"], "parent": trace["parent"],
                 "same_graph_as": self.same_graph_as, "started": cost["started"], "phases": cost["phases"],
                 "miss_s": cost["miss_s"], "persistent_cache": cost["persistent_cache"],
                 "cache_saved_s": cost["cache_saved_s"]}
        rest = {name: value for name, value in trace.items() if name not in _IN_EVENT}
        if not same_cost:  # Its cost when recorded, when the event's is later.
            rest["miss_cost"] = trace["miss_cost"]
        return {"event": event, "trace": rest, "call_started": cost["call_started"]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FunctionEvent:
        """The event `to_json` wrote (or a trace file's `function_trace` line): its trace rebuilt from
        the event's attributes and the trace's other facts. Facts an older writer left out take the
        event's (`duration`, `objects`, `qualname`, `same_graph_as`) or their defaults."""
        event, rest = data["event"], data.get("trace", {})
        cost = {name: event.get(name) for name in ("phases", "miss_s", "persistent_cache", "cache_saved_s",
                                                     "started")}
        cost["call_started"] = data.get("call_started")
        trace = {"duration": event["duration_s"], "objects": event["object_number"],
                 "same_graph_as": event.get("same_graph_as"),
                 "qualname": data.get("qualname", event["function"]), "miss_cost": cost, **rest,
                 **{name: event[name] for name in _IN_EVENT if name in event}, "name": event["function"]}
        if "kind" not in rest:  # Its own kind, before the whole record was classified: the event's.
            trace["kind"] = event["kind"]
        if "reason" not in rest:
            trace["reason"] = (event.get("verdict") or {}).get("reason", "first_trace")
        return cls(FunctionTrace.from_json(trace), event["reason"], event["hint"], MissCost.from_json(cost))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict whose keys are the attributes: specs, changes and sites as
        their text, the codes as `reason_code` and `hint_code`. The text view of `to_json()`'s
        `event`."""
        result = self.to_json()["event"]
        del result["verdict"]
        result.update(signature={str(name): str(spec) for name, spec in self.signature.items()},
                      changes=[str(change) for change in self.changes],
                      call_site=None if self.call_site is None else str(self.call_site),
                      definition=None if self.definition is None else str(self.definition))
        return result


# The attributes `FunctionEvent` documents, views of its trace and cost; and the trace's fields its
# `to_json()["event"]` holds as they are (the others are its `trace`).
ATTRIBUTES = ("serial", "kind", "function", "signature", "changes", "reason", "hint", "call_site",
              "definition", "duration_s", "object_number", "created_variables", "parent", "same_graph_as",
              "phases", "miss_s", "persistent_cache", "cache_saved_s", "verdict", "started")
_IN_EVENT = frozenset({"serial", "name", "signature", "changes", "call_site", "definition", "object_number",
                       "created_variables", "parent", "verdict", "miss_cost"})


__all__ = ["ATTRIBUTES", "FunctionEvent"]
