"""The default text report: the problems first, one short block per cause, then the tables.

A problem is a set of traces a fix removes: a function's retraces (or compilations)
with one cause, or layer runs that retraced inside a function trace that was not
itself a retrace. Each is said once, with its cost, call site and one fix; the layer
runs of a function trace are folded under it (one line, not one block per layer).
The first traces every program pays are counted apart, as expected. `--full`
(`Explanation.summary(full=True)`) prints every trace and layer run instead.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from traceguard._core.events import TraceEvent
from traceguard._core.fixes import FixCheck
from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.kinds import MISS_KINDS, RETRACE_KINDS
from traceguard._core.layer_runs import LayerRuns
from traceguard._core.specs import Site
from traceguard._reports import function_costs as costs
from traceguard._reports.headline import headline
from traceguard._reports.text import format_layer_table, format_uncached
from traceguard._reports.torch_words import graph_break_lines

_WIDTH = 100
_NAMES_SHOWN = 4  # Layer names listed in a folded line before "... N in all".


@dataclasses.dataclass
class Problem:
    """One cause of avoidable traces: its events (`FunctionEvent`s or `TraceEvent`s), and where."""

    subject: str  # "`f`" or "layer 'dense'".
    events: list[FunctionEvent | TraceEvent]
    numbers: list[int]  # Each event's number in its function's or layer's report.
    # The layer runs folded into it, each with its layer.
    layer_runs: list[tuple[LayerRuns, TraceEvent]] = dataclasses.field(default_factory=list)
    call_site: Site | None = None
    function: str | None = None
    created: tuple[str, ...] = ()  # For a variable retrace: what the trace before it created.

    @property
    def cost(self) -> float:
        return sum(getattr(event, "cost_s", 0.0) for event in self.events)


def _short_site(site: Site | None) -> str:
    return "?" if site is None else f"{os.path.basename(site.path)}:{site.line}"


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _function_problems(functions: Sequence[FunctionRuns], layers: Sequence[LayerRuns]) -> list[Problem]:
    # Function trace serial -> the layer runs made in it.
    runs_in: dict[int, list[tuple[LayerRuns, TraceEvent]]] = {}
    for layer in layers:
        for run in layer.events:
            if run.function_trace is not None:
                runs_in.setdefault(run.function_trace, []).append((layer, run))
    problems: dict[tuple, Problem] = {}
    for runs in functions:
        for number, event in enumerate(runs.events, runs.dropped + 1):
            # A miss, or the first trace of a function object made anew from code that traced
            # before (its cache was empty, but creating the object once removes the trace).
            if event.kind not in MISS_KINDS and not getattr(event, "avoidable", False):
                continue
            verdict = event.verdict
            cause = (verdict.reason, verdict.hint) if verdict is not None else (event.reason, event.hint)
            key = (runs.name, runs.definition, event.kind, cause)
            problem = problems.setdefault(key, Problem(f"`{runs.function}`", [], [],
                                                       call_site=event.call_site, function=runs.function))
            problem.events.append(event)
            problem.numbers.append(number)
            problem.layer_runs += runs_in.get(event.serial, [])
    return list(problems.values())


def _layer_problems(layers: Sequence[LayerRuns], functions: Sequence[FunctionRuns]) -> list[Problem]:
    """Layer retraces no function retrace accounts for: a function trace that was a first
    trace (a layer called with new shapes inside one step), or no function recorded."""
    missed = {event.serial for runs in functions for event in runs.events if event.kind in MISS_KINDS}
    problems: dict[tuple, Problem] = {}
    for layer in layers:
        for event in layer.events:
            if event.kind not in RETRACE_KINDS or event.function_trace in missed:
                continue
            key = (event.function, event.kind, event.reason, event.hint)
            problem = problems.setdefault(key, Problem("", [], [], function=event.function))
            problem.events.append(event)
            problem.numbers.append(event.index)
            problem.layer_runs.append((layer, event))
    for problem in problems.values():
        names = _unique(layer.name for layer, _ in problem.layer_runs)
        where = f" in `{problem.function}`" if problem.function else ""
        problem.subject = (f"layer '{names[0]}'{where}" if len(names) == 1
                           else f"{len(names)} layers{where}")
    return list(problems.values())


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _wrapped(lines: list[str], label: str, text: str, indent: str = "   ") -> None:
    lines.extend(textwrap.wrap(text, _WIDTH, initial_indent=f"{indent}{label}: ",
                               subsequent_indent=f"{indent}{' ' * (len(label) + 2)}",
                               break_on_hyphens=False))


def _folded_layers(layer_runs: Sequence[tuple[LayerRuns, TraceEvent]], traces: int) -> str:
    """"18 layers ran 36 times in it (generator, discriminator, ...): `--full` lists each run"."""
    names = _unique(layer.name for layer, _ in layer_runs)
    more = f", ... {len(names)} in all" if len(names) > _NAMES_SHOWN else ""
    return (f"{_plural(len(names), 'layer')} ran {_plural(len(layer_runs), 'time')} in "
            f"{'it' if traces == 1 else 'them'} ({', '.join(names[:_NAMES_SHOWN])}{more}): "
            "`--full` lists each run with its reason")


def _problem_lines(rank: int, problem: Problem, checks: Mapping[str, FixCheck]) -> list[str]:
    event = problem.events[0]
    count = len(problem.events)
    kind = event.kind.value
    noun = {"variable_retrace": "variable retrace", "compile": "compilation"}.get(kind, kind)
    numbers = ", ".join(f"#{number}" for number in problem.numbers[:6]) + (", ..." if count > 6 else "")
    cost = f", {costs.seconds_text(problem.cost)}" if hasattr(event, "cost_s") else ""
    site = f", called at {_short_site(problem.call_site)}" if problem.call_site else ""
    counted = _plural(count, noun)
    if kind == "trace":  # First traces of objects made anew (`_function_problems`).
        counted += " of a new function object" if count == 1 else " of new function objects"
    lines = [f"{rank}. {problem.subject}: {counted} ({numbers}){cost}{site}"]
    if event.changes:
        changes = "; ".join(map(str, event.changes))
        _wrapped(lines, "changed", changes + (f" (at {numbers.split(',')[0]}; {count - 1} more like it)"
                                               if count > 1 else ""))
    created = problem.created if kind == "variable_retrace" else getattr(event, "created_variables", ())
    if created:
        shown = ", ".join(created[:3]) + (f", ... {len(created)} in all" if len(created) > 3 else "")
        _wrapped(lines, "created", shown)
    _wrapped(lines, "why", event.reason)
    if event.hint:
        _wrapped(lines, "fix", event.hint)
    check = checks.get(problem.function or "")
    if check is not None:
        if check.verified:
            _wrapped(lines, "proved", f"replaying the {_plural(check.replayed, 'recorded signature')} "
                     f"made {check.before} traces as written, {check.after} with the fix-it below")
        else:
            _wrapped(lines, "not proved",
                     check.problem or f"the fix-it below still made {check.after} traces")
    if problem.layer_runs and problem.subject.startswith("`"):
        _wrapped(lines, "layers", _folded_layers(problem.layer_runs, count))
    return lines


def format_problems(title: str, layers: Sequence[LayerRuns], functions: Sequence[FunctionRuns],
                    checks: Sequence[FixCheck] = (),
                    uncached: Mapping[tuple[str, ...], tuple[str, str] | None] | None = None) -> str:
    """The default report: a headline, the problems ranked by cost, the expected traces, the tables.

    `functions` are `FunctionRuns`, `layers` `LayerRuns`, `checks` the `FixCheck`s of
    `--verify-fixes` (each problem of a checked function says whether its fix was proved).
    """
    problems = _function_problems(functions, layers)
    for problem in problems:  # A variable retrace's cause is what the trace before it created.
        if problem.events[0].kind.value == "variable_retrace":
            owner = next(runs for runs in functions if f"`{runs.function}`" == problem.subject)
            earlier = [event for event in owner.events if event.created_variables]
            problem.created = earlier[0].created_variables if earlier else ()
    problems.sort(key=lambda problem: -problem.cost)
    problems += _layer_problems(layers, functions)
    checked = {check.fix.function: check for check in checks}
    events = [event for runs in layers for event in runs.events]
    eager = sum(runs.counts()["eager"] for runs in layers)
    lines = [f"traceguard report for {title}: {headline(functions, len(layers), events, eager)}"]
    lines += [format_uncached(transformations, setting)
              for transformations, setting in (uncached or {}).items()]
    if problems:
        lines += ["", f"Problems ({len(problems)}), the most costly first:"]
        for rank, problem in enumerate(problems, 1):
            lines += _problem_lines(rank, problem, checked)
    else:
        lines += ["", "No problems: nothing traced more than once."]
    lines += _expected_lines(layers)
    if functions:
        rows = costs.table_rows(costs.ranked(functions), _short_site)
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        lines += ["", f"Functions ({len(functions)}; {costs.total_phrase(functions)}):"]
        lines += ["  " + "  ".join(cell.ljust(width) if column < 2 else cell.rjust(width)
                                   for column, (cell, width) in enumerate(zip(row, widths))).rstrip()
                  for row in rows]
        lines += graph_break_lines(costs.ranked(functions))
    if layers:
        lines += ["", f"Layers ({len(layers)}; runs by kind, one row per class with the same counts):",
                  *("  " + line for line in format_layer_table(layers, merge=True).splitlines())]
    else:
        lines += ["", format_layer_table(layers)]
    lines += ["", "Every trace and layer run, with its reason: `--full` (`report.summary(full=True)`)."]
    return "\n".join(lines)


def _expected_lines(layers: Sequence[LayerRuns]) -> list[str]:
    """One line for the layers' symbolic passes (the functions' first traces, every program's cost,
    are in the functions' header)."""
    symbolic = sum(runs.counts()["symbolic"] for runs in layers)
    if not symbolic:
        return []
    return ["", f"Expected, paid once: {_plural(symbolic, 'symbolic layer run')} (Keras building the model)."]


def explanation_repr(title: str, functions: Sequence[FunctionRuns], layers: Sequence[LayerRuns]) -> str:
    """`repr()` of an `Explanation`: its functions' traces as well as its layers' events."""
    traces = sum(runs.traces for runs in functions)
    events = sum(len(runs.events) for runs in layers)
    return (f"<Explanation {title!r}: {_plural(len(functions), 'function')} traced "
            f"{_plural(traces, 'time')}; {_plural(events, 'layer event')} in "
            f"{_plural(len(layers), 'layer')}>")


__all__ = ["Problem", "explanation_repr", "format_problems"]
