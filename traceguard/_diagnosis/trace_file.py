"""Trace files: every record of an `Explanation`, written as JSON Lines as it happens.

`watch(trace_file=...)`, `TraceMonitor(trace_file=...)` and `python -m traceguard run
--trace-file` hand a `TraceFileWriter` to their `Explanation`, which passes it each
layer run and each function trace it records. One line per record, flushed at once,
so a process that is killed keeps every line written before. Writing happens when a
body runs as a trace or a function traces, never per eager call: eager runs are
counted by the `Explanation` and written as counts when the file is closed (and at
the end of each `TraceMonitor` call), each followed by an end line.

The schema (`SCHEMA`, version `SCHEMA_VERSION`) is documented field by field in
docs/trace-files.md; `trace_file_reader` reads it back without TensorFlow.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from typing import IO, Any

from traceguard._core.backends import Backend
from traceguard._diagnosis.workers import check_trace_file_pattern, current_worker, expand_trace_file
from traceguard._version import __version__

SCHEMA = "traceguard.trace-file"
# Raised when a record's fields change meaning or a field a reader needs is added;
# a new optional field keeps the version (readers ignore what they do not know).
# Version 2: signatures, changes, sites and verdicts as typed values (each value's `to_json()`).
# Version 3: each record written once: a function trace as its trace ends, what its miss cost
# as a `function_cost` record when its call returns (version 2 wrote the trace again).
SCHEMA_VERSION = 3
RECORD_TYPES = ("header", "layer_run", "function_trace", "function_cost", "eager_runs", "end")
# The files this process's writers have open: two writers of one file (`run --trace-file` over a
# script with its own `watch(trace_file=...)` of the same path) would interleave their lines.
_OPEN_PATHS: set[str] = set()
_OPEN_PATHS_LOCK = threading.Lock()
_PACKAGES = ("tensorflow", "keras", "tf_keras", "jax", "torch")
_COSTS_KEPT = 1024  # Costs of traces whose calls have not returned, kept to compare.


def _costs_of(event: Any) -> tuple[Any, ...]:
    return (dict(event.phases), event.miss_s, event.persistent_cache, event.cache_saved_s,
            event.cost.call_started)


def check_trace_file_path(path: object, label: object, caller: str | None,
                          option: str = "--trace-file") -> str:
    """`path` as a str when it can name a trace file to write and `label` is a str or None, else a
    clear error naming `caller`'s argument (`caller` is e.g. `"watch"`; None: the command line's
    `option`).

    `path` may hold fields (`{worker}`, ...; `workers.TRACE_FILE_FIELDS`), filled when the
    file opens; its directory is checked as this process would fill them now.
    """
    where, received = (f"`{caller}(trace_file=...)`", "trace_file=") if caller is not None \
        else (option, f"{option} ")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where} expects the path of the trace file to write (str or path-like), or "
                        f"None. Received: {received}{path!r}")
    text = str(os.fspath(path))
    check_trace_file_pattern(text, where, received)
    filled = expand_trace_file(text, current_worker())
    directory = os.path.dirname(os.path.abspath(filled))
    if os.path.isdir(filled) or not os.path.isdir(directory):
        raise ValueError(f"{where} expects a file in an existing directory. Received: {received}{path!r}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"`{caller}(trace_file_label=...)` expects a str, or None. "
                        f"Received: trace_file_label={label!r}")
    return text


class TraceFileWriter:
    """Writes one JSON object per line to `path`, flushed per record; thread-safe.

    The file opens at the first record (or when closed without one), when the worker
    this process is in a distributed job is known (`workers.current_worker()`): it fills
    the fields of `path` and labels the file by default.

    Args:
        path: The file to write, with `{worker}`, `{pid}`, ... fields
            (`workers.TRACE_FILE_FIELDS`) filled when it opens; an existing file is replaced.
        label: How reports name this process; defaults to the worker (`"worker-1"`) in a
            distributed job, else `"<host>:<pid>"`.
    """

    def __init__(self, path: str, label: str | None = None) -> None:
        self.pattern = path
        self.path: str | None = None  # The file written, once it opened.
        self._label = label
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._failed = False  # Opening failed: records are dropped (logged once).
        # Records that could not be made (a value without a JSON form): counted, and said in the end
        # line, so that a reader knows its report is short rather than silently disagreeing.
        self.unwritten = 0
        self._unwritten_kinds: set[str] = set()
        self._unwritten_serials: set[int] = set()
        # Serial -> the costs its `function_trace` line holds, until `function_cost` completes them.
        self._costs: dict[int, tuple[Any, ...]] = {}
        # One encoder for every line, without the check for cycles (records are trees).
        self._encode = json.JSONEncoder(default=str, check_circular=False).encode

    def _open(self) -> None:
        """Fills the path, opens the file and writes the header. Called with the lock held."""
        worker = current_worker()
        host, pid = socket.gethostname(), os.getpid()
        label = self._label if self._label is not None else worker.name if worker is not None \
            else f"{host}:{pid}"
        path = expand_trace_file(self.pattern, worker)
        with _OPEN_PATHS_LOCK:
            taken = os.path.realpath(path) in _OPEN_PATHS
            if not taken:
                _OPEN_PATHS.add(os.path.realpath(path))
        if taken:  # Recording never fails the user's call: say so once, go on.
            self._failed = True
            logging.getLogger("traceguard").warning(
                "the trace file %r is being written by another watch() (or `run --trace-file`, or "
                "TraceMonitor) of this process; this one writes nothing to it.", path)
            return
        try:
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by `close`)
        except OSError as error:
            self._failed = True
            with _OPEN_PATHS_LOCK:
                _OPEN_PATHS.discard(os.path.realpath(path))
            logging.getLogger("traceguard").warning("could not open the trace file %r: %s; no trace "
                                                    "file is written.", path, error)
            return
        self.path = path
        header = {"type": "header", "schema": SCHEMA, "version": SCHEMA_VERSION, "label": label, "pid": pid,
                  "host": host, "started": time.time(), "argv": list(sys.argv), "traceguard": __version__,
                  "backend": _backend(), "stack": _stack(), "versions": _versions(),
                  "worker": None if worker is None else worker.to_dict()}
        self._write_line(json.dumps(header, default=str) + "\n")

    def layer_run(self, runs: Any, event: Any) -> None:
        """Writes one layer body run: its layer (`LayerRuns`) and its `TraceEvent`."""
        try:
            record = {"type": "layer_run", "layer": runs.name, "class_name": runs.class_name,
                      "trace_aware": runs.trace_aware, "event": event.to_json()}
        except Exception:  # noqa: BLE001 (recording never fails the user's call)
            self._unwritten("a layer run")
            return
        self._write(record)

    def _unwritten(self, what: str) -> None:
        """Counts a record that could not be made, logging the first failure of each kind."""
        # The reader imports no backend, so neither does the writer: no `_compat.describe_versions`.
        with self._lock:
            self.unwritten += 1
            first = what not in self._unwritten_kinds
            self._unwritten_kinds.add(what)
        if first:
            logging.getLogger("traceguard").exception(
                "traceguard failed while writing %s to the trace file %r; the record is left out and "
                "the file's end line counts it (reported once). Please report this.", what, self.path)

    def function_trace(self, key: str, runs: Any, record: Any, event: Any) -> None:
        """Writes one function trace, once: its `FunctionRuns` (`key` in `Explanation.functions`),
        its `FunctionTrace` and the `FunctionEvent` made of it, as the trace ends. What the miss
        cost is known when the call that traced returns: `function_cost` writes it then."""
        try:
            line = self._function_trace_line(key, runs, record, event)
        except Exception:  # noqa: BLE001 (recording never fails the user's call)
            self._unwritten("a function trace")
            with self._lock:  # Its costs would reference a trace the file lacks: left out too.
                self._unwritten_serials.add(event.serial)
            return
        with self._lock:
            if len(self._costs) >= _COSTS_KEPT:  # Calls that never returned: forgotten, oldest first.
                self._costs.pop(next(iter(self._costs)))
            self._costs[event.serial] = _costs_of(event)
        self._write(line)

    @staticmethod
    def _function_trace_line(key: str, runs: Any, record: Any, event: Any) -> dict[str, Any]:
        # The event's `to_json()`: its attributes (`event`), the trace's other facts (`trace`) and
        # `call_started`; a reader rebuilds the very `FunctionTrace` from them.
        started = event.cost.started if event.cost.started is not None else time.time() - record.duration
        return {"type": "function_trace", "key": key, "qualname": runs.name, "keras_step": runs.keras_step,
                "objects": runs.objects, "started": started, **event.to_json()}

    def function_cost(self, cost: Any, event: Any) -> None:
        """Writes what a function trace's miss cost (`cost`, its `FunctionEvent`'s now, `phases` and
        `miss_s` final), when the call that traced returns; nothing when that is what its trace's
        line says already (a call the hooks did not see: the trace was the whole miss)."""
        costs = _costs_of(event)
        with self._lock:
            if self._costs.pop(event.serial, None) == costs:
                return
            if event.serial in self._unwritten_serials:
                self._unwritten_serials.discard(event.serial)
                return
        try:
            line = {"type": "function_cost", "serial": event.serial, **cost.to_json()}
        except Exception:  # noqa: BLE001 (recording never fails the user's call)
            self._unwritten("a function's costs")
            return
        self._write(line)

    def mark_end(self, layers: Any) -> None:
        """Writes the eager runs counted so far for each `LayerRuns` of `layers`, then the end line.

        Records may follow (`TraceMonitor` marks the end of each call): a reader
        takes the file as complete when its last record is an end line.
        """
        for runs in layers:
            if runs.eager_calls:
                self._write({"type": "eager_runs", "layer": runs.name, "class_name": runs.class_name,
                             "trace_aware": runs.trace_aware, "count": runs.eager_calls})
        end: dict[str, Any] = {"type": "end", "ended": time.time()}
        if self.unwritten:
            end["unwritten"] = self.unwritten
        self._write(end)

    def close(self, layers: Any) -> None:
        """Marks the end (see `mark_end`) and closes the file."""
        self.mark_end(layers)
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
                with _OPEN_PATHS_LOCK:
                    _OPEN_PATHS.discard(os.path.realpath(str(self.path)))

    def reopen(self) -> None:
        """Opens the closed file again, to append (`TraceMonitor`'s next call)."""
        with self._lock:
            if self._file is None and self.path is not None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by `close`)
                with _OPEN_PATHS_LOCK:
                    _OPEN_PATHS.add(os.path.realpath(self.path))

    def _write(self, record: dict[str, Any]) -> None:
        line = self._encode(record) + "\n"
        with self._lock:
            if self.path is None and not self._failed:
                self._open()
            self._write_line(line)

    def _write_line(self, line: str) -> None:
        """Writes one line. Called with the lock held."""
        if self._file is not None:
            self._file.write(line)
            self._file.flush()


def _backend() -> Backend:
    from traceguard import _compat

    return _compat.BACKEND


def _stack() -> str:
    from traceguard import _compat

    return _compat.describe_versions()


def _versions() -> dict[str, str]:
    """The versions of the frameworks this process imported."""
    return {name: str(getattr(sys.modules[name], "__version__", "?"))
            for name in _PACKAGES if name in sys.modules}
