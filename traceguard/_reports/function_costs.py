"""The words and numbers of what functions' misses cost: the ranking, the phases, the totals.

Shared by the text report, the HTML report and the notebook display. A function's
`FunctionRuns` counts and times every trace it saw (`kind_counts`, `phase_seconds`,
`cost_seconds`, `avoidable_seconds`), the events it dropped included; these turn them
into a ranking by what a fix saves, a table with a column per phase measured, and
phrases that put the phase that took the most first ("3 traces; 9.1 s compiling, 0.4 s
tracing"). Each second counts once: a function traced inside another (a Keras step
inside `multi_step_on_iterator`) is in that one's total, and the header adds up the
functions run on their own; the first traces every program pays are said apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.specs import Site

# The phases of a miss (`FunctionEvent.phases`), in the order they happen, and their words.
PHASE_WORDS = {"trace": "tracing", "lower": "lowering", "compile": "compiling", "first_call": "first call"}


def ranked(functions: Sequence[FunctionRuns]) -> list[FunctionRuns]:
    """The functions (`FunctionRuns`), the one whose fixes save the most first: by what their
    avoidable misses cost (retraces and compilations a fix removes), then by what all cost. A
    function whose only miss is the first trace every program pays ranks below any with a fix."""
    return sorted(functions, key=lambda runs: (round(runs.avoidable_seconds, 6), runs.cost_seconds,
                                               runs.seconds), reverse=True)


def outermost(functions: Sequence[FunctionRuns]) -> list[FunctionRuns]:
    """The functions whose traces do not all run inside another function's trace (a Keras step
    inside `multi_step_on_iterator`): adding theirs up counts no second of a miss twice."""
    owners = _owners(functions)
    return [runs for runs in functions if not enclosers(runs, functions, owners)]


def _owners(functions: Sequence[FunctionRuns]) -> dict[int | None, FunctionRuns]:
    """Each kept event's serial -> the `FunctionRuns` it belongs to."""
    return {event.serial: runs for runs in functions for event in runs.events}


def enclosers(runs: FunctionRuns, functions: Sequence[FunctionRuns],
              owners: dict[int | None, FunctionRuns] | None = None) -> list[str]:
    """The names of the functions every trace of `runs` ran inside (the first trace of a Keras
    step runs inside `multi_step_on_iterator`'s); [] when any ran on its own. Those functions'
    costs include the ones of `runs`. `owners`: `_owners(functions)`, made once for many calls."""
    if not runs.events:
        return []
    owners = _owners(functions) if owners is None else owners
    found = [owners.get(event.parent) for event in runs.events]
    if any(owner is None or owner is runs for owner in found):
        return []
    return list(dict.fromkeys(owner.function for owner in found if owner is not None))


def _avoidable_total(functions: Sequence[FunctionRuns]) -> float:
    """The avoidable seconds of all `functions`, each once: an avoidable miss made inside another
    avoidable one (a Keras step's retrace inside its loop function's) is in that one's cost."""
    by_serial: dict[int | None, FunctionEvent] = {event.serial: event for runs in functions
                                                  for event in runs.events}
    total = sum(runs.avoidable_seconds for runs in functions)
    for event in by_serial.values():
        if not event.avoidable:
            continue
        parent = by_serial.get(event.parent)
        while parent is not None and not parent.avoidable:
            parent = by_serial.get(parent.parent)
        if parent is not None:
            total -= event.cost_s
    return max(total, 0.0)


def phases_shown(functions: Sequence[FunctionRuns]) -> list[str]:
    """The phases measured for any of `functions`, in their order."""
    measured = {phase for runs in functions for phase, seconds in runs.phase_seconds.items() if seconds}
    return [phase for phase in PHASE_WORDS if phase in measured] or ["trace"]


def seconds_text(seconds: float) -> str:
    return f"{seconds:.2f} s"


def milliseconds_text(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def phases_phrase(phase_seconds: Mapping[str, float], unit: Callable[[float], str] = seconds_text) -> str:
    """"9.1 s compiling, 0.4 s tracing": each phase measured, the one that took the most first."""
    order = sorted((phase for phase, seconds in phase_seconds.items() if seconds > 0),
                   key=lambda phase: -phase_seconds[phase])
    return ", ".join(f"{unit(phase_seconds[phase])} {PHASE_WORDS.get(phase, phase)}" for phase in order)


def counts_phrase(runs: FunctionRuns) -> str:
    """"3,000 traces: 1 trace, 2,999 retrace (the last 1,000 kept)", and the compilations."""
    counts = runs.counts()
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in counts.items() if count and kind != "compile")
    text = f"{runs.traces:,} trace{'s' if runs.traces != 1 else ''}" + (f": {kinds}" if kinds else "")
    if runs.compilations:
        text += f", and {runs.compilations:,} compilation{'s' if runs.compilations != 1 else ''}"
    if runs.dropped:
        text += f" (the last {len(runs.events):,} kept)"
    return text


def function_phrase(runs: FunctionRuns) -> str:
    """A function's counts and costs: "2 traces: 1 trace, 1 retrace; 9.1 s compiling, 0.4 s
    tracing; misses took 9.6 s, 0.8 s of it avoidable"."""
    text = counts_phrase(runs)
    phases = phases_phrase(runs.phase_seconds)
    if phases:
        text += f"; {phases}"
    if runs.cost_seconds > sum(runs.phase_seconds.values()) + 5e-4 or runs.avoidable_seconds:
        text += f"; misses took {seconds_text(runs.cost_seconds)}"
        if runs.avoidable_seconds:
            text += f", {seconds_text(runs.avoidable_seconds)} of it avoidable"
    return text


def event_cost_text(event: FunctionEvent) -> str:
    """What one trace's miss cost: "took 26 ms, 4 ms of it tracing", or "took 390 ms: 344 ms
    compiling, 34 ms tracing"; "4 ms tracing" when only the trace was measured."""
    phases = dict(event.phases) or {"trace": event.duration_s}
    if event.miss_s is None:
        return phases_phrase(phases, milliseconds_text) or milliseconds_text(event.duration_s)
    if set(phases) == {"trace"}:
        return f"took {milliseconds_text(event.miss_s)}, {milliseconds_text(phases['trace'])} of it tracing"
    return f"took {milliseconds_text(event.miss_s)}: {phases_phrase(phases, milliseconds_text)}"


def total_phrase(functions: Sequence[FunctionRuns]) -> str:
    """The header of the functions: what all misses took (the sum of the rows of the functions
    not run inside another), by phase; what a fix removes and where most of it is; and the first
    traces every program pays, apart: "misses took 7.40 s: 6.97 s tracing, 0.42 s lowering;
    avoidable 1.55 s, the most in `one_step_on_data` (1.55 s); first traces: 5.85 s, expected"."""
    top = outermost(functions)
    phase_seconds: dict[str, float] = {}
    for runs in top:
        for phase, seconds in runs.phase_seconds.items():
            phase_seconds[phase] = phase_seconds.get(phase, 0.0) + seconds
    total = sum(runs.cost_seconds for runs in top)
    text = f"misses took {seconds_text(total)}"
    phases = phases_phrase(phase_seconds)
    if phases:
        text += f": {phases}"
    avoidable = min(_avoidable_total(functions), total)
    order = ranked(functions)
    if avoidable > 0:
        text += f"; avoidable {seconds_text(avoidable)}"
        if len(order) > 1:
            text += f", the most in `{order[0].function}` ({seconds_text(order[0].avoidable_seconds)})"
    expected = total - avoidable
    if expected > 0:
        others = any(event.kind.value != "trace" and not event.avoidable
                     for runs in functions for event in runs.events)
        text += f"; {'first traces and one-time costs' if others else 'first traces'}: " \
                f"{seconds_text(expected)}, expected"
    return text


def cache_phrase(functions: Sequence[FunctionRuns]) -> str | None:
    """What JAX's persistent compilation cache did, over every compilation that used it: how
    many it served, what that saved, and how many a warm start still paid; None without one."""
    hits = sum(runs.cache_counts.get("hit", 0) for runs in functions)
    misses = sum(runs.cache_counts.get("miss", 0) for runs in functions)
    if not hits and not misses:
        return None
    saved = sum(runs.cache_saved_seconds for runs in functions)
    verb = "saved" if saved >= 0 else "cost"
    return (f"Persistent compilation cache: {hits:,} of {hits + misses:,} compilations read from it "
            f"({verb} {seconds_text(abs(saved))}); {misses:,} still compiled and written.")


def table_rows(functions: Sequence[FunctionRuns], site: Callable[[Site | None], str]) -> list[list[str]]:
    """The functions' table, ranked: a header row, then a row per function; `site(definition)`
    words where it is defined. A column per phase measured; `compiles` when any compiled;
    `avoidable` when any miss is. A function run only inside another is named with it ("in
    `multi_step_on_iterator`"): its total is in that one's, and the header's total adds up the others."""
    phases = phases_shown(functions)
    compiles = any(runs.compilations for runs in functions)
    avoidable = any(runs.avoidable_seconds for runs in functions)
    header = ["function", "defined at", "traces", "retraces", *(["compiles"] if compiles else []),
              "objects", *(PHASE_WORDS[phase] for phase in phases), *(["avoidable"] if avoidable else []),
              "total"]
    rows = [header]
    owners = _owners(functions)
    for runs in ranked(functions):
        retraces = runs.traces - runs.kind_counts.get("trace", 0) - runs.kind_counts.get("save", 0)
        inside = enclosers(runs, functions, owners)
        name = runs.function + (f" (in {', '.join(inside)})" if inside else "")
        rows.append([name, site(runs.definition), f"{runs.traces:,}",
                     f"{retraces:,}" if retraces > 0 else "-",
                     *([f"{runs.compilations:,}" if runs.compilations else "-"] if compiles else []),
                     str(runs.objects),
                     *(seconds_text(runs.phase_seconds[phase]) if runs.phase_seconds.get(phase) else "-"
                       for phase in phases),
                     *([seconds_text(runs.avoidable_seconds) if runs.avoidable_seconds else "-"]
                       if avoidable else []),
                     seconds_text(runs.cost_seconds)])
    return rows
