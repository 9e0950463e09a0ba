"""Traces of several processes side by side, and where they differ: the values of a comparison.

Plain values: `_diagnosis.compare` makes them from trace files (or `Explanation`s) and
`_reports.compare` words them. Two questions are asked of them:

- workers of one job: which worker's sequence of traces of a function differs from the
  others' (a `Divergence`: the first trace where it differs, and how), or stops short of
  it in a file the process did not close (`Stopped`);
- two runs: which traces a run made that the baseline run did not (`NewTrace`, with the
  baseline's closest signature), and which the baseline made and it did not
  (`MissingTrace`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Change
from traceguard._core.events import TraceKind


class Mode(str, enum.Enum):
    """What the compared sources are."""

    WORKERS = "workers"  # Processes of one job, which must trace alike.
    RUNS = "runs"  # Runs one after another: each compared with a baseline.

    def __str__(self) -> str:
        return self.value


class ModeReason(str, enum.Enum):
    """How the mode was chosen."""

    BASELINE = "baseline"  # A baseline was given.
    FLAG = "flag"  # Workers were asked for (`--workers`, `workers=True`).
    WORKER_HEADERS = "worker_headers"  # Every file names its worker (TF_CONFIG, jax.distributed).
    WORKER_LABELS = "worker_labels"  # Every label names a worker (`worker-0`, `rank1`, ...).

    def __str__(self) -> str:
        return self.value


class Difference(str, enum.Enum):
    """How a worker's trace differs from the others' trace at the same point."""

    SIGNATURE = "signature"  # Another signature.
    KIND = "kind"  # The same signature, another kind (e.g. a variable retrace the others did not make).
    GRAPH = "graph"  # The same signature, another graph (`same_graph_as` differs).
    EXTRA = "extra"  # A trace the others did not make at that point.
    MISSING = "missing"  # The others made a trace there; this worker did not.

    def __str__(self) -> str:
        return self.value


class NoteKind(str, enum.Enum):
    """Something about the sources that a reader of the comparison should know."""

    INCOMPLETE = "incomplete"  # A file without an end line: killed, or still running.
    SCHEMA_VERSIONS = "schema_versions"  # Files of different schema versions.
    STACKS = "stacks"  # Processes that ran different TensorFlow/Keras/JAX versions.
    MISSING_WORKERS = "missing_workers"  # The job had more workers than files given.
    NO_MAJORITY = "no_majority"  # Equally many workers on each side: compared with the first.
    DEFINITION_MOVED = "definition_moved"  # A function matched by name, defined at other lines.

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Source:
    """One compared process: a trace file, or an `Explanation`.

    Attributes:
        label: How the comparison names it (its file's label, made unique).
        path: The trace file, or None for an `Explanation`.
        complete: Whether the file ends with an end line (always True for an `Explanation`).
        version: The file's schema version, or None.
        stack: The TensorFlow, Keras and JAX versions it ran, as `describe_versions()`
            words them, or None.
        worker: The worker of a multi-worker job its header names (`"worker-1"`), or None.
        worker_count: How many processes that job trains with, if its header says.
    """

    label: str
    path: str | None = None
    complete: bool = True
    version: int | None = None
    stack: str | None = None
    worker: str | None = None
    worker_count: int | None = None


@dataclasses.dataclass(frozen=True)
class Function:
    """A function as matched across sources: by qualified name and definition site.

    Attributes:
        name: The backend's name for it, e.g. `"one_step_on_data"`.
        qualname: Its qualified name.
        definition: `"file:line"` of its `def` (the file's base name), or None.
        keras_step: Whether Keras made it (a step of `fit`, `evaluate` or `predict`).
    """

    name: str
    qualname: str
    definition: str | None
    keras_step: bool = False


@dataclasses.dataclass(frozen=True)
class Step:
    """One trace in a source's sequence of traces of a function.

    Attributes:
        number: Its place in the sequence, from 1.
        kind: Its `TraceKind`.
        signature: Argument name to spec text.
        same_graph_as: The `number` of the earlier trace of the sequence that built
            the same graph, or None.
        serial: The trace's `FunctionEvent.serial` in its process.
        changes: What differed from the closest earlier trace in its own process
            (`Change`s, or their text).
        phases: Seconds per phase of the miss (tracing, lowering, compiling), when
            the source records them; else None.
        specs: Argument name to its spec (`_core.specs`), as another process's can
            be compared with it (an object's token, which only its process knows, 0):
            what `changes` between two sources are computed from.
        resumed_after: torch: for a frame Dynamo compiled after a graph break, `"file:line"`
            of that break (the file's base name); else None.
    """

    number: int
    kind: TraceKind
    signature: Mapping[str, str]
    same_graph_as: int | None = None
    serial: int = 0
    changes: tuple[Any, ...] = ()
    phases: Mapping[str, float] | None = None
    specs: Mapping[Any, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    resumed_after: str | None = None

    def same_trace(self, other: Step) -> bool:
        """Whether `other` is the same trace: kind, signature, graph, and (torch) frame."""
        return (self.kind, dict(self.signature), self.same_graph_as, self.resumed_after) == \
            (other.kind, dict(other.signature), other.same_graph_as, other.resumed_after)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "number": self.number, "kind": self.kind.value, "signature": dict(self.signature),
            "same_graph_as": self.same_graph_as, "serial": self.serial,
            "changes": [str(change) for change in self.changes]}
        if self.phases is not None:
            result["phases"] = dict(self.phases)
        if self.resumed_after is not None:
            result["resumed_after"] = self.resumed_after
        return result


@dataclasses.dataclass(frozen=True)
class FunctionTraces:
    """Each source's traces of one function, in order; a source that never traced it has none."""

    function: Function
    steps: Mapping[str, tuple[Step, ...]]


@dataclasses.dataclass(frozen=True)
class Divergence:
    """A worker whose traces of a function differ from the others': where first, and how.

    Attributes:
        source: The worker's label.
        function: The function.
        number: The first place in the sequence where it differs.
        differences: How (the first is the main one): `SIGNATURE`, `KIND` and
            `GRAPH` for two traces at that place, else `EXTRA` or `MISSING`.
        step: The worker's trace there; None when `MISSING`.
        reference: The others' trace there; None when `EXTRA`.
        others: The labels of the workers whose sequence is the reference.
        changes: What differs from `reference` (for `EXTRA`, from `closest`) to `step`.
        closest: For `EXTRA`: the others' trace with the closest signature, or None
            if they never traced the function.
        traces: How many traces of the function the worker made, and the others.
    """

    source: str
    function: Function
    number: int
    differences: tuple[Difference, ...]
    step: Step | None
    reference: Step | None
    others: tuple[str, ...]
    changes: tuple[Change, ...] = ()
    closest: Step | None = None
    traces: tuple[int, int] = (0, 0)

    @property
    def difference(self) -> Difference:
        """The main difference."""
        return self.differences[0]


@dataclasses.dataclass(frozen=True)
class Stopped:
    """A worker whose file ends (without an end line) before the traces the others made.

    Its traces up to then are the others' first ones: it agrees as far as it got.
    """

    source: str
    function: Function
    traces: int
    expected: int
    others: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class NewTrace:
    """A trace a run made that its baseline did not (no trace of the same signature left to pair).

    Attributes:
        source: The run's label.
        function: The function.
        step: The trace.
        closest: The baseline's trace of the function with the closest signature, or
            None if the baseline never traced the function.
        changes: What differs from `closest` to `step`.
    """

    source: str
    function: Function
    step: Step
    closest: Step | None
    changes: tuple[Change, ...] = ()


@dataclasses.dataclass(frozen=True)
class MissingTrace:
    """A trace the baseline made that a run did not make."""

    source: str
    function: Function
    step: Step


@dataclasses.dataclass(frozen=True)
class Note:
    """Something about the sources worth knowing, with the labels it concerns and its details."""

    kind: NoteKind
    sources: tuple[str, ...] = ()
    details: tuple[Any, ...] = ()
