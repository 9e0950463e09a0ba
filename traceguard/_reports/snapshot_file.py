"""Trace snapshot files: the traces each test made, as text a reviewer reads in a diff.

One file per test module, checked into the user's repository. Each test is a
block: its id, then each traced function and layer with one line per trace,
its kind and signature. Nothing in it varies between runs of the same program:
no timings, no addresses, no absolute paths.

```
# traceguard trace snapshot, format 1: the traces each test made.
# Rewrite with `pytest --traceguard-snapshot-update`; review changes like code.

test_fit:
  function one_step_on_data:
    trace  data=(float32[32,4], float32[32,1])
  layer dense in one_step_on_data:
    trace  inputs=float32[32,4]
```

Reading a file edited by hand into something else raises `SnapshotFileError`,
naming the file and line. `describe_changes` words what differs between a
stored test and a new run, with the new traces' changes.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterable, Mapping, Sequence

FORMAT = 1
HEADER = (f"# traceguard trace snapshot, format {FORMAT}: the traces each test made.\n"
          "# Rewrite with `pytest --traceguard-snapshot-update`; review changes like code.\n")
# The kinds a snapshot line can hold: a function's or layer's traces (`TraceKind` values).
SNAPSHOT_KINDS = ("trace", "variable_retrace", "retrace", "save")


class SnapshotFileError(ValueError):
    """A snapshot file that cannot be read: its path and line say where."""


@dataclasses.dataclass(frozen=True)
class SnapshotTrace:
    """One trace in a snapshot: its kind and signature; `changes` only from a run, never stored."""

    kind: str
    signature: str
    changes: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    def line(self) -> str:
        return f"{self.kind}  {self.signature}"


# A test's snapshot: each traced thing ("function f", "layer dense in f") -> its traces, in order.
TestSnapshot = Mapping[str, Sequence[SnapshotTrace]]


def render(tests: Mapping[str, TestSnapshot]) -> str:
    """The file's text; tests sorted by id, traced things in the order they first traced."""
    lines = [HEADER]
    for test in sorted(tests):
        lines.append(f"{test}:")
        for subject, traces in tests[test].items():
            lines.append(f"  {subject}:")
            lines.extend(f"    {trace.line()}" for trace in traces)
        lines.append("")
    return "\n".join(lines)


def write(path: pathlib.Path, tests: Mapping[str, TestSnapshot]) -> None:
    """Writes the file whole, never partly: a reader sees the old text or the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(render(tests), encoding="utf-8")
    os.replace(partial, path)


def read(path: pathlib.Path) -> dict[str, dict[str, list[SnapshotTrace]]]:
    """The tests of a snapshot file; {} when it does not exist.

    Raises:
        SnapshotFileError: Naming the file and line of the first line that is
            not a comment, a test, a traced function or layer, or a trace.
    """
    if not path.exists():
        return {}
    reader = _Reader(path)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        reader.read_line(number, line)
    return reader.tests


class _Reader:
    """Reads a snapshot file line by line: a test, its functions and layers, their traces."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.tests: dict[str, dict[str, list[SnapshotTrace]]] = {}
        self.subjects: dict[str, list[SnapshotTrace]] | None = None
        self.traces: list[SnapshotTrace] | None = None
        self.number, self.line = 0, ""

    def fail(self, what: str, expected: str) -> SnapshotFileError:
        return SnapshotFileError(
            f"{os.fspath(self.path)}:{self.number}: {what}; expected {expected}. Received: {self.line!r}. "
            "Fix the line, or rewrite the file with `pytest --traceguard-snapshot-update`.")

    def read_line(self, number: int, line: str) -> None:
        self.number, self.line = number, line
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            self.read_test(stripped)
        elif indent == 2:
            self.read_subject(stripped)
        elif indent == 4:
            self.read_trace(stripped)
        else:
            raise self.fail(f"indented by {indent} spaces",
                            "0 (a test), 2 (a function or layer) or 4 (a trace)")

    def read_test(self, stripped: str) -> None:
        if not stripped.endswith(":") or len(stripped) == 1:
            raise self.fail("a test line must end with ':'", "`test_name:`")
        test = stripped[:-1]
        if test in self.tests:
            raise self.fail(f"test {test!r} appears twice", "each test once")
        self.subjects, self.traces = self.tests.setdefault(test, {}), None

    def read_subject(self, stripped: str) -> None:
        if self.subjects is None:
            raise self.fail("a traced function or layer outside any test", "a `test_name:` line first")
        if not stripped.endswith(":") or not stripped.startswith(("function ", "layer ")):
            raise self.fail("not a traced function or layer",
                            "`  function NAME:` or `  layer NAME in FUNCTION:`")
        subject = stripped[:-1]
        if subject in self.subjects:
            raise self.fail(f"{subject!r} appears twice in the test", "each function and layer once")
        self.traces = self.subjects.setdefault(subject, [])

    def read_trace(self, stripped: str) -> None:
        if self.traces is None:
            raise self.fail("a trace outside any function or layer", "a `  function NAME:` line first")
        kind, _, signature = stripped.partition(" ")
        if kind not in SNAPSHOT_KINDS:
            raise self.fail(f"unknown trace kind {kind!r}",
                            f"one of {', '.join(SNAPSHOT_KINDS)}, then the signature")
        self.traces.append(SnapshotTrace(kind, signature.strip()))


def _plural(count: int) -> str:
    return f"{count} trace{'' if count == 1 else 's'}"


def _describe(trace: SnapshotTrace) -> str:
    what = "; ".join(map(str, trace.changes)) if trace.changes else trace.signature
    return f"{trace.kind}, {what}"


def _subject_words(subject: str) -> str:
    """`function f` -> "function `f`"; `layer dense in f` -> "layer 'dense' in `f`"."""
    kind, _, rest = subject.partition(" ")
    if kind == "function":
        return f"function `{rest}`"
    name, _, function = rest.partition(" in ")
    return f"layer '{name}'" + (f" in `{function}`" if function else "")


def describe_changes(old: TestSnapshot, new: TestSnapshot) -> list[str]:
    """One line per traced function or layer whose traces differ, old order first; [] if none.

    E.g. "layer 'dense' in `train_step`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> 6".
    """
    lines = []
    for subject in [*new, *(s for s in old if s not in new)]:
        before, after = list(old.get(subject, ())), list(new.get(subject, ()))
        if before == after:
            continue
        head = f"{_subject_words(subject)}: {len(before)} -> {_plural(len(after))}"
        parts = []
        for position, (was, now) in enumerate(zip(before, after), 1):
            if was != now:
                kinds = was.kind if was.kind == now.kind else f"{was.kind} -> {now.kind}"
                parts.append(f"trace {position} ({kinds}): {was.signature} -> {now.signature}")
        parts += [_describe(trace) for trace in after[len(before):]]
        parts += [f"no longer {trace.kind} ({trace.signature})" for trace in before[len(after):]]
        lines.append(f"{head}: {' | '.join(parts)}")
    return lines


def format_snapshot_failure(test: str, path: str, lines: Iterable[str]) -> str:
    """The failure of a test whose traces differ from its snapshot."""
    body = "\n".join(f"  {line}" for line in lines)
    return (f"The traces of {test} differ from its snapshot in {path}:\n{body}\n"
            "If the change is intended, rewrite the snapshot: pytest --traceguard-snapshot-update")


def format_missing_snapshot(test: str, path: str) -> str:
    return (f"{test} has no trace snapshot in {path}. Write it with "
            "`pytest --traceguard-snapshot-update`, and check the file in.")
