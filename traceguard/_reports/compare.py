"""The words of a comparison of trace files: workers that traced differently, runs' new traces.

Reads `_core.comparison` values (through a `Comparison`, typed here by what is read);
`_diagnosis.compare` makes them. `comparison_text` is what `str(comparison)` and
`python -m traceguard compare` print, each difference's likely consequence in a
collective job worded once, here (`compare_json` and `compare_html` use them).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Protocol

from traceguard._core.changes import Change
from traceguard._core.comparison import (
    Difference,
    Divergence,
    Function,
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

_SIGNATURE_WIDTH = 110
_WIDTH = 100


class ComparisonLike(Protocol):
    """A `traceguard.Comparison`, as reports read it."""

    @property
    def mode(self) -> Mode: ...
    @property
    def mode_reason(self) -> ModeReason: ...
    @property
    def sources(self) -> tuple[Source, ...]: ...
    @property
    def baseline(self) -> str | None: ...
    @property
    def functions(self) -> tuple[FunctionTraces, ...]: ...
    @property
    def divergences(self) -> tuple[Divergence, ...]: ...
    @property
    def stopped(self) -> tuple[Stopped, ...]: ...
    @property
    def new_traces(self) -> tuple[NewTrace, ...]: ...
    @property
    def missing_traces(self) -> tuple[MissingTrace, ...]: ...
    @property
    def notes(self) -> tuple[Note, ...]: ...


_MODE_REASONS = {
    ModeReason.WORKER_HEADERS: "their trace files name them",
    ModeReason.WORKER_LABELS: "their labels name them",
    ModeReason.FLAG: "compared as workers, as asked",
}

# What each difference likely does to a collective job (tf.distribute's MultiWorkerMirroredStrategy,
# jax.distributed with arrays across processes): measured in docs/multi-worker.md.
CONSEQUENCES = {
    Difference.EXTRA: (
        "{worker} traced (and compiled) a program the others did not: they wait for it in their next "
        "collective, and where that program's collectives differ from theirs (a tensor of the new shape "
        "reduced across workers, a collective only it runs) they never match: the job fails "
        "(\"Shape mismatch in the collective instance\" on tf.distribute) or hangs until the collective "
        "timeout."),
    Difference.MISSING: (
        "the others traced and ran a program {worker} never ran: their collectives in it wait for "
        "{worker}, a hang until the collective timeout, unless the job shut down first."),
    Difference.SIGNATURE: (
        "{worker} runs this function on other shapes or values than the others: a collective over a "
        "tensor of those shapes fails (\"Shape mismatch in the collective instance\") or hangs; where "
        "only its local batch differs, the job goes on with workers training on unequal batches."),
    Difference.KIND: (
        "{worker} traced this signature for another reason than the others (e.g. a variable retrace they "
        "did not make): its graph was built in another state, so its collectives may be created in "
        "another order than theirs: mismatched collectives, a hang."),
    Difference.GRAPH: (
        "the same signature built another graph on {worker}: its Python took another branch, so its "
        "collectives can differ from the others' in number or order: a hang or an error."),
}


def consequence(divergence: Divergence) -> str:
    """The likely consequence of a divergence in a collective job, in one or two sentences."""
    return CONSEQUENCES[divergence.difference].format(worker=divergence.source)


def function_name(function: Function) -> str:
    """`` `step` (train.py:12) ``."""
    return f"`{function.name}`" + (f" ({function.definition})" if function.definition else "")


def signature_text(signature: Mapping[str, str]) -> str:
    """The arguments on one line, cut to `_SIGNATURE_WIDTH`: the long ones (a Keras step's state on
    JAX, some thirty shapes of variables) after the others, so the cut falls inside them."""
    arguments = [f"{name}: {spec}" for name, spec in signature.items()]
    short = [text for text in arguments if len(text) <= _SIGNATURE_WIDTH // 2]
    text = ", ".join(short + [text for text in arguments if text not in short]) or "no arguments"
    return text if len(text) <= _SIGNATURE_WIDTH else text[:_SIGNATURE_WIDTH - 3] + "..."


def step_text(step: Step) -> str:
    """`#2 retrace x: float32[6,3]`, with its graph when it is an earlier one's."""
    text = f"#{step.number} {step.kind.value} {signature_text(step.signature)}"
    if step.same_graph_as is not None:
        text += f" (the same graph as #{step.same_graph_as})"
    if step.resumed_after is not None:  # torch: a frame compiled after a graph break.
        text += f" (the part after the graph break at {step.resumed_after})"
    return text


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _listed(labels: Sequence[str]) -> str:
    return ", ".join(labels)


def _changes_text(changes: Sequence[Change | str]) -> str:
    return "; ".join(map(str, changes)) if changes else "no argument differs"


# --- workers ----------------------------------------------------------------------------
def _workers_summary(comparison: ComparisonLike) -> list[str]:
    labels = [source.label for source in comparison.sources]
    functions = len(comparison.functions)
    divergent: dict[str, list[str]] = {}
    for divergence in comparison.divergences:
        divergent.setdefault(divergence.source, []).append(divergence.function.name)
    if not divergent:
        traces = {label: sum(len(traces.steps.get(label, ())) for traces in comparison.functions)
                  for label in labels}
        complete = [label for label in labels if label not in {s.source for s in comparison.stopped}]
        each = traces[complete[0]] if complete else 0
        lines = [f"All {len(labels)} workers made the same traces: {_plural(functions, 'function')}, "
                 f"{_plural(each, 'trace')} each."]
    elif len(divergent) == 1:
        (label, names), = divergent.items()
        others = [other for other in labels if other != label]
        lines = [f"{label} traced differently from the others ({_listed(others)}) in "
                 f"{len(names)} of {_plural(functions, 'function')}: {_listed([f'`{n}`' for n in names])}."]
    else:
        per_worker = [f"{label} ({_plural(len(names), 'function')})" for label, names in divergent.items()]
        lines = [f"{len(divergent)} of {len(labels)} workers traced differently from the others: "
                 f"{_listed(per_worker)}."]
    stopped = list(dict.fromkeys(stop.source for stop in comparison.stopped))
    if stopped:
        lines.append(f"{_listed(stopped)} stopped early (no end line: killed, or still running); up to "
                     "there, the same traces as the others.")
    return lines


def divergence_text(divergence: Divergence) -> str:
    """One divergence: where, what each side traced, what differs, the likely consequence."""
    worker, others = divergence.source, _listed(divergence.others)
    lines = [f"{worker}, {function_name(divergence.function)}, trace #{divergence.number}: "
             f"{_DIFFERENCE_TITLES[divergence.difference]}"]
    mine, theirs = divergence.step, divergence.reference
    made, expected = divergence.traces
    name = divergence.function.name
    lines.append(f"  {worker}: " + (step_text(mine) if mine is not None else
                                     f"no trace #{divergence.number} (it traced `{name}` {_times(made)}, "
                                     f"the others {_times(expected)})"))
    lines.append(f"  {others}: " + (step_text(theirs) if theirs is not None else
                                     f"no trace #{divergence.number} (traced `{name}` {_times(expected)})"))
    if divergence.difference is Difference.EXTRA:
        if divergence.closest is None:
            lines.append(f"  closest: none, {others} never traced `{divergence.function.name}`")
        else:
            lines.append(f"  closest: {others}'s {step_text(divergence.closest)}")
            lines.append(f"  differs: {_changes_text(divergence.changes)}")
    elif Difference.SIGNATURE in divergence.differences:
        lines.append(f"  differs: {_changes_text(divergence.changes)}")
    lines.append(textwrap.fill("In a collective job: " + consequence(divergence), _WIDTH,
                               initial_indent="  ", subsequent_indent="    "))
    return "\n".join(lines)


_DIFFERENCE_TITLES = {
    Difference.SIGNATURE: "another signature",
    Difference.KIND: "another kind of trace",
    Difference.GRAPH: "another graph",
    Difference.EXTRA: "a trace the others did not make",
    Difference.MISSING: "a trace the others made and it did not",
}


def _times(count: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(count, f"{count} times")


# --- runs -------------------------------------------------------------------------------
def _runs_summary(comparison: ComparisonLike) -> list[str]:
    baseline = comparison.baseline
    lines = []
    for source in comparison.sources[1:]:
        new = sum(trace.source == source.label for trace in comparison.new_traces)
        missing = sum(trace.source == source.label for trace in comparison.missing_traces)
        if not new and not missing:
            traces = sum(len(traces.steps.get(source.label, ())) for traces in comparison.functions)
            lines.append(f"{source.label} made the same traces as {baseline}: {_plural(traces, 'trace')}.")
        else:
            lines.append(f"{source.label} made {_plural(new, 'trace')} that {baseline} did not, and "
                         f"{baseline} made {_plural(missing, 'trace')} that {source.label} did not.")
    return lines


def new_trace_text(trace: NewTrace, baseline: str) -> str:
    lines = [f"  {trace.source}, {function_name(trace.function)} {step_text(trace.step)}"]
    if trace.closest is None:
        lines.append(f"    {baseline} never traced `{trace.function.name}`.")
    else:
        lines.append(f"    closest in {baseline}: {step_text(trace.closest)}")
        lines.append(f"    differs: {_changes_text(trace.changes)}")
    return "\n".join(lines)


def runs_named(comparison: ComparisonLike) -> str:
    """The runs compared with the baseline: the one's label, or "the runs"."""
    runs = [source.label for source in comparison.sources if source.label != comparison.baseline]
    return runs[0] if len(runs) == 1 else "the runs"


# --- notes ------------------------------------------------------------------------------
def note_text(note: Note) -> str:
    """One note, a sentence."""
    sources, details = note.sources, note.details
    if note.kind is NoteKind.INCOMPLETE:
        return (f"{sources[0]}'s file has no end line: its process was killed or is still running; its "
                "traces up to then are compared.")
    if note.kind is NoteKind.SCHEMA_VERSIONS:
        pairs = _listed([f"{label} {version}" for label, version in zip(sources, details)])
        return f"The files are of different schema versions ({pairs}): each is read as its version says."
    if note.kind is NoteKind.STACKS:
        pairs = "; ".join(f"{label}: {stack}" for label, stack in zip(sources, details))
        return f"The processes ran different stacks, itself a cause of different traces: {pairs}."
    if note.kind is NoteKind.MISSING_WORKERS:
        count, given = details
        return (f"The job trains with {count} workers (their files say) and {given} of them are compared "
                f"({_listed(sources)}): the others' traces are not seen.")
    if note.kind is NoteKind.NO_MAJORITY:
        return (f"`{details[0]}`: the workers split evenly, no majority; the traces of {_listed(sources)} "
                "(the first worker's) are taken as the others'.")
    name, *sites = details
    places = _listed([f"{site} in {label}" for label, site in zip(sources, sites)])
    return f"`{name}` is defined at different lines ({places}): matched by its qualified name."


# --- the report -------------------------------------------------------------------------
def _sequences_text(comparison: ComparisonLike) -> list[str]:
    width = max(len(source.label) for source in comparison.sources)
    lines = ["Traces per function (kind, and what changed from the closest earlier trace of the process):"]
    for traces in comparison.functions:
        lines.append(f"  {function_name(traces.function)}")
        for source in comparison.sources:
            steps = traces.steps.get(source.label, ())
            kinds = ", ".join(step.kind.value + (f" ({_changes_text(step.changes)})" if step.changes else "")
                              for step in steps) or "-"
            lines.append(f"    {source.label.ljust(width)}  {kinds}")
    return lines


def comparison_heading(comparison: ComparisonLike) -> list[str]:
    """The title line, then the summary: whether the workers agree, or what each run traced anew."""
    labels = [source.label for source in comparison.sources]
    if comparison.mode is Mode.WORKERS:
        return [f"traceguard compare: {len(labels)} workers of one job ({_listed(labels)}; "
                f"{_MODE_REASONS[comparison.mode_reason]})", *_workers_summary(comparison)]
    runs = [label for label in labels if label != comparison.baseline]
    return [f"traceguard compare: {_listed(runs)} against the baseline {comparison.baseline}",
            *_runs_summary(comparison)]


def missing_trace_text(trace: MissingTrace, baseline: str) -> str:
    return f"  {trace.source}, {function_name(trace.function)}: {baseline}'s {step_text(trace.step)}"


def comparison_text(comparison: ComparisonLike) -> str:
    """The text report of a comparison."""
    lines = comparison_heading(comparison)
    baseline = str(comparison.baseline)
    for divergence in comparison.divergences:
        lines += ["", divergence_text(divergence)]
    if comparison.new_traces:
        lines += ["", f"Traces {baseline} did not make:"]
        lines += [new_trace_text(trace, baseline) for trace in comparison.new_traces]
    if comparison.missing_traces:
        lines += ["", f"Traces {baseline} made and {runs_named(comparison)} did not:"]
        lines += [missing_trace_text(trace, baseline) for trace in comparison.missing_traces]
    if comparison.functions:
        lines += ["", *_sequences_text(comparison)]
    if comparison.notes:
        lines += ["", "Notes:", *(textwrap.fill(note_text(note), _WIDTH, initial_indent="  ",
                                                subsequent_indent="    ") for note in comparison.notes)]
    return "\n".join(lines)
