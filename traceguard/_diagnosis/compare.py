"""`traceguard.compare()`: the traces of several processes, side by side, and where they differ.

Workers of one job must trace alike: every worker's sequence of traces of a function
(kind, signature, graph) is compared with the majority's, and the first place where
one differs is a `Divergence`. Runs one after another are compared with a baseline:
the traces a run made that the baseline did not (each with the baseline's closest
signature) and the ones the baseline made that it did not. The values are
`_core.comparison`'s; `_reports.compare` words them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from traceguard._core.comparison import (
    Difference,
    Divergence,
    FunctionTraces,
    MissingTrace,
    Mode,
    ModeReason,
    NewTrace,
    Note,
    NoteKind,
    Source,
    Step,
    Stopped,
)
from traceguard._core.signature import diff_signatures
from traceguard._diagnosis.compare_sources import (
    LoadedSource,
    in_worker_order,
    load_sources,
    matched_functions,
    source_notes,
)

UNNAMED_WORKERS = ("name no worker (a file written under tf.distribute's TF_CONFIG or jax.distributed names "
                   "its worker in its header; a label such as `worker-0` names one too).")


class ModeUndecided(ValueError):
    """The sources do not say whether they are workers of one job; `unnamed` names the ones that name
    no worker."""

    def __init__(self, message: str, unnamed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.unnamed = unnamed


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The traces of several processes compared: workers of one job, or runs against a baseline.

    `str()` of it is the text report; `to_html()` and `to_dict()` give the same as
    HTML and as JSON-serialisable values.

    Attributes:
        mode: `"workers"` (processes of one job, which must trace alike) or
            `"runs"` (each compared with `baseline`).
        mode_reason: How the mode was chosen: `"baseline"`, `"flag"`,
            `"worker_headers"` (the files name their workers) or
            `"worker_labels"` (their labels do).
        sources: Each process compared, in order (a job's chief first).
        baseline: The label of the baseline run, or None.
        functions: Each function traced, with each source's traces of it.
        divergences: For workers: each worker whose traces of a function differ
            from the others', at the first trace where they do.
        stopped: For workers: each worker whose file ends (without an end line)
            before the traces the others made, having agreed until then.
        new_traces: For runs: each trace a run made that the baseline did not.
        missing_traces: For runs: each trace the baseline made that a run did not.
        notes: What else a reader should know: files not closed, different
            schema versions or stacks, workers of the job without a file.
    """

    mode: Mode
    mode_reason: ModeReason
    sources: tuple[Source, ...]
    baseline: str | None
    functions: tuple[FunctionTraces, ...]
    divergences: tuple[Divergence, ...] = ()
    stopped: tuple[Stopped, ...] = ()
    new_traces: tuple[NewTrace, ...] = ()
    missing_traces: tuple[MissingTrace, ...] = ()
    notes: tuple[Note, ...] = ()

    @property
    def diverged(self) -> bool:
        """Whether any worker traced differently from the others."""
        return bool(self.divergences)

    def __str__(self) -> str:
        from traceguard._reports.compare import comparison_text

        return comparison_text(self)

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-serialisable values (docs/multi-worker.md describes them)."""
        from traceguard._reports.compare_json import comparison_dict

        return comparison_dict(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The comparison as a self-contained HTML page; also written to `path` if given."""
        from traceguard._reports.compare_html import comparison_html

        page = comparison_html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as file:
                file.write(page)
        return page

    def _repr_html_(self) -> str:
        from traceguard._reports.compare_html import comparison_html

        return comparison_html(self, fragment=True)


def compare(sources: Sequence[Any] | Mapping[str, Any], baseline: Any = None,
            workers: bool | None = None) -> Comparison:
    """Compares the traces of several processes: workers of one job, or runs against a baseline.

    Functions are matched across the sources by qualified name and definition
    site. As workers of one job (the files name their worker, written under
    `tf.distribute`'s `TF_CONFIG` or `jax.distributed`, or their labels do, as
    `worker-0`; or `workers=True`), every worker's sequence of traces of each
    function (kind, signature, graph) is compared with the majority's: a worker
    that differs is named with the first trace where it does and how (the
    signature change, by argument and aspect; a trace the others did not make;
    another graph). A worker whose file was not closed (killed) and whose traces
    are the others' first ones stopped short, and agrees as far as it got. As runs
    (`baseline=`), each source's traces that the baseline did not make are listed
    with the baseline's closest signature, and the baseline's that it did not make.

    Args:
        sources: Trace files (paths, str or path-like) or
            `traceguard.Explanation`s, in a sequence, or a mapping of the label
            to give each to it.
        baseline: A trace file or `traceguard.Explanation`: compare each of
            `sources` with it, as runs. Defaults to `None`.
        workers: `True` to compare the sources as workers of one job whatever
            their files say; `False` to compare them as runs, the first the
            baseline. Defaults to `None`: workers when every file names its
            worker (or every label does), else a `ValueError` asks which.

    Returns:
        A `traceguard.Comparison`: `str()` is the report, `.diverged` whether
        any worker traced differently.

    Raises:
        TypeError: If a source is not a path or an `Explanation`.
        ValueError: If fewer than two processes are given, `baseline` and
            `workers` both, or the sources do not say whether they are workers
            of one job; if a trace file cannot be read (the message names the
            file and line).
        OSError: If a trace file cannot be opened.

    Example:

    ```python
    comparison = traceguard.compare(["traces-worker-0.jsonl", "traces-worker-1.jsonl"])
    print(comparison)
    if comparison.diverged:
        raise SystemExit(1)
    ```
    """
    if isinstance(sources, Mapping):
        labels: list[str | None] = list(sources)
        items = list(sources.values())
    elif isinstance(sources, (str, os.PathLike)) or not isinstance(sources, Sequence):
        raise TypeError("`compare(sources=...)` expects a sequence (or a mapping of labels) of trace files "
                        f"or `traceguard.Explanation`s. Received: sources={sources!r}")
    else:
        labels, items = [None] * len(sources), list(sources)
    if workers not in (None, True, False):
        raise TypeError(f"`compare(workers=...)` expects True, False or None. Received: workers={workers!r}")
    if baseline is not None and workers:
        raise ValueError("`compare()` compares workers of one job (`workers=True`) or runs against a "
                         f"baseline (`baseline=`), not both. Received: workers=True, baseline={baseline!r}")
    if baseline is not None:
        loaded = load_sources([baseline, *items], [None, *labels], "compare()")
        if len(loaded) < 2:
            raise ValueError("`compare(baseline=...)` needs at least one run to compare with the baseline. "
                             "Received: sources=[]")
        return _compare_runs(loaded[0], loaded[1:])
    loaded = load_sources(items, labels, "compare()")
    if len(loaded) < 2:
        raise ValueError("`compare()` needs at least two trace files (or `Explanation`s), or a baseline. "
                         f"Received: {len(loaded)} source{'' if len(loaded) == 1 else 's'}")
    if workers is False:
        return _compare_runs(loaded[0], loaded[1:])
    return _compare_workers(in_worker_order(loaded), _worker_reason(loaded, workers))


def _worker_reason(loaded: list[LoadedSource], workers: bool | None) -> ModeReason:
    if workers:
        return ModeReason.FLAG
    if all(source.worker_order is not None for source in loaded):
        return ModeReason.WORKER_HEADERS
    if all(source.named_worker for source in loaded):
        return ModeReason.WORKER_LABELS
    unnamed = tuple(source.label for source in loaded
                    if source.worker_order is None and not source.named_worker)
    raise ModeUndecided(
        f"`compare()` cannot tell whether these are workers of one job or runs one after another: "
        f"{', '.join(unnamed)} {UNNAMED_WORKERS} Compare them as workers with `workers=True`, or as runs "
        "against a baseline with `baseline=`.", unnamed)


def _compare_workers(loaded: list[LoadedSource], reason: ModeReason) -> Comparison:
    functions, notes = matched_functions(loaded)
    order = [source.label for source in loaded]
    complete = {source.label: source.source.complete for source in loaded}
    divergences: list[Divergence] = []
    stopped: list[Stopped] = []
    for traces in functions:
        sequences = {label: traces.steps.get(label, ()) for label in order}
        reference, others, tied = _majority(sequences, order, complete)
        if tied:
            notes.append(Note(NoteKind.NO_MAJORITY, others, (traces.function.name,)))
        for label in order:
            sequence = sequences[label]
            if label in others:
                continue
            if not complete[label] and _identity(sequence) == _identity(reference[:len(sequence)]):
                stopped.append(Stopped(label, traces.function, len(sequence), len(reference), others))
            else:
                divergences.append(_divergence(label, traces, sequence, reference, others))
    sources = tuple(source.source for source in loaded)
    return Comparison(Mode.WORKERS, reason, sources, None, tuple(functions), tuple(divergences),
                      tuple(stopped), notes=tuple([*source_notes(sources), *notes]))


def _identity(sequence: tuple[Step, ...]) -> tuple[Any, ...]:
    return tuple((step.kind, tuple(sorted(step.signature.items())), step.same_graph_as) for step in sequence)


def _majority(sequences: Mapping[str, tuple[Step, ...]], order: list[str], complete: Mapping[str, bool]
              ) -> tuple[tuple[Step, ...], tuple[str, ...], bool]:
    """The reference sequence: the most common among closed files (else all), ties going to the
    group of the first worker; the labels that made it; whether it was a tie."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for label in order:
        groups.setdefault(_identity(sequences[label]), []).append(label)
    candidates = [labels for labels in groups.values() if any(complete[label] for label in labels)] \
        or list(groups.values())
    most = max(len(labels) for labels in candidates)
    best = [labels for labels in candidates if len(labels) == most]  # In the order of their first worker.
    others = best[0]
    return sequences[others[0]], tuple(others), len(best) > 1


def _divergence(label: str, traces: FunctionTraces, sequence: tuple[Step, ...], reference: tuple[Step, ...],
                others: tuple[str, ...]) -> Divergence:
    number = next((index for index, (mine, theirs) in enumerate(zip(sequence, reference))
                   if not mine.same_trace(theirs)), min(len(sequence), len(reference)))
    counts = (len(sequence), len(reference))
    if number < len(sequence) and number < len(reference):
        mine, theirs = sequence[number], reference[number]
        differences = tuple(difference for difference, differs in (
            (Difference.SIGNATURE, dict(mine.signature) != dict(theirs.signature)),
            (Difference.KIND, mine.kind != theirs.kind),
            (Difference.GRAPH, mine.same_graph_as != theirs.same_graph_as)) if differs)
        changes = tuple(diff_signatures(theirs.specs, mine.specs))
        return Divergence(label, traces.function, number + 1, differences, mine, theirs, others, changes,
                          traces=counts)
    if number < len(sequence):
        mine = sequence[number]
        closest, changes = _closest(reference, mine)
        return Divergence(label, traces.function, number + 1, (Difference.EXTRA,), mine, None, others,
                          changes, closest, counts)
    return Divergence(label, traces.function, number + 1, (Difference.MISSING,), None, reference[number],
                      others, traces=counts)


def _closest(candidates: Sequence[Step], step: Step) -> tuple[Step | None, tuple[Any, ...]]:
    """The candidate whose signature differs least from `step`'s, and how; of equals, one of the
    same kind, then the latest."""
    best: tuple[Step | None, tuple[Any, ...]] = (None, ())
    best_key: tuple[int, bool] | None = None
    for candidate in candidates:
        changes = tuple(diff_signatures(candidate.specs, step.specs))
        key = (len(changes), candidate.kind != step.kind)
        if best_key is None or key <= best_key:
            best, best_key = (candidate, changes), key
    return best


def _compare_runs(baseline: LoadedSource, runs: list[LoadedSource]) -> Comparison:
    loaded = [baseline, *runs]
    functions, notes = matched_functions(loaded)
    new: list[NewTrace] = []
    missing: list[MissingTrace] = []
    for run in runs:
        for traces in functions:
            before = traces.steps.get(baseline.label, ())
            unpaired = list(before)
            for step in traces.steps.get(run.label, ()):
                same = [earlier for earlier in unpaired if dict(earlier.signature) == dict(step.signature)]
                if same:  # Paired with the baseline's trace of that signature, of the same kind if any.
                    unpaired.remove(next((earlier for earlier in same if earlier.same_trace(step)), same[0]))
                else:
                    closest, changes = _closest(before, step)
                    new.append(NewTrace(run.label, traces.function, step, closest, changes))
            missing.extend(MissingTrace(run.label, traces.function, step) for step in unpaired)
    sources = tuple(source.source for source in loaded)
    return Comparison(Mode.RUNS, ModeReason.BASELINE, sources, baseline.label, tuple(functions),
                      new_traces=tuple(new), missing_traces=tuple(missing),
                      notes=tuple([*source_notes(sources), *notes]))
