"""The sources of a comparison: trace files or `Explanation`s, read into `_core.comparison` values.

Each source becomes a `Source` (its label, whether its file was closed, its schema
version, stack and worker) and, per function, its sequence of traces as `Step`s.
Functions are matched across sources by qualified name and definition site (the
`def`'s file name and line, so that processes with packages at other paths match);
a function defined at another line in some sources (a run of edited code) is matched
by its qualified name when that is unambiguous, with a note. Reads with
`trace_file_reader`, so every schema version it reads is compared alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from traceguard._core.comparison import Function, FunctionTraces, Note, NoteKind, Source, Step
from traceguard._core.function_runs import FunctionRuns
from traceguard._core.functions import FunctionId
from traceguard._core.specs import MappingSpec, ObjectSpec, SequenceSpec, Site, Spec
from traceguard._diagnosis.explanation import Explanation
from traceguard._diagnosis.trace_file_reader import TraceFile, read_trace_file, unique_labels

# A label that names a worker of a job, as users write them: `worker-0`, `chief:0`, `rank1`.
WORKER_LABEL = re.compile(r"(chief|master|worker|process|rank|task|replica)[-_:]?\d+", re.IGNORECASE)
# Workers in the order a job numbers them: the chief first.
_TASK_ORDER = {"chief": 0, "master": 0}

SourceInput = Any  # A path (str or path-like), a `TraceFile`, or an `Explanation`.


class LoadedSource:
    """A source read: its `Source` value, its functions (`FunctionId` to `FunctionRuns`), and its
    header's worker."""

    def __init__(self, source: Source, functions: Mapping[FunctionId, FunctionRuns],
                 worker_order: tuple[int, int] | None, named_worker: bool) -> None:
        self.source = source
        self.functions = functions
        self.worker_order = worker_order  # (task rank, index) from the header's worker, or None.
        self.named_worker = named_worker  # Whether its label names a worker (`worker-0`).

    @property
    def label(self) -> str:
        return self.source.label


def load_sources(inputs: Sequence[SourceInput], labels: Sequence[str | None],
                 caller: str) -> list[LoadedSource]:
    """Reads each input (a trace file read with `read_trace_file`); `labels[i]` overrides the i-th label."""
    for number, item in enumerate(inputs):  # Every argument checked before any file is read.
        if not isinstance(item, (str, os.PathLike, TraceFile, Explanation)):
            raise TypeError(f"`{caller}` compares trace files (paths, str or path-like) or "
                            f"`traceguard.Explanation`s. Received: {type(item).__name__} {item!r} "
                            f"(source {number + 1})")
    read = [read_trace_file(os.fspath(item)) if isinstance(item, (str, os.PathLike)) else item
            for item in inputs]
    files = [item for item in read if isinstance(item, TraceFile)]
    file_labels = iter(unique_labels(files))
    made = [_label_of(item, next(file_labels)) if isinstance(item, TraceFile) else item.title
            for item in read]
    given = [label if label is not None else made_label for label, made_label in zip(labels, made)]
    unique = [label if given.count(label) == 1 else f"{label} ({number + 1})"
              for number, label in enumerate(given)]
    return [_loaded(item, label) for item, label in zip(read, unique)]


def _label_of(item: TraceFile | Explanation, label: str) -> str:
    """A file labelled `HOST:PID` by default (no label given, no worker) is named by its file instead."""
    if isinstance(item, TraceFile) and item.worker is None \
            and item.label == f"{item.header.get('host')}:{item.header.get('pid')}":
        return os.path.basename(item.path)
    return label


def _loaded(item: TraceFile | Explanation, label: str) -> LoadedSource:
    if isinstance(item, Explanation):
        return LoadedSource(Source(label), item.functions, None, WORKER_LABEL.fullmatch(label) is not None)
    worker = item.worker
    stack = item.header.get("stack")
    source = Source(label, item.path, item.complete, item.version, stack if isinstance(stack, str) else None,
                    worker.name if worker is not None else None, worker.count if worker is not None else None)
    order = None if worker is None else (_TASK_ORDER.get(worker.task_type, 1), worker.index)
    return LoadedSource(source, item.functions, order, WORKER_LABEL.fullmatch(label) is not None)


def in_worker_order(sources: list[LoadedSource]) -> list[LoadedSource]:
    """The sources in the job's order (chief, then workers by index) when every header names its worker."""
    if all(loaded.worker_order is not None for loaded in sources):
        return sorted(sources, key=lambda loaded: loaded.worker_order)  # type: ignore[arg-type, return-value]
    return list(sources)


def steps_of(runs: FunctionRuns) -> tuple[Step, ...]:
    """The function's traces in one source, numbered from 1; `same_graph_as` as a number too."""
    numbers = {event.serial: number for number, event in enumerate(runs.events, start=1)}
    # Compared as text: a spec's text is what two processes can agree on (an object's identity is
    # its own process's); their differences from the specs without that identity.
    return tuple(Step(number, event.kind, {name: str(spec) for name, spec in event.signature.items()},
                      numbers.get(event.same_graph_as),  # type: ignore[arg-type]
                      event.serial, tuple(event.changes), getattr(event, "phases", None) or None,
                      {name: portable_spec(spec) for name, spec in event.signature.items()},
                      site(getattr(event.verdict, "resumed_after", None)))
                 for number, event in enumerate(runs.events, start=1))


def portable_spec(spec: Spec) -> Spec:
    """`spec` as a spec of another process compares with it: each object's token, which tells
    objects apart within one process only, set to 0."""
    if isinstance(spec, ObjectSpec):
        return spec._replace(token=0)
    if isinstance(spec, SequenceSpec):
        return spec._replace(items=tuple(portable_spec(item) for item in spec.items))
    if isinstance(spec, MappingSpec):
        return spec._replace(items=tuple((key, portable_spec(item)) for key, item in spec.items))
    return spec


def site(definition: Site | None) -> str | None:
    """`"file.py:12"` of a `def` site in `/any/path/file.py`, line 12."""
    return None if definition is None else f"{os.path.basename(definition.path)}:{definition.line}"


def matched_functions(sources: Sequence[LoadedSource]) -> tuple[list[FunctionTraces], list[Note]]:
    """Each function traced by any source, with each source's traces of it, matched across sources."""
    by_name: dict[str, list[tuple[str, FunctionRuns]]] = {}
    for loaded in sources:
        for runs in loaded.functions.values():
            by_name.setdefault(runs.name, []).append((loaded.label, runs))
    functions: list[FunctionTraces] = []
    notes: list[Note] = []
    for qualname, found in by_name.items():
        sites = list(dict.fromkeys(site(runs.definition) for _, runs in found))
        per_source = [label for label, _ in found]
        if len(sites) > 1 and len(set(per_source)) == len(per_source):  # Moved, in some sources.
            notes.append(Note(NoteKind.DEFINITION_MOVED, tuple(per_source),
                              (qualname, *(site(runs.definition) for _, runs in found))))
            groups = [found]
        else:
            groups = [[(label, runs) for label, runs in found if site(runs.definition) == each]
                      for each in sites]
        for group in groups:
            first = group[0][1]
            function = Function(first.function, qualname, site(first.definition), first.keras_step)
            functions.append(FunctionTraces(function, {label: steps_of(runs) for label, runs in group}))
    return functions, notes


def source_notes(sources: Iterable[Source]) -> list[Note]:
    """What a reader should know of the sources: unclosed files, mixed schema versions and stacks,
    workers of the job without a file."""
    sources = list(sources)
    notes = [Note(NoteKind.INCOMPLETE, (source.label,)) for source in sources if not source.complete]
    for kind, field in ((NoteKind.SCHEMA_VERSIONS, "version"), (NoteKind.STACKS, "stack")):
        having = [source for source in sources if getattr(source, field) is not None]
        values = [getattr(source, field) for source in having]
        if len(set(values)) > 1:
            notes.append(Note(kind, tuple(source.label for source in having), tuple(values)))
    counts = [source.worker_count for source in sources if source.worker_count is not None]
    named = {source.worker for source in sources if source.worker is not None}
    if counts and max(counts) > len(named):
        notes.append(Note(NoteKind.MISSING_WORKERS, tuple(sorted(named)), (max(counts), len(named))))
    return notes
