"""Trace snapshots of tests: what each test traced, compared with a file checked in beside it.

The pytest plugin's `--traceguard-snapshot` mode runs each test under `watch()`
and hands the report to a `SnapshotSession`, which turns it into a snapshot
(`_reports.snapshot_file`): every traced function (the user's, Keras's steps)
and every layer per function, one line per trace with its kind and signature.
Names are made stable between runs first: a Keras layer's automatic name
(`dense_3`, numbered across the process) becomes its base name (`dense`,
`dense#2` for the test's second), and addresses in values' reprs are dropped.
The session reads each module's file once, and with `update` rewrites the files
at the end, keeping the tests that did not run. pytest-xdist's workers share the
files: each rewrites a file under its lock, over the file as it is then, with the
tests it ran, so no worker's update is lost to another's.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from traceguard._core.events import GRAPH_TRACE_KINDS, TraceKind
from traceguard._diagnosis.explanation import Explanation
from traceguard._reports.snapshot_file import (
    SnapshotFileError,
    SnapshotTrace,
    describe_changes,
    format_missing_snapshot,
    format_snapshot_failure,
    read,
    write,
)

SNAPSHOT_DIRECTORY = "__trace_snapshots__"
_KINDS = GRAPH_TRACE_KINDS | {TraceKind.SAVE}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _snake_case(name: str) -> str:
    # Keras's `to_snake_case` (keras/src/utils/naming.py), which names layers.
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _stable_layer_name(name: str, class_name: str) -> str:
    """A Keras automatic name (`dense_3`) without its process-wide number; others as they are."""
    name = name.split("#", 1)[0]
    base = _snake_case(class_name)
    return base if re.fullmatch(rf"{re.escape(base)}(_\d+)?", name) else name


def _unique(name: str, taken: dict[str, Any]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}#{number}", number + 1
    return candidate


def _signature(signature: Any) -> str:
    text = ", ".join(f"{name}={spec}" for name, spec in signature.items()) or "-"
    return _ADDRESS.sub("", text)


def snapshot_of(report: Explanation) -> dict[str, list[SnapshotTrace]]:
    """The traces in `report`: functions first, then layers per function, in order of first trace."""
    snapshot: dict[str, list[SnapshotTrace]] = {}
    names: dict[str, Any] = {}
    for runs in report.functions.values():
        name = _unique(runs.function if runs.keras_step else runs.name, names)
        names[name] = runs
        snapshot[f"function {name}"] = [
            SnapshotTrace(event.kind.value, _signature(event.signature), tuple(map(str, event.changes)))
            for event in runs.events]
    layer_names: dict[str, Any] = {}
    for layer in report.layers.values():
        name = _unique(_stable_layer_name(layer.name, layer.class_name), layer_names)
        layer_names[name] = layer
        for event in layer.events:
            if event.kind not in _KINDS:
                continue
            subject = f"layer {name} in {event.function}" if event.function else f"layer {name}"
            snapshot.setdefault(subject, []).append(
                SnapshotTrace(event.kind.value, _signature(event.signature), tuple(map(str, event.changes))))
    return snapshot


class SnapshotSession:
    """The snapshot files of one pytest session: read once, compared per test, rewritten on update."""

    def __init__(self, update: bool, root: pathlib.Path) -> None:
        self.update = update
        self.root = root
        self._lock = threading.Lock()
        self._files: dict[pathlib.Path, dict[str, Any]] = {}
        # On update: per file, the snapshots of the tests that ran and differ from the file's.
        self._stored: dict[pathlib.Path, dict[str, Any]] = {}
        self._unreadable: set[pathlib.Path] = set()  # Rewritten on update, even if no test differs.

    @staticmethod
    def path_for(test_file: pathlib.Path) -> pathlib.Path:
        return test_file.parent / SNAPSHOT_DIRECTORY / f"{test_file.stem}.traces"

    def _shown(self, path: pathlib.Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def _tests(self, path: pathlib.Path) -> dict[str, Any]:
        tests = self._files.get(path)
        if tests is None:
            try:
                tests = read(path)  # SnapshotFileError names file:line.
            except SnapshotFileError:
                if not self.update:
                    raise
                tests = {}  # Unreadable: the update rewrites it with the tests that run.
                self._unreadable.add(path)
            self._files[path] = tests
        return tests

    def check(self, test_file: pathlib.Path, test: str, report: Explanation) -> str | None:
        """Compares (or, on update, stores) the test's traces; the failure's text, or None."""
        path = self.path_for(test_file)
        new = snapshot_of(report)
        with self._lock:
            tests = self._tests(path)
            if self.update:
                if tests.get(test) != new:
                    tests[test] = self._stored.setdefault(path, {})[test] = new
                return None
            if test not in tests:
                return format_missing_snapshot(test, self._shown(path))
            changes = describe_changes(tests[test], new)
        return format_snapshot_failure(test, self._shown(path), changes) if changes else None

    def finish(self) -> list[pathlib.Path]:
        """Writes the changed files (on update); returns their paths.

        Each file is read again under its lock and gets this session's tests over
        what it holds then: another pytest-xdist worker may have rewritten it.
        """
        with self._lock:
            written = sorted(self._stored.keys() | self._unreadable)
            for path in written:
                with _locked(path):
                    try:
                        tests = read(path)
                    except SnapshotFileError:  # Still unreadable: the tests that ran replace it.
                        tests = {}
                    tests.update(self._stored.get(path, {}))
                    write(path, tests)
            self._stored, self._unreadable = {}, set()
        return written


@contextlib.contextmanager
def _locked(path: pathlib.Path, stale_after: float = 10.0) -> Iterator[None]:
    """Holds the lock of the snapshot file `path` across processes (pytest-xdist's workers).

    A lock file made with `O_EXCL`, not a dependency: it is held for the milliseconds
    of one file's rewrite. One older than `stale_after` seconds was left by a killed
    process, and is taken over.
    """
    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            break
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime > stale_after:
                    lock.unlink()
                    continue
            except FileNotFoundError:  # Released meanwhile.
                continue
            time.sleep(0.01)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
