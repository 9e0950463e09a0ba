"""Reading trace files back: one `Explanation` from the records of one or many files.

Imports neither TensorFlow nor JAX: a trace file holds the events with their typed
values and words, so the text and HTML reports (`_reports`) render them as they
would in the process that wrote them. Schema version 3 writes each record once (a
function trace, then what its miss cost); version 2, which wrote a function trace
again with its costs (the later line of a serial wins), is read too. Bad input is
reported by file and line: a line that is not JSON, a record that is not one of
`RECORD_TYPES`, a file of a newer schema or of version 1. The one
exception is a cut last line, what a killed process leaves: it is reported as a
warning and the lines before it are kept.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Sequence
from typing import Any

from traceguard._core.events import TraceEvent
from traceguard._core.function_runs import FunctionEvent, FunctionRuns
from traceguard._core.functions import FunctionId, MissCost
from traceguard._core.layer_runs import LayerRuns
from traceguard._diagnosis.explanation import EVENTS_PER_LAYER, Explanation
from traceguard._diagnosis.trace_file import RECORD_TYPES, SCHEMA, SCHEMA_VERSION
from traceguard._diagnosis.workers import Worker

# The schema versions read: version 1 was a development format, never written by a release.
READ_VERSIONS = (2, SCHEMA_VERSION)
_VERSION_2_TYPES = ("layer_run", "function_trace", "eager_runs", "end")


class TraceFileError(ValueError):
    """A trace file that cannot be read: the message names the file and line."""


@dataclasses.dataclass
class TraceFile:
    """The records of one trace file.

    Attributes:
        path: The file read.
        header: Its header line, as a dict (label, pid, host, versions, ...).
        layers: Layer name to its `LayerRuns`, in the order of their first run.
        functions: Each function's `FunctionId` to its `FunctionRuns`.
        function_starts: `FunctionEvent.serial` to when its trace started (epoch seconds).
        call_starts: `FunctionEvent.serial` to when the call that made it started, where
            the file has it (epoch seconds).
        complete: Whether the file's last record is an end line (the process closed
            it, or a `TraceMonitor` call ended).
        worker: The worker of a distributed job that wrote it (its header's
            `worker`), or None.
    """

    path: str
    header: dict[str, Any]
    layers: dict[str, LayerRuns] = dataclasses.field(default_factory=dict)
    functions: dict[FunctionId, FunctionRuns] = dataclasses.field(default_factory=dict)
    function_starts: dict[int, float] = dataclasses.field(default_factory=dict)
    call_starts: dict[int, float] = dataclasses.field(default_factory=dict)
    complete: bool = False
    worker: Worker | None = None
    # `FunctionEvent.serial` to its function's key, for the `function_cost` records that follow.
    function_of: dict[int, FunctionId] = dataclasses.field(default_factory=dict)

    @property
    def version(self) -> int:
        """The schema version it was written with."""
        return int(self.header["version"])

    @property
    def label(self) -> str:
        return str(self.header.get("label") or os.path.basename(self.path))


def unreadable(path: str, error: OSError) -> str:
    """One line naming `path` and why it could not be opened: what `report` and `compare` print."""
    if isinstance(error, IsADirectoryError):
        return f"{path}: a directory; give the trace files in it (written by --trace-file or trace_file=...)."
    if isinstance(error, FileNotFoundError):
        return f"{path}: no such file."
    return f"{path}: cannot be read ({error.strerror or error})."


def read_trace_file(path: str) -> TraceFile:
    """Reads one trace file.

    Raises:
        TraceFileError: If the file is empty, has no header, is of another schema or
            a newer version, or a line before the last is not a valid record.
        OSError: If the file cannot be opened.
    """
    # Trace files are ASCII (`json.dumps` escapes the rest): other bytes fail as a line's JSON.
    with open(path, encoding="utf-8", errors="replace") as file:
        lines = file.read().split("\n")
    ends_with_newline = lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    if not lines:
        raise TraceFileError(f"{path}: empty file; a trace file starts with its header line.")
    trace_file: TraceFile | None = None
    for number, line in enumerate(lines, start=1):
        last = number == len(lines)
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if last and not ends_with_newline and number > 1:  # The write a kill cut short.
                warnings.warn(f"{path}:{number}: the last line is cut short ({error.msg}), as when the "
                              "process was killed while writing it; it is skipped and the lines before "
                              "it are read.", UserWarning, stacklevel=2)
                break
            raise TraceFileError(f"{path}:{number}: not a JSON record ({error}). "
                                 f"Received: {_shorten(line)}") from None
        if trace_file is None:
            header = _checked_header(record, path)
            trace_file = TraceFile(path, header, worker=_worker(header, path))
            continue
        try:
            _add_record(trace_file, record)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise TraceFileError(f"{path}:{number}: not a valid traceguard record ({type(error).__name__}: "
                                 f"{error}). Received: {_shorten(line)}") from None
    assert trace_file is not None  # The first line is a header or raised.
    return trace_file


def _checked_header(record: Any, path: str) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise TraceFileError(f"{path}:1: not a traceguard trace file: its first line is not a header of "
                             f"schema {SCHEMA!r}. Received: {_shorten(json.dumps(record))}")
    version = record.get("version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise TraceFileError(
            f"{path}:1: written with trace file schema version {version!r} (traceguard "
            f"{record.get('traceguard', '?')}); this traceguard reads versions {READ_VERSIONS[0]} to "
            f"{SCHEMA_VERSION}. Upgrade traceguard to read it.")
    if version < READ_VERSIONS[0]:
        raise TraceFileError(
            f"{path}:1: written with trace file schema version {version} (traceguard "
            f"{record.get('traceguard', '?')}), a development format that no released traceguard wrote; "
            f"this traceguard reads versions {READ_VERSIONS[0]} to {SCHEMA_VERSION}. Write the file again.")
    return record


def _worker(header: dict[str, Any], path: str) -> Worker | None:
    fields = header.get("worker")
    if fields is None:
        return None
    try:
        return Worker.from_dict(fields)
    except ValueError as error:
        raise TraceFileError(f"{path}:1: the header's `worker` is not a worker: {error}") from None


def _add_record(trace_file: TraceFile, record: dict[str, Any]) -> None:
    kind = record["type"]
    trace_file.complete = kind == "end"
    if kind == "layer_run":
        runs = _layer(trace_file, record)
        if len(runs.events) >= EVENTS_PER_LAYER:  # As the live report keeps them.
            runs.events.pop(0)
            runs.dropped += 1
        runs.events.append(TraceEvent.from_json(record["event"]))
    elif kind == "eager_runs":
        runs = _layer(trace_file, record)
        runs.eager_calls = max(runs.eager_calls, int(record["count"]))  # Each line counts from the start.
    elif kind == "function_trace":
        _add_function_trace(trace_file, record)
    elif kind == "function_cost" and trace_file.version >= 3:
        _add_function_cost(trace_file, record)
    elif kind == "end" and record.get("unwritten"):
        warnings.warn(f"{trace_file.path}: {record['unwritten']} record(s) could not be written when the "
                      "file was made (traceguard logged why in that process); this file's report is "
                      "short by them.", UserWarning, stacklevel=4)
    elif kind != "end":
        types = RECORD_TYPES[1:] if trace_file.version >= 3 else _VERSION_2_TYPES
        raise ValueError(f"unknown record type {kind!r}; one of {', '.join(types)} expected")


def _add_function_trace(trace_file: TraceFile, record: dict[str, Any]) -> None:
    # The event and the very trace it views, rebuilt from the line (`FunctionEvent.to_json()`); the
    # line's `started` when the event lacks one (a trace's later cost line updates it).
    event = FunctionEvent.from_json(record)
    if event.cost.started is None:
        started = float(record["started"])
        event = dataclasses.replace(event, cost=dataclasses.replace(event.cost, started=started))
    key = FunctionId(record["qualname"], event.definition)  # Its text is the line's `key`.
    function = trace_file.functions.get(key)
    if function is None:
        function = trace_file.functions[key] = FunctionRuns(
            record["qualname"], event.function, event.definition, bool(record["keras_step"]))
    # Version 2 wrote a trace again with its costs: the later line's costs are the event's.
    if trace_file.version >= 3 or function.set_cost(event.serial, event.cost) is None:
        function.add(event)
    function.objects = max(function.objects, int(record["objects"]))
    trace_file.function_of[event.serial] = key
    trace_file.function_starts[event.serial] = float(record["started"])
    if record.get("call_started") is not None:
        trace_file.call_starts[event.serial] = float(record["call_started"])


def _add_function_cost(trace_file: TraceFile, record: dict[str, Any]) -> None:
    """Completes the event of an earlier `function_trace` line with what its miss cost."""
    serial = int(record["serial"])
    key = trace_file.function_of.get(serial)
    if key is None:
        raise ValueError(f"the cost of function trace {serial}, which no earlier `function_trace` "
                         "record holds")
    # Set once on the event, as the live report sets it (`FunctionRuns.set_cost`); nothing when the
    # event was dropped past the events kept, as in the live report.
    trace_file.functions[key].set_cost(serial, MissCost.from_json(record))
    if record["started"] is not None:
        trace_file.function_starts[serial] = float(record["started"])
    if record["call_started"] is not None:
        trace_file.call_starts[serial] = float(record["call_started"])


def _layer(trace_file: TraceFile, record: dict[str, Any]) -> LayerRuns:
    runs = trace_file.layers.get(record["layer"])
    if runs is None:
        runs = trace_file.layers[record["layer"]] = LayerRuns(
            record["layer"], record["class_name"], bool(record["trace_aware"]))
    return runs


def _shorten(line: str) -> str:
    return repr(line if len(line) <= 120 else line[:117] + "...")


def merged_explanation(trace_files: Sequence[TraceFile]) -> Explanation:
    """One report of every file's records; with several files, each name starts with its file's label."""
    labels = unique_labels(trace_files)
    title = ("trace file " + labels[0] if len(trace_files) == 1
             else f"{len(trace_files)} trace files: {', '.join(labels)}")
    explanation = Explanation(title)
    layers: list[tuple[int, float, LayerRuns]] = []
    functions: dict[FunctionId, FunctionRuns] = {}
    for number, (label, trace_file) in enumerate(zip(labels, trace_files)):
        prefix = f"{label}: " if len(trace_files) > 1 else ""
        for runs in trace_file.layers.values():
            first = min((event.timestamp for event in runs.events), default=float("inf"))
            layers.append((number, first, dataclasses.replace(runs, name=prefix + runs.name)))
        for function in trace_file.functions.values():
            events = [dataclasses.replace(event, trace=dataclasses.replace(event.trace,
                                                                           name=prefix + event.function))
                      for event in function.events]
            functions[FunctionId(prefix + function.name, function.definition)] = dataclasses.replace(
                function.copy(), name=prefix + function.name, function=prefix + function.function,
                events=events)
    # Each file's layers together, in the order of their first run.
    explanation._restore([runs for _, _, runs in sorted(layers, key=lambda item: item[:2])], functions)
    return explanation


def unique_labels(trace_files: Sequence[TraceFile]) -> list[str]:
    """Each file's label; the file's name is added where two files have the same label."""
    labels = [trace_file.label for trace_file in trace_files]
    return [label if labels.count(label) == 1 else f"{label} ({trace_file.path})"
            for label, trace_file in zip(labels, trace_files)]
