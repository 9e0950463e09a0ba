"""Plain-text rendering of trace events: log summaries, budget messages and reports."""

from __future__ import annotations

import collections
import functools
import itertools
import os
import textwrap
from collections.abc import Mapping, Sequence

from traceguard._core.backends import Backend
from traceguard._core.events import TRACE_KINDS, TraceEvent
from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.functions import FunctionTrace
from traceguard._core.layer_runs import LayerRuns
from traceguard._core.specs import Site, signature_line
from traceguard._core.verdicts import Reason
from traceguard._reports import function_costs as costs
from traceguard._reports.fixes import backend_of, same_graph_changes, same_graph_text
from traceguard._reports.headline import headline
from traceguard._reports.torch_words import graph_break_lines

_WIDTH = 100


def _signature_text(event: TraceEvent) -> str:
    return ", ".join(f"{name}={spec}" for name, spec in event.signature.items()) or "-"


def format_counts(events: Sequence[TraceEvent]) -> str:
    counts = collections.Counter(event.kind.value for event in events)
    return ", ".join(f"{counts[kind]} {kind}" for kind in TRACE_KINDS if counts[kind]) or "no events"


def _add_labelled(lines: list[str], indent: str, label: str, text: str) -> None:
    """Appends `label: text` to `lines`, wrapped, the continuation lines under the text."""
    lines.extend(textwrap.wrap(text, _WIDTH, initial_indent=f"{indent}   {label}: ",
                               subsequent_indent=f"{indent}   {' ' * len(label)}  "))


def format_event(event: TraceEvent, indent: str = "", show_hint: bool = True,
                 same_as: str | None = None) -> str:
    """One event as a header line and its why / changed / fix lines.

    `same_as` names an event printed earlier with the same why and fix: they are
    not repeated (a report of a large model would print them once per layer).
    """
    where = f" in {event.function}" if event.function else ""
    lines = [f"{indent}#{event.index} {event.kind.value}{where}  ({_signature_text(event)})"]
    add = functools.partial(_add_labelled, lines, indent)
    if event.changes:
        add("changed", "; ".join(map(str, event.changes)))
    if event.created_variables:
        add("created", ", ".join(event.created_variables))
    if same_as is not None:
        add("why", f"as for {same_as}.")
    else:
        add("why", event.reason)
        if event.hint:
            add("fix", event.hint if show_hint else "as above.")
    if event.error:
        add("error", event.error)
    return "\n".join(lines)


def format_log(owner: str, events: Sequence[TraceEvent], dropped: int, eager_calls: int) -> str:
    """The text of `TraceLog.summary()`."""
    header = f"TraceLog of layer '{owner}': {format_counts(events)}"
    extras = []
    if eager_calls:
        extras.append(f"{eager_calls} eager call{'s' if eager_calls != 1 else ''}")
    if dropped:
        extras.append(f"{dropped} older event{'s' if dropped != 1 else ''} dropped")
    if extras:
        header += f" ({'; '.join(extras)})"
    return "\n".join([header, *(format_event(event, "  ") for event in events)])


def format_budget_excess(layer: str, budget: int | None, traces: int, event: TraceEvent) -> str:
    """The text of the retrace-budget warning and `RetraceError`."""
    changes = "; ".join(map(str, event.changes)) or "none of this layer's arguments"
    return (
        f"Layer '{layer}' traced {traces} times, over its budget of max_traces={budget}.\n"
        f"  Event #{event.index} ({event.kind.value} in {event.function}): {event.reason}\n"
        f"  Changed: {changes}\n"
        f"  Fix: {event.hint or 'see the reason above.'}\n"
        f"  All events: layer.trace_log.summary()"
    )


def format_layer_table(layers: Sequence[LayerRuns], merge: bool = False) -> str:
    """One row of counts by kind per `LayerRuns`; `-` for none.

    With `merge`, layers of one class with the same counts share a row (`dense ... dense_49
    (50 layers)`), so a large model's table stays short.
    """
    if not layers:
        return "(no Keras layer ran its `call` body)"
    kinds = [kind for kind in TRACE_KINDS if kind != "eager"] + ["eager"]
    header = ["layer", "class", *kinds]
    groups: dict[tuple, list[str]] = {}
    for runs in layers:
        counts = tuple(str(runs.counts()[kind] or "-") for kind in kinds)
        groups.setdefault((runs.class_name, counts) if merge else (id(runs),), []).append(runs.name)
    rows = []
    for names in groups.values():
        runs = next(runs for runs in layers if runs.name == names[0])
        name = names[0] if len(names) == 1 else (
            f"{names[0]}, {names[1]} (2 layers)" if len(names) == 2
            else f"{names[0]} ... {names[-1]} ({len(names)} layers)")
        rows.append([name, runs.class_name, *(str(runs.counts()[kind] or "-") for kind in kinds)])
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        text = [cell.ljust(width) if column < 2 else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(cells, widths))]
        return "  ".join(text).rstrip()

    return "\n".join(line(row) for row in [header, *rows])


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


_TRANSFORMATIONS = {"grad": "JAX autodiff (`jax.grad`, `jax.value_and_grad`, `jax.vjp`)",
                    "jvp": "`jax.jvp`", "vmap": "`jax.vmap`"}


def format_uncached(transformations: tuple[str, ...], setting: tuple[str, str] | None) -> str:
    """Said once per report: layers ran under JAX transformations that keep no cache, or (no
    transformations: torch) in a Keras step that nothing compiled."""
    if not transformations and setting is not None:
        step, option = setting
        return (f"Keras ran `{step}` eagerly (`{option}`; on torch `jit_compile=\"auto\"`, the default, "
                "is False): nothing is compiled, so nothing is recompiled, and each step runs the layers' "
                "Python again (`jit_compile=True` compiles the step with `torch.compile`). Those runs count "
                "as eager runs.")
    names = " inside ".join(_TRANSFORMATIONS.get(name, f"`jax.{name}`") for name in reversed(transformations))
    if setting is not None:
        step, option = setting
        return (f"Keras ran `{step}` without `jax.jit` (`{option}`), its layers under {names}: nothing is "
                "compiled, so nothing is cached or retraced, and each step runs the layers' Python again "
                f"(without `{option}`, Keras jits the step: one trace per input shape). "
                "Those runs count as eager runs.")
    return (f"Layers ran under {names} outside any `jax.jit`: JAX keeps no cache for it, so each call "
            "runs the Python again, which is no retrace, and nothing is compiled (`jax.jit` around the "
            "transformed function traces it once per key). Those runs count as eager runs.")


def format_explanation(title: str, layers: Sequence[LayerRuns], functions: Sequence[FunctionRuns] = (),
                       summary: bool = False,
                       uncached: dict[tuple[str, ...], tuple[str, str] | None] | None = None) -> str:
    """The text of `Explanation.summary()`: totals, the functions, the layers, then each one's runs.

    `functions` are `FunctionRuns`, `layers` `LayerRuns`. With `summary`, only the
    totals, the tables and the retraces: no run-by-run detail.
    """
    events = [event for runs in layers for event in runs.events]
    eager = sum(runs.counts()["eager"] for runs in layers)
    lines = [f"traceguard report for {title}: {headline(functions, len(layers), events, eager)}"]
    lines += [format_uncached(transformations, setting)
              for transformations, setting in (uncached or {}).items()]
    if functions:
        lines += ["", *_format_functions(functions, summary)]
    lines += ["", format_layer_table(layers, merge=summary)]
    retraces = [(runs, event) for runs in layers for event in runs.events if event.kind.value == "retrace"]
    if retraces:
        lines += ["", f"Layer retraces ({len(retraces)}):"]
        lines += [f"  {runs.name} #{event.index} in {event.function}: "
                  f"{'; '.join(map(str, event.changes)) or 'no argument of the layer changed'}"
                  for runs, event in retraces]
    if summary:
        return "\n".join(lines)
    shown: dict[tuple[str, str | None], str] = {}  # (why, fix) -> where it was printed first.
    for runs in layers:
        if not runs.events:
            continue
        kind = "TraceAwareLayer" if runs.trace_aware else "plain Keras layer"
        extras = f"; {runs.dropped} older events dropped" if runs.dropped else ""
        lines += ["", f"Layer '{runs.name}' ({runs.class_name}, {kind}): "
                  f"{format_counts(runs.events)}{extras}"]
        in_trace: dict[tuple[int | None, str], int] = {}  # (function trace, kind) -> the run's first there.
        for event in runs.events:
            key = (event.function_trace, event.kind.value)
            if event.function_trace is not None and key in in_trace and event.kind.value != "symbolic":
                lines.append(f"  #{event.index} {event.kind.value} in {event.function}  "
                             f"({_signature_text(event)})")
                _add_labelled(lines, "  ", "why", f"the same trace as #{in_trace[key]}: `{event.function}` "
                              "calls this layer again (another run of its body, not another trace).")
                continue
            in_trace.setdefault(key, event.index)
            first = shown.setdefault((event.reason, event.hint), f"'{runs.name}' #{event.index}")
            same = first != f"'{runs.name}' #{event.index}"
            lines.append(format_event(event, "  ", show_hint=not same, same_as=first if same else None))
    return "\n".join(lines)


def _format_functions(functions: Sequence[FunctionRuns], summary: bool) -> list[str]:
    """The functions' table, ranked by what their misses cost, then (unless `summary`) each one's
    traces and compilations."""
    order = costs.ranked(functions)
    rows = costs.table_rows(order, _short_site)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [f"Functions ({len(order)}; {costs.total_phrase(order)}):"]
    lines += ["  " + "  ".join(cell.ljust(width) if column < 2 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(row, widths))).rstrip()
              for row in rows]
    cache = costs.cache_phrase(order)
    if cache:
        lines.append(cache)
    lines += graph_break_lines(order)
    if summary:
        later = [(runs, runs.dropped + number, event) for runs in order
                 for number, event in enumerate(runs.events, 1)
                 if runs.dropped + number > 1 and event.kind.value != "trace"]
        anew = [runs for runs in order if made_anew(runs)]
        if anew:
            lines += ["", f"Made anew ({len(anew)}):"]
            lines += [f"  {runs.function}: {made_anew_text(runs)}" for runs in anew]
        if later:
            compiled = any(event.kind.value == "compile" for _, _, event in later)
            title = "Function retraces and compilations" if compiled else "Function retraces"
            lines += ["", f"{title} ({len(later)}):"]
            lines += [f"  {runs.function} #{number}{' (compile)' if event.kind.value == 'compile' else ''}: "
                      f"{'; '.join(map(str, event.changes)) or event.reason}"
                      for runs, number, event in later]
        return lines
    for runs in order:
        name = "" if runs.name == runs.function else f"{runs.name}, "
        lines += ["", f"Function `{runs.function}` ({name}defined at {_short_site(runs.definition)}): "
                  f"{costs.function_phrase(runs)}"]
        if made_anew(runs):
            _add_labelled(lines, "", "made anew", made_anew_text(runs))
        hints_shown: set[str | None] = set()
        wastes_shown: set[str] = set()  # What is safe to relax, said once per function, as the fix.
        numbers = {event.serial: runs.dropped + number for number, event in enumerate(runs.events, 1)}
        for event in runs.events:
            lines.append(format_function_event(event, numbers[event.serial], "  ",
                                               show_hint=event.hint not in hints_shown,
                                               numbers=numbers, wastes_shown=wastes_shown,
                                               events=runs.events))
            hints_shown.add(event.hint)
    return lines


def format_function_event(event: FunctionEvent, number: int, indent: str = "", show_hint: bool = True,
                          numbers: Mapping[int, int] | None = None,
                          wastes_shown: set[str] | None = None,
                          events: Sequence[FunctionEvent] | None = None) -> str:
    """One function trace (a `FunctionEvent`) as a header line and its why / changed / fix lines.

    `numbers`: the report's number of each trace of the function, by serial. `wastes_shown`: what
    the waste lines above said is safe to relax; one that says it again reads "as above", and
    gets added. `events`: the function's traces, where the trace whose graph a retrace built
    again is found, to say what differs from it.
    """
    signature = signature_line(event.signature) or "-"
    where = f", called at {_short_site(event.call_site)}" if event.call_site else ""
    lines = [f"{indent}#{number} {event.kind.value}  ({signature}){where}  {costs.event_cost_text(event)}"]
    add = functools.partial(_add_labelled, lines, indent)
    if event.changes:
        add("changed", "; ".join(map(str, event.changes)))
    if event.created_variables:
        shown = ", ".join(event.created_variables[:6])
        more = f", ... {len(event.created_variables)} in all" if len(event.created_variables) > 6 else ""
        add("created", shown + more)
    add("why", event.reason)
    if event.same_graph_as is not None:
        earlier = (numbers or {}).get(event.same_graph_as)
        same_as = f"#{earlier}" if earlier else "an earlier trace"
        changes = same_graph_changes(event, events)
        relax = same_graph_text(changes, "", backend_of(event))
        if wastes_shown is not None and relax in wastes_shown:
            add("waste", f"the same graph as {same_as}, as above.")
        else:
            add("waste", same_graph_text(changes, same_as, backend_of(event)))
        if wastes_shown is not None:
            wastes_shown.add(relax)
    if event.hint:
        add("fix", event.hint if show_hint else "as above.")
    return "\n".join(lines)


def _short_site(site: Site | None) -> str:
    """`file:line` with the file's directory dropped; `?` when unknown."""
    if site is None:
        return "?"
    return f"{os.path.basename(site.path)}:{site.line}"


def made_anew(runs: FunctionRuns) -> bool:
    """Whether a function's code traced as more than one function object (`FunctionRuns`)."""
    return runs.objects > 1 and any(event.verdict is not None
                                    and event.verdict.reason is Reason.NEW_FUNCTION_OBJECT
                                    for event in runs.events)


def made_anew_text(runs: FunctionRuns) -> str:
    """The code-level finding of a function made anew: N objects, each traced from empty."""
    return (f"{runs.objects} function objects of this code, each starting with no traces: the code "
            f"is made anew ({_MADE_ANEW_EXAMPLES[_backend_of(runs)]}), "
            "and each object's first trace is a `trace`, not a retrace of one object. Make it once "
            "and reuse it (see the fix below).")


def _backend_of(runs: FunctionRuns) -> Backend:
    backends = [event.verdict.backend for event in runs.events if event.verdict is not None]
    return Backend.JAX if backends and backends[0] == Backend.JAX else Backend.TENSORFLOW


# What makes a function anew, in each backend's words.
_MADE_ANEW_EXAMPLES = {
    "tensorflow": "a new model, a re-`compile()`, a `tf.function` created per call or per loop iteration",
    "jax": "a new model, a re-`compile()`, `jax.jit` applied per call, or a loop body defined inside "
           "the function that runs it",
}


def format_retracing_note(records: Sequence[FunctionTrace]) -> str | None:
    """traceguard's measured cause, appended to TensorFlow's retracing warning of one function."""
    retraces = [record for record in records if not record.is_first and record.changes]
    if not retraces:
        return None
    record = retraces[-1]
    site = f" at {_short_site(record.call_site)}" if record.call_site else ""
    if record.reason is Reason.NEW_FUNCTION_OBJECT:
        return (f"traceguard: `{record.name}` traced {len(records)} times as {record.objects} function "
                f"objects of the same code (the last{site}): the code is made anew, and each new "
                "object traces once. `traceguard.watch()`'s report has the fix.")
    return (f"traceguard: `{record.name}` traced {len(records)} times; the last retrace{site} changed: "
            f"{'; '.join(map(str, record.changes))}. `traceguard.watch()`'s report has the fix.")


def format_budget_failure(subject: str, n: int, count: int, events: list[TraceEvent],
                    where: str = "inside the block") -> str:
    """The text of an `assert_max_traces()` or `max_traces` marker failure."""
    lines = [f"{subject} traced {count} times {where}, more than the {n} allowed."]
    if events:
        lines.append("The traces of TraceAwareLayers counted, with their reasons:")
        for layer, layer_events in itertools.groupby(events, key=lambda event: event.layer):
            lines.append(f"  layer '{layer}':")
            lines.extend(format_event(event, "    ") for event in layer_events)
    else:
        lines.append("No TraceAwareLayer ran in these traces; wrap the code in "
                     "`traceguard.explain()` to see every layer's runs.")
    return "\n".join(lines)


def format_function_budget_failure(function: FunctionRuns, n: int, events: Sequence[FunctionEvent]) -> str:
    """The text of a `max_traces` marker failure for one function object: `function` is its
    `FunctionRuns`, `events` the object's counted traces (`FunctionEvent`s)."""
    numbers = {event.serial: number for number, event in enumerate(function.events, 1)}
    number = events[0].object_number
    which = f"function object {number} of its code, " if function.objects > 1 else ""
    lines = [f"`{function.function}` ({which}defined at {_short_site(function.definition)}) traced "
             f"{len(events)} times during the test, more than the {n} allowed.",
             "Its traces counted, with their reasons:"]
    lines += [format_function_event(event, numbers[event.serial], "  ", numbers=numbers,
                                    events=function.events) for event in events]
    return "\n".join(lines)


def format_late_retrace(layers: Sequence[str], tracer: str, function: str | None, where: str,
                        changes: Sequence[str], fix: str) -> str:
    """The text of `TraceMonitor`'s warning of a retrace after the first epoch or call."""
    subject = f"Layer {layers[0]}" if len(layers) == 1 else f"Layers {', '.join(layers)}"
    return (f"{subject} retraced {tracer} `{function}` during {where}: "
            f"{'; '.join(map(str, changes)) or 'none of its arguments changed'}. "
            f"Fix: {fix} All runs: TraceMonitor.report.")
