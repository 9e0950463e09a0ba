"""The oracle's checks: traceguard's record held against the backend's own, per function.

`observe()` runs a block under `traceguard.watch(trace_file=...)` and `BackendRecord` at once,
then `check()` compares:

- `count`: for every function the backend traced that traceguard's reports cover (defined
  outside installed packages, or a Keras step), the traces recorded (every event but a
  `compile`, dropped ones included) equal the backend's count, summed over the function's
  objects; and a recorded function the backend never traced is a disagreement too.
- `objects`: the recorded traces per function object (`object_number`; on torch, per frame: a
  frame Dynamo compiled after a graph break is recorded as its function's, with the break's
  line, and is a code object of its own to torch) equal the backend's per-object counts, as
  multisets (which object is which is not compared: traceguard numbers objects in the order
  they first traced, the backend in the order they were made).
- `phantom`: no retrace without a backend miss of the same object: the events of kind
  `retrace`/`variable_retrace` of a function are at most the backend's traces after each
  object's first, and the first event of each recorded object is not a retrace.
- `jax_explain` (JAX): every difference JAX's explanation names for a `jax.jit` miss appears
  in the record's changes (`jax_explain.parity_gaps`).
- `file`: the report read back from the trace file equals the live report: the same
  functions and layers, the same events in order, with the same kinds, object numbers and
  changes.

The checker's own limits, each stated about the backend and applied by rule (never by
program or function name) are in `CHECKER_LIMITS`; docs/guarantees.md lists them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/: jax_explain

import jax_explain  # noqa: E402
from backend_record import BackendRecord  # noqa: E402

from traceguard._core.keras_names import is_keras_step_function  # noqa: E402

RETRACE_KINDS = ("retrace", "variable_retrace")
# The name torch gives a frame it compiles after a graph break, before `<function>_at_<line>`
# (torch/_dynamo/resume_execution.py, `TORCH_DYNAMO_RESUME_IN_PREFIX`).
RESUME_PREFIX = "torch_dynamo_resume_in"
# The checker's limits: what it cannot compare, as rules about the backend.
CHECKER_LIMITS = {
    "raised": "TensorFlow keeps no concrete function for a trace that raised, so "
              "`experimental_get_tracing_count()` does not count it: a recorded trace whose "
              "record says it raised is not compared.",
    "tf.data": "A `tf.data` function (`Dataset.map`) is not a `tf.function` object and has no "
               "tracing count: its traces are not compared.",
}


@dataclasses.dataclass
class Disagreement:
    """One place where traceguard's record and the backend's disagree."""

    check: str  # count, objects, phantom, jax_explain, file
    function: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.function}: {self.detail}"


def summary(functions: dict[str, Any], layers: dict[str, Any]) -> dict[str, Any]:
    """A report's record as plain data: per function and per layer, each event's kind and changes."""
    return {
        "functions": {key: {
            "name": runs.function, "definition": None if runs.definition is None else list(runs.definition),
            "dropped": runs.dropped, "kind_counts": dict(runs.kind_counts),
            "events": [[event.serial, event.kind.value, event.object_number,
                        [str(change) for change in event.changes], _resumed_line(event)]
                       for event in runs.events],
        } for key, runs in functions.items()},
        "layers": {name: {
            "dropped": runs.dropped, "eager_calls": runs.eager_calls,
            "events": [[event.index, event.kind.value, event.function_trace,
                        [str(change) for change in event.changes]] for event in runs.events],
        } for name, runs in layers.items()},
    }


def _frame(event: list) -> int | None:
    """A summary event's frame: the line of the graph break it continues after (torch), else None."""
    return event[4] if len(event) > 4 else None


def _resumed_line(event: Any) -> int | None:
    """torch: the line of the graph break a frame compiled after continues from, else None."""
    after = getattr(event.verdict, "resumed_after", None)
    return None if after is None else after.line


@contextlib.contextmanager
def observe(backend: str, result: dict[str, Any], directory: str | None = None) -> Iterator[None]:
    """Runs the block under the backend's record and `watch(trace_file=...)`; fills `result`
    with `objects` (the backend's), `live` and `file` (the two reports' summaries), `records`
    (the trace file's lines) and `disagreements` (as dicts)."""
    import traceguard
    from traceguard import _compat  # noqa: F401 - checks the backend's `Function.__init__` as TF made it.
    from traceguard._diagnosis.trace_file_reader import read_trace_file

    directory = directory or tempfile.mkdtemp(prefix="traceguard-oracle-")
    path = os.path.join(directory, "trace.jsonl")
    started = time.monotonic()
    record = BackendRecord(backend)
    report = None
    try:
        with traceguard.watch(trace_file=path) as report:
            yield
    finally:
        # Also after the block raised (a test that failed): what was recorded is checked.
        result["objects"] = record.stop()
        result["seconds"] = round(time.monotonic() - started, 2)
        if report is not None:
            result["live"] = summary(report.functions, report.layers)
            result["records"] = jax_explain.read_json_lines(path)
            # No file opens before its first record: nothing recorded reads as an empty report.
            read_back = read_trace_file(path) if os.path.exists(path) else None
            result["file"] = summary(read_back.functions, read_back.layers) if read_back else summary({}, {})
            result["disagreements"] = [dataclasses.asdict(d) for d in check(backend, result)]


def in_scope(entry: dict[str, Any]) -> bool:
    """Whether traceguard's reports cover a backend function: the user's (defined in a file
    outside installed packages), or a Keras step. JAX also explains misses of functions with
    no source file (the computation of a `lax` reduction, `_variadic_reduction_jaxpr`): no
    user's. On torch, a frame compiled after a graph break is its function's (a Keras step's too)."""
    resumed = re.match(rf"^{RESUME_PREFIX}_(.+)_at_\d+$", entry["name"] or "")
    name = resumed.group(1) if resumed else entry["name"]
    return (bool(entry["path"]) and not entry["library"]) or is_keras_step_function(name)


def _site(path: str | None, line: int | None) -> tuple[str, int | None]:
    return (os.path.realpath(path) if path else "", line)


def _recorded_site(function: dict[str, Any]) -> tuple[str, int | None]:
    definition = function.get("definition")
    return _site(definition[0], definition[1]) if definition else ("", None)


def check(backend: str, result: dict[str, Any]) -> list[Disagreement]:
    """Every disagreement between `result`'s record and the backend's (see the module's doc)."""
    found: list[Disagreement] = []
    raised = _raised_serials(result["records"])
    tf_data = _tf_data_serials(result["records"])
    by_site: dict[tuple[str, str, int | None], list[dict[str, Any]]] = {}
    for entry in result["objects"]:
        by_site.setdefault((entry["name"], *_site(entry["path"], entry["line"])), []).append(entry)
    matched: set[tuple[str, str, int | None]] = set()
    for key, function in result["live"]["functions"].items():
        site = (function["name"].rsplit(".", 1)[-1].split(": ")[-1], *_recorded_site(function))
        events = [event for event in function["events"] if event[1] != "compile"]
        if any(event[0] in tf_data for event in events):
            continue  # CHECKER_LIMITS["tf.data"]
        counted = [event for event in events if event[0] not in raised]
        recorded = sum(n for kind, n in function["kind_counts"].items() if kind != "compile") \
            - (len(events) - len(counted))
        objects = by_site.get(site)
        if not counted and not objects:
            continue  # CHECKER_LIMITS["raised"]: every trace raised.
        if objects is None:
            found.append(Disagreement("count", key, f"{recorded} traces recorded; the backend traced "
                                      "no function object of this definition"))
            continue
        matched.add(site)
        # torch: the frames compiled after the function's graph breaks, each its own code object that
        # torch names after the function and the break's line (its `co_firstlineno`).
        for line in sorted({_frame(event) for event in events if _frame(event) is not None}):
            frame = (f"{RESUME_PREFIX}_{site[0]}_at_{line}", site[1], line)
            if frame not in by_site:
                found.append(Disagreement("count", key, f"a frame after the graph break at line {line} "
                                          "recorded; the backend compiled no such frame"))
                continue
            matched.add(frame)
            objects = objects + by_site[frame]
        found += _compare_function(key, counted, recorded, function["dropped"], objects)
    for site, objects in by_site.items():
        if site in matched or not any(in_scope(entry) for entry in objects):
            continue
        traces = sum(entry["traces"] for entry in objects)
        vias = sorted({miss["via"] for entry in objects for miss in entry["misses"]})
        found.append(Disagreement("count", f"{site[0]} ({site[1]}:{site[2]})",
                                  f"the backend traced it {traces} times in {len(objects)} object(s)"
                                  + (f" (JAX's caller: {', '.join(map(str, vias))})" if vias else "")
                                  + "; traceguard recorded no trace"))
    if backend == "jax":
        # Misses of functions outside the reports (`in_scope`) are not held against them: JAX
        # explains the nameless `jnp` computations Keras's ops run eagerly too (`<unknown>`, no source).
        logged = [miss for entry in result["objects"] if in_scope(entry) for miss in entry["misses"]]
        logged.sort(key=lambda miss: miss["order"])
        gaps, _ = jax_explain.parity_gaps(logged, result["records"], os.getcwd())
        found += [Disagreement("jax_explain", gap.function, f"miss {gap.miss}: JAX says {gap.jax_words!r}; "
                               f"expected {gap.expected}; recorded {gap.recorded}") for gap in gaps
                  if gap.miss and not _is_first_trace_of_new_object(gap)]
    found += _compare_file(result["live"], result["file"])
    return found


def _is_first_trace_of_new_object(gap: Any) -> bool:
    """A miss JAX explains as "never seen function" recorded as a first trace (`trace`): the
    backend's record agrees. JAX's "maybe re-defined repeatedly?" is its guess from the call
    site (any other function that missed there before, as Keras's train and test steps share
    one), not a statement that the code traced before. (A trace without a miss is the count
    check's: `gap.miss` 0.)"""
    return (gap.jax_words.startswith("never seen function")
            and re.match(r"#\d+ trace:", gap.recorded) is not None)


def _compare_function(key: str, events: list, recorded: int, dropped: int,
                      objects: list[dict[str, Any]]) -> list[Disagreement]:
    found = []
    backend_total = sum(entry["traces"] for entry in objects)
    if recorded != backend_total:
        found.append(Disagreement("count", key, f"{recorded} traces recorded; the backend's count is "
                                  f"{backend_total} over {len(objects)} function object(s) "
                                  f"({', '.join(str(entry['traces']) for entry in objects)})"))
    retraces = sum(event[1] in RETRACE_KINDS for event in events)
    allowed = sum(entry["traces"] - 1 for entry in objects)
    per_object: dict[tuple, list] = {}  # By object and, on torch, by frame (its graph break's line).
    for event in events:
        per_object.setdefault((event[2], _frame(event)), []).append(event)
    first_retraces = [number for number, own in per_object.items() if own[0][1] in RETRACE_KINDS]
    if not dropped and retraces > allowed:
        found.append(Disagreement("phantom", key, f"{retraces} retraces recorded; the backend missed "
                                  f"its objects' caches {allowed} times after their first traces"))
    elif not dropped and first_retraces:
        found.append(Disagreement("phantom", key, "the first trace of recorded function object(s) "
                                  f"{first_retraces} is recorded as a retrace"))
    if not dropped:
        mine = sorted(len(own) for own in per_object.values())
        theirs = sorted(entry["traces"] for entry in objects)
        if mine != theirs:
            found.append(Disagreement("objects", key, f"traces per function object recorded {mine}; "
                                      f"the backend's {theirs}"))
    return found


def _raised_serials(records: list[dict[str, Any]]) -> set[int]:
    return {record["event"]["serial"] for record in records
            if record.get("type") == "function_trace" and (record.get("trace") or {}).get("raised")}


def _tf_data_serials(records: list[dict[str, Any]]) -> set[int]:
    return {record["event"]["serial"] for record in records
            if record.get("type") == "function_trace"
            and (record.get("trace") or {}).get("origin") == "tf.data"}


def _compare_file(live: dict[str, Any], read_back: dict[str, Any]) -> list[Disagreement]:
    found = []
    for part in ("functions", "layers"):
        for name in sorted(set(live[part]) | set(read_back[part])):
            mine, theirs = live[part].get(name), read_back[part].get(name)
            if mine is None or theirs is None:
                found.append(Disagreement("file", name, f"{'live report' if mine is None else 'trace file'} "
                                          f"has no {part[:-1]} {name!r}"))
                continue
            mine_events = mine["events"]
            theirs_events = theirs["events"]
            if mine_events == theirs_events and mine.get("eager_calls") == theirs.get("eager_calls"):
                continue
            missing = [event for event in mine_events if event not in theirs_events]
            extra = [event for event in theirs_events if event not in mine_events]
            detail = (f"live {len(mine_events)} events, file {len(theirs_events)}; "
                      f"only live: {_events_text(missing)}; only in the file: {_events_text(extra)}")
            if mine.get("eager_calls") != theirs.get("eager_calls"):
                detail += f"; eager runs live {mine.get('eager_calls')}, file {theirs.get('eager_calls')}"
            found.append(Disagreement("file", name, detail))
    return found


def _events_text(events: list) -> str:
    shown = [f"#{event[0]} {event[1]}" + (f" ({'; '.join(event[3])})" if event[3] else "")
             for event in events[:4]]
    return ", ".join(shown) + (f" and {len(events) - 4} more" if len(events) > 4 else "") or "none"
