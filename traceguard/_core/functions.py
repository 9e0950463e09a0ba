"""One trace of a whole function (`tf.function`, `tf.data`, `jax.jit`), as a plain value.

Made by `_record.functions.FunctionRecords` from each trace the `_compat` hook
reports; holds specs and strings only, never a tensor, graph or function.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from traceguard._core.backends import Backend
from traceguard._core.changes import Change
from traceguard._core.keras_names import KerasCall, OptimizerBuild
from traceguard._core.kinds import RETRACE_KINDS, TraceKind
from traceguard._core.specs import Site, Spec, signature_from_json, signature_to_json
from traceguard._core.verdicts import GraphBreak, Reason, Verdict

# A function trace's kind and the reason that tells them apart: the function's first
# trace; a trace by an object that traced before, for a new signature (or the same
# one, when a Python value outside the arguments changed): a miss of that object's own
# cache, its tracing count moved (`experimental_get_tracing_count()`); the first trace of a
# new object whose code traced before, a `trace` of that object (its cache was empty: the
# same code made anew is a problem of the code, not a retrace of the object); the trace
# `tf.function` repeats, without variable creation, after its first trace created variables;
# an XLA compilation for new input shapes without a trace (or JAX's compilation without one); a
# body JAX traced as part of the trace of the function it is a body of (not a retrace of its own).
FUNCTION_TRACE_KINDS: dict[Reason, TraceKind] = {
    Reason.FIRST_TRACE: TraceKind.TRACE,
    Reason.SIGNATURE_CHANGED: TraceKind.RETRACE,
    Reason.SAME_ARGUMENTS: TraceKind.RETRACE,
    Reason.NEW_FUNCTION_OBJECT: TraceKind.TRACE,
    Reason.VARIABLE_RETRACE: TraceKind.VARIABLE_RETRACE,
    Reason.XLA_COMPILE: TraceKind.COMPILE,
    Reason.RECOMPILE: TraceKind.COMPILE,
    Reason.PART_OF_TRACE: TraceKind.TRACE,
}


# The origin of a function JAX traced below `jax.jit`, with the same tracing cache: a control-flow
# body (`lax.scan`, `lax.while_loop`, `lax.fori_loop`), a `lax.cond` branch, a `jax.checkpoint`ed
# function, run under `jax.jit` or eagerly.
BODY_ORIGIN = "jax.body"


class FunctionId(str):
    """A traced function, as a report keys it: its qualified name and the `Site` of its `def`.

    `str()` is the key's text, `"train_step (train.py:12)"` (the name alone without a site),
    and a `FunctionId` is equal to that text and hashed as it is, so `Explanation.functions`
    is looked up by either.

    Attributes:
        qualname: The Python function's qualified name.
        definition: The `Site` of its `def`, or None.
    """

    qualname: str
    definition: Site | None

    def __new__(cls, qualname: str, definition: Site | None = None) -> FunctionId:
        self = super().__new__(cls, f"{qualname} ({definition})" if definition else qualname)
        self.qualname = qualname
        self.definition = definition
        return self

    def __reduce__(self) -> tuple:  # Pickled (to a worker, a snapshot) as its parts.
        return FunctionId, (self.qualname, self.definition)

    def __str__(self) -> str:
        return str.__str__(self)


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """A trace against its function's earlier traces, computed once per trace
    (`_record.functions.FunctionRecords`): while it runs, for the layer runs inside it, and
    recorded as it ends.

    `object_number` and `objects` count the function objects of its code (a record numbers
    them per `def` site); `closest` is the index of the earlier trace compared with.
    """

    reason: Reason
    changes: tuple[Change, ...]
    closest: int | None
    object_number: int
    objects: int
    lifted_variables: tuple[str, ...] = ()  # A variable retrace: what the creating trace made.
    same_model: bool | None = None  # A Keras step's new object: the same model as before?

    @property
    def kind(self) -> TraceKind:
        """The kind its reason makes (`FUNCTION_TRACE_KINDS`)."""
        return FUNCTION_TRACE_KINDS[self.reason]


@dataclasses.dataclass(frozen=True)
class MissCost:
    """What one trace's miss cost, as the call that made it returned (`_compat._function_calls`).

    Until that call returns, the trace's own phase only (`trace`: Python ran the body).
    """

    # Seconds per phase (`_compat._function_calls.PHASES`: trace, lower, compile, first_call), those
    # measured.
    phases: Mapping[str, float]
    miss: float | None = None  # The whole call that traced (its last trace), in seconds.
    persistent_cache: str | None = None  # JAX's persistent compilation cache: "hit", "miss".
    cache_saved: float | None = None  # Seconds that cache saved (a hit).
    started: float | None = None  # When the trace (or compilation) started, seconds since the epoch.
    call_started: float | None = None  # When the call that made it started, likewise.

    def to_json(self) -> dict[str, Any]:
        """The costs as JSON data, by the names a `FunctionEvent` gives them (a trace file's
        `function_cost` record)."""
        return {"phases": dict(self.phases), "miss_s": self.miss, "persistent_cache": self.persistent_cache,
                "cache_saved_s": self.cache_saved, "started": self.started, "call_started": self.call_started}

    def seconds(self, traced: float) -> float:
        """What the miss cost, in seconds: `miss` when measured, else its phases, else `traced` (the
        seconds its trace took)."""
        if self.miss is not None:
            return self.miss
        return sum(self.phases.values()) or traced

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MissCost:
        phases = {str(phase): float(seconds) for phase, seconds in (data.get("phases") or {}).items()}
        return cls(types.MappingProxyType(phases), data.get("miss_s"), data.get("persistent_cache"),
                   data.get("cache_saved_s"), data.get("started"), data.get("call_started"))


@dataclasses.dataclass(frozen=True)
class FunctionTrace:
    """One trace of a whole function, with what differs from its closest earlier one."""

    index: int  # 0, 1, ... in the order the traces ended, in its `FunctionRecords`.
    serial: int  # The hook's serial of the trace: layer runs made during it name it.
    parent: int | None  # The serial of the trace this one ran inside, if any.
    origin: str  # "tf.function", "tf.data", "jax.jit" or "jax.body" (a body JAX traced below jax.jit).
    name: str  # The backend's name for the function (`one_step_on_data`).
    qualname: str  # The Python function's qualified name.
    definition: Site | None  # Where its `def` is.
    call_site: Site | None  # The first user frame that made the trace.
    caller: str | None  # The function of that frame.
    entry: str | None  # The library function the user called (`TensorFlowTrainer.fit`).
    signature: Mapping[str, Spec]  # Every argument's spec, in parameter order.
    kind: TraceKind  # `trace`, `retrace` or `variable_retrace` (see FUNCTION_TRACE_KINDS).
    reason: Reason  # Which of them: a first trace, a new signature, a new function object ...
    changes: tuple[Change, ...]  # From the closest earlier signature; () if none.
    closest: int | None  # The index of the trace compared with, if any.
    duration: float  # Seconds spent tracing.
    object_number: int  # 1 for the first function object of this code, 2 for the next ...
    objects: int  # How many function objects of this code have traced so far.
    saving: bool  # Traced to save (SavedModel, Keras `export`).
    phase: str | None  # "variable_creation", "no_variable_creation" or None.
    created_variables: tuple[str, ...]  # Names of the variables this trace created.
    relaxed: bool | None  # The backend traced a generalised signature.
    raised: bool  # The trace raised an exception.
    # The function is TensorFlow's, Keras's or JAX's own (a Keras step, a Keras data
    # adapter's `tf.data` function), not defined in the user's code.
    library_function: bool = False
    keras_call: KerasCall | None = None  # The Keras method it traced under, and its data.
    # For a variable retrace: the variables the earlier, creating trace made.
    lifted_variables: tuple[str, ...] = ()
    # For a variable retrace of a Keras step: the model's optimizers that own those variables.
    optimizer_builds: tuple[OptimizerBuild, ...] = ()
    # The serial of an earlier trace of the same function object that built the
    # same graph (same ops, wiring and constants; shapes aside): a wasted retrace.
    same_graph_as: int | None = None
    # With `relaxed`: the signature the backend traced instead (a dimension made None).
    relaxed_signature: Mapping[Any, Spec] | None = None
    # Where the call's data came from, when the hook saw it: "dataset" (the calling frame holds a
    # `tf.data` dataset or iterator), else None (a Keras step's is `keras_call.data`).
    data: str | None = None
    # For a new function object of a Keras step: whether it steps the same model as the object
    # before it (`compile()` dropped the step function), or another model; None when not known.
    same_model: bool | None = None
    # What the miss cost as the trace ended: its own phase only. The whole miss, known when the call
    # that traced returns, is a `MissCost` of its own held beside the record (`FunctionRecords.cost_of`,
    # the observers' `record_function_cost(record, cost)`): the record is never copied.
    miss_cost: MissCost = dataclasses.field(default_factory=lambda: MissCost(types.MappingProxyType({})))
    xla_functions: tuple[str, ...] = ()  # The `jit_compile=True` functions its graph runs.
    # Traced because `get_concrete_function` asked for it (the user, or a library such as
    # `tf.data`'s multi-device iterator), not on a call's cache miss.
    requested: bool = False
    # A function restored by `tf.saved_model.load`: it runs only the concrete functions saved.
    restored: bool = False
    # A "jax.body" trace: what JAX traced it for ("scan", "while_body", "cond", ...), and the name of
    # the function it is a body of (that called the control flow).
    traced_for: str | None = None
    body_of: str | None = None
    # torch: why Dynamo recompiled, in torch's own words, one per earlier cache entry, most
    # recent first (`changes` reads the first); () elsewhere.
    backend_reasons: tuple[str, ...] = ()
    # torch: the graph breaks of this compile, each Dynamo's kind of break and where it happened;
    # the code after each one is compiled as a frame of its own (`torch_dynamo_resume_in_...`).
    graph_breaks: tuple[GraphBreak, ...] = ()
    # torch: for a frame Dynamo compiled after a graph break (`torch_dynamo_resume_in_<name>_at_<line>`,
    # a cache of its own), where that break is; the record is its function's (name, `def` site).
    resumed_after: Site | None = None
    # torch: for such a frame, torch's hints for that break (`GraphBreak.hints`), when its compile
    # was seen.
    break_hints: tuple[str, ...] = ()
    # Why it traced and the fix, as codes: classified once, as the record is made
    # (`_core.function_rules.classify_function_trace`); every report and guard reads it.
    verdict: Verdict | None = None

    @property
    def backend(self) -> Backend:
        """The backend that traced it: `Backend.JAX` for `jax.jit` and the bodies below it,
        `Backend.TORCH` for `torch.compile`, else `Backend.TENSORFLOW`."""
        if self.origin.startswith("torch."):
            return Backend.TORCH
        return Backend.JAX if self.origin.startswith("jax.") else Backend.TENSORFLOW

    @property
    def cost(self) -> float:
        """What its miss cost as it ended, in seconds (`miss_cost.seconds`)."""
        return self.miss_cost.seconds(self.duration)

    @property
    def is_first(self) -> bool:
        """Whether it is the function's first trace (of its code, by any object)."""
        return self.reason is Reason.FIRST_TRACE

    @property
    def is_retrace(self) -> bool:
        """Whether it is a miss of its own function object's cache (a `retrace` or
        `variable_retrace`), not the first trace of an object."""
        return self.kind in RETRACE_KINDS

    @property
    def phases(self) -> Mapping[str, float]:
        """Seconds per phase of the miss as the trace ended (`MissCost.phases`)."""
        return self.miss_cost.phases

    @property
    def miss(self) -> float | None:
        return self.miss_cost.miss

    @property
    def persistent_cache(self) -> str | None:
        return self.miss_cost.persistent_cache

    @property
    def cache_saved(self) -> float | None:
        return self.miss_cost.cache_saved

    @property
    def started(self) -> float | None:
        return self.miss_cost.started

    @property
    def call_started(self) -> float | None:
        return self.miss_cost.call_started

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON data, by its name: typed values by their own `to_json()` (a new field
        of a type listed in `_CODECS` needs no line here)."""
        result = dict(self.__dict__)  # A dataclass without slots keeps its fields there.
        for name, write in _WRITTEN:  # The typed values; JSON's own (numbers, text) as they are.
            value = result[name]
            if value is not None:
                result[name] = write(value)
        return result

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FunctionTrace:
        """The record `to_json` wrote; a field it lacks (an older writer's) takes its default."""
        values: dict[str, Any] = {name: None if data[name] is None else read(data[name])
                                  for name, (_, read) in _FIELD_CODECS if name in data and name != "verdict"}
        verdict = data.get("verdict")
        if verdict is not None:
            values["verdict"] = Verdict.from_json(verdict, values.get("changes", ()))
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class FunctionCost:
    """What tracing one function (all objects of one code) cost, over the records kept."""

    name: str
    qualname: str
    definition: Site | None
    traces: int
    retraces: int  # Misses of an object's own cache: retraces and variable retraces.
    objects: int
    seconds: float  # Spent tracing.
    # What the misses cost, each second once: each trace's whole miss (less the earlier traces of
    # its call), else its phases; the tracing alone until the calls that traced return.
    cost_seconds: float = 0.0


def _signature(data: Any) -> Mapping[Any, Spec]:
    return types.MappingProxyType(signature_from_json(data))


# Each field's type (as annotated, `| None` aside) -> how its value is written and read back.
_CODECS: dict[str, tuple[Any, Any]] = {
    "int": (None, int), "float": (None, float), "str": (None, str), "bool": (None, bool),
    "Site": (Site.to_json, Site.from_json),
    "Mapping[str, Spec]": (signature_to_json, _signature),
    "Mapping[Any, Spec]": (signature_to_json, _signature),
    "TraceKind": (lambda kind: kind.value, TraceKind), "Reason": (lambda reason: reason.value, Reason),
    "tuple[str, ...]": (list, tuple),
    "tuple[Change, ...]": (lambda changes: [change.to_json() for change in changes],
                           lambda data: tuple(Change.from_json(change) for change in data)),
    "KerasCall": (KerasCall.to_json, KerasCall.from_json),
    "tuple[OptimizerBuild, ...]": (lambda builds: [build.to_json() for build in builds],
                                   lambda data: tuple(OptimizerBuild.from_json(build) for build in data)),
    "tuple[GraphBreak, ...]": (lambda breaks: [graph_break.to_json() for graph_break in breaks],
                               lambda data: tuple(GraphBreak.from_json(graph_break) for graph_break in data)),
    "MissCost": (MissCost.to_json, MissCost.from_json), "Verdict": (Verdict.to_json, None),
}
# Every field of `FunctionTrace` with its codec: a field of a type without one fails here, at import.
_FIELD_CODECS = tuple((field.name, _CODECS[str(field.type).removesuffix(" | None")])
                      for field in dataclasses.fields(FunctionTrace))
_WRITTEN = tuple((name, write) for name, (write, _) in _FIELD_CODECS if write is not None)
