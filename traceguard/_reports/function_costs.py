"""The words and numbers of what functions' misses cost: the ranking, the phases, the totals.

Shared by the text report, the HTML report and the notebook display. A function's
`FunctionRuns` counts and times every trace it saw (`kind_counts`, `phase_seconds`,
`cost_seconds`), the events it dropped included; these turn them into a ranking by
total cost, a table with a column per phase measured, and phrases that put the phase
that took the most first ("3 traces; 9.1 s compiling, 0.4 s tracing").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The phases of a miss (`FunctionEvent.phases`), in the order they happen, and their words.
PHASE_WORDS = {"trace": "tracing", "lower": "lowering", "compile": "compiling", "first_call": "first call"}


def ranked(functions: Sequence[Any]) -> list[Any]:
    """The functions (`FunctionRuns`), the most expensive first: by what all their misses cost."""
    return sorted(functions, key=lambda runs: (runs.cost_seconds, runs.seconds), reverse=True)


def outermost(functions: Sequence[Any]) -> list[Any]:
    """The functions whose traces do not all run inside another function's trace (a Keras step
    inside `multi_step_on_iterator`): adding theirs up counts no second of a miss twice."""
    serials = {event.serial for runs in functions for event in runs.events}
    return [runs for runs in functions
            if not runs.events or not all(event.parent in serials for event in runs.events)]


def phases_shown(functions: Sequence[Any]) -> list[str]:
    """The phases measured for any of `functions`, in their order."""
    measured = {phase for runs in functions for phase, seconds in runs.phase_seconds.items() if seconds}
    return [phase for phase in PHASE_WORDS if phase in measured] or ["trace"]


def seconds_text(seconds: float) -> str:
    return f"{seconds:.2f} s"


def milliseconds_text(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def phases_phrase(phase_seconds: dict[str, float], unit: Any = seconds_text) -> str:
    """"9.1 s compiling, 0.4 s tracing": each phase measured, the one that took the most first."""
    order = sorted((phase for phase, seconds in phase_seconds.items() if seconds > 0),
                   key=lambda phase: -phase_seconds[phase])
    return ", ".join(f"{unit(phase_seconds[phase])} {PHASE_WORDS.get(phase, phase)}" for phase in order)


def counts_phrase(runs: Any) -> str:
    """"3,000 traces: 1 trace, 2,999 retrace (the last 1,000 kept)", and the compilations."""
    counts = runs.counts()
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in counts.items() if count and kind != "compile")
    text = f"{runs.traces:,} trace{'s' if runs.traces != 1 else ''}" + (f": {kinds}" if kinds else "")
    if runs.compilations:
        text += f", and {runs.compilations:,} compilation{'s' if runs.compilations != 1 else ''}"
    if runs.dropped:
        text += f" (the last {len(runs.events):,} kept)"
    return text


def function_phrase(runs: Any) -> str:
    """A function's counts and costs: "2 traces: 1 trace, 1 retrace; 9.1 s compiling, 0.4 s
    tracing; misses took 9.6 s"."""
    text = counts_phrase(runs)
    phases = phases_phrase(runs.phase_seconds)
    if phases:
        text += f"; {phases}"
    if runs.cost_seconds > sum(runs.phase_seconds.values()) + 5e-4:
        text += f"; misses took {seconds_text(runs.cost_seconds)}"
    return text


def event_cost_text(event: Any) -> str:
    """What one trace's miss cost: "took 26 ms, 4 ms of it tracing", or "took 390 ms: 344 ms
    compiling, 34 ms tracing"; "4 ms tracing" when only the trace was measured."""
    phases = dict(event.phases) or {"trace": event.duration_s}
    if event.miss_s is None:
        return phases_phrase(phases, milliseconds_text) or milliseconds_text(event.duration_s)
    if set(phases) == {"trace"}:
        return f"took {milliseconds_text(event.miss_s)}, {milliseconds_text(phases['trace'])} of it tracing"
    return f"took {milliseconds_text(event.miss_s)}: {phases_phrase(phases, milliseconds_text)}"


def total_phrase(functions: Sequence[Any]) -> str:
    """The header of the functions: what all misses took, by phase, and where most went."""
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
    order = ranked(functions)
    if order and order[0].cost_seconds > 0 and len(order) > 1:
        text += f"; the most in `{order[0].function}` ({seconds_text(order[0].cost_seconds)})"
    return text


def cache_phrase(functions: Sequence[Any]) -> str | None:
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


def table_rows(functions: Sequence[Any], site: Any) -> list[list[str]]:
    """The functions' table, ranked: a header row, then a row per function; `site(definition)`
    words where it is defined. A column per phase measured; `compiles` when any compiled."""
    phases = phases_shown(functions)
    compiles = any(runs.compilations for runs in functions)
    header = ["function", "defined at", "traces", "retraces", *(["compiles"] if compiles else []),
              "objects", *(PHASE_WORDS[phase] for phase in phases), "total"]
    rows = [header]
    for runs in ranked(functions):
        retraces = runs.traces - runs.kind_counts.get("trace", 0) - runs.kind_counts.get("save", 0)
        rows.append([runs.function, site(runs.definition), f"{runs.traces:,}",
                     f"{retraces:,}" if retraces > 0 else "-",
                     *([f"{runs.compilations:,}" if runs.compilations else "-"] if compiles else []),
                     str(runs.objects),
                     *(seconds_text(runs.phase_seconds[phase]) if runs.phase_seconds.get(phase) else "-"
                       for phase in phases),
                     seconds_text(runs.cost_seconds)])
    return rows
