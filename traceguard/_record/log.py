"""`TraceLog`: the bounded, thread-safe record of a layer's body runs."""

from __future__ import annotations

import collections
import collections.abc
import itertools
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, overload

from traceguard._core.events import TraceEvent
from traceguard._core.kinds import TRACE_KINDS, normalize_kinds

# The one module of recording that words: the log's own summary, notebook display and
# events (`.importlinter` allows it alone).
from traceguard._reports.html import render_html, write_document
from traceguard._reports.html_tables import log_html
from traceguard._reports.messages import hint_text, reason_text
from traceguard._reports.text import format_budget_excess, format_log


def event_of(entry: Any) -> TraceEvent:
    """The `TraceEvent` of a log entry: the entry itself, or a finished run's (`runs.BodyRun`),
    made with its words on first use and kept: most logs are never read while a model traces."""
    if type(entry) is TraceEvent:
        return entry
    try:
        return entry._event  # type: ignore[no-any-return]
    except AttributeError:
        pass
    verdict = entry.verdict
    event = entry._event = TraceEvent(
        index=entry.index, kind=verdict.kind, layer=entry.owner, function=entry.function,
        signature=entry.signature, changes=verdict.changes, created_variables=entry.created_variables,
        reason=reason_text(verdict), hint=hint_text(verdict), timestamp=entry.started,
        duration_s=entry.duration, thread=entry.thread, replica=entry.replica,
        messages=tuple(entry.messages), error=entry.error, function_trace=entry.function_trace,
        verdict=verdict)
    return event


def budget_message(owner: str, max_traces: int, traces: int, event: TraceEvent) -> str:
    """The words of a layer's trace over its `max_traces` budget."""
    return format_budget_excess(owner, max_traces, traces, event)


class TraceLog:
    """The newest `TraceEvent`s of one layer, oldest first.

    A sequence: supports `len()`, iteration, indexing and slicing (a slice gives
    a list). Past `maxlen` events the oldest are dropped and counted in
    `dropped`. Eager runs are counted in `eager_calls`; they become events only
    when the layer was built with `log_eager=True`.

    All methods are thread-safe: one lock guards the events and the counters,
    and iteration works on a snapshot. Events stay in index order even when
    runs on different threads finish out of order.

    Args:
        maxlen: Positive integer, how many events to keep.
        owner: The layer's name, shown in reports. Defaults to `""`.

    Raises:
        ValueError: If `maxlen` is not a positive integer or `owner` not a str.

    Example:

    ```python
    layer = MyLayer()
    tf.function(layer)(tf.ones((8, 4)))
    print(layer.trace_log.summary())
    layer.trace_log.count("variable_retrace")  # 1
    ```
    """

    def __init__(self, maxlen: int, owner: str = "") -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
            raise ValueError(f"`maxlen` expects a positive integer. Received: maxlen={maxlen!r}")
        if not isinstance(owner, str):
            raise ValueError(f"`owner` expects the layer's name (str). Received: owner={owner!r}")
        # TraceEvents, and finished runs that make theirs when the log is first read.
        self._events: collections.deque[Any] = collections.deque(maxlen=maxlen)
        self._unmade = False  # Whether `_events` holds a run whose event is not made yet.
        self._lock = threading.Lock()
        self._dropped = 0
        # Every eager step counts: `next()` on an `itertools.count` is one C call, atomic
        # under the GIL, where a locked `+= 1` took three calls. Its repr holds the count;
        # `clear()` moves the base, so the counter (and `eager_counter()`'s callers) stay.
        self._eager_count = itertools.count()
        self._eager_base = 0
        # `next()` on an `itertools.count` is atomic under the GIL: no lock per run.
        self._indices = itertools.count(1)
        self._reserve_index = self._indices.__next__
        self.owner = owner

    def _append(self, entry: Any) -> None:
        """Adds `entry` in index order, dropping the oldest past `maxlen`.

        `entry` is a `TraceEvent`, or a finished run whose `event()` makes it:
        the recorder leaves the event to be made when the log is read, which
        most logs never are while a model traces. Indices are reserved when a
        run starts, so a run that ends after a later one (another thread's, or
        one that encloses it) arrives out of order.
        """
        with self._lock:
            events = self._events
            if len(events) == events.maxlen:
                self._dropped += 1
                if events[0].index > entry.index:
                    return  # Older than everything kept: it is the one dropped.
                events.popleft()
            position = len(events)
            while position and events[position - 1].index > entry.index:
                position -= 1
            events.insert(position, entry)
            if type(entry) is not TraceEvent:
                self._unmade = True

    @property
    def maxlen(self) -> int:
        """How many events the log keeps."""
        return self._events.maxlen  # type: ignore[return-value]

    @property
    def dropped(self) -> int:
        """How many events were dropped to keep the log within `maxlen`."""
        return self._dropped

    @property
    def eager_calls(self) -> int:
        """How many eager runs of the body there were (logged or not)."""
        return _value_of(self._eager_count) - self._eager_base

    def _snapshot(self) -> list[TraceEvent]:
        with self._lock:
            if self._unmade:
                self._events = collections.deque(
                    [event_of(entry) for entry in self._events],
                    maxlen=self._events.maxlen)
                self._unmade = False
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self._snapshot())

    @overload
    def __getitem__(self, item: int) -> TraceEvent: ...
    @overload
    def __getitem__(self, item: slice) -> list[TraceEvent]: ...

    def __getitem__(self, item: int | slice) -> TraceEvent | list[TraceEvent]:
        if isinstance(item, bool) or not isinstance(item, (int, slice)):
            raise TypeError(f"`TraceLog` indices must be integers or slices. Received: item={item!r}")
        return self._snapshot()[item]

    def filter(self, kind: Any = None, function: str | None = None) -> list[TraceEvent]:
        """The events of the given kind(s) and/or enclosing function.

        Args:
            kind: A `TraceKind`, its name, or a collection of them. Defaults to
                `None`, any kind.
            function: Name of the enclosing `tf.function`. Defaults to `None`,
                any function.

        Raises:
            ValueError: If `kind` names no `TraceKind`.
        """
        kinds = normalize_kinds(kind)
        if function is not None and not isinstance(function, str):
            raise ValueError(
                f"`function` expects a function name (str) or None. Received: function={function!r}"
            )
        return [
            event
            for event in self._snapshot()
            if (kinds is None or event.kind in kinds)
            and (function is None or event.function == function)
        ]

    def count(self, kind: Any = None) -> int:
        """How many logged events are of the given kind(s); all when None."""
        return len(self.filter(kind))

    def clear(self) -> None:
        """Empties the log and resets `dropped` and `eager_calls`.

        Indices keep counting, and the layer still remembers its earlier traces
        when classifying the next run.
        """
        with self._lock:
            self._events.clear()
            self._dropped = 0
            self._eager_base = _value_of(self._eager_count)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The events as JSON-serialisable dicts keyed by field name."""
        return [event.to_dict() for event in self._snapshot()]

    def summary(self) -> str:
        """A readable table: counts by kind, then one block per event."""
        return format_log(self.owner, self._snapshot(), self._dropped, self.eager_calls)

    def to_html(self, path: str | os.PathLike[str], axis: str = "time") -> pathlib.Path:
        """Writes the log as a self-contained HTML report: a timeline and tables.

        One mark per body run, coloured by kind, with its reason, changes and
        fix as tooltip; then the counts by kind and the retraces with their
        fixes. No scripts and nothing fetched: the file opens offline. For
        several layers in one report, see `traceguard.write_html()`.

        Args:
            path: File to write (str or path-like).
            axis: One of `{"time", "order"}`: place runs by seconds since the
                first run, or by their order. Defaults to `"time"`.

        Returns:
            The path written, as a `pathlib.Path`.

        Raises:
            TypeError: If `path` is not a str or path-like.
            ValueError: If `axis` is not one of the choices.
        """
        return write_document(path, render_html({self.owner: self}, title=f"traceguard: layer {self.owner}",
                                                axis=axis))

    def _repr_html_(self) -> str:
        """The notebook display: counts by kind, then a table of the events."""
        return log_html(self)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        counts = collections.Counter(event.kind.value for event in self._snapshot())
        inner = ", ".join(f"{kind}={counts[kind]}" for kind in TRACE_KINDS if counts[kind])
        return f"<TraceLog {self.owner!r}: {len(self)} events ({inner or 'none'})>"


def _value_of(counter: itertools.count[int]) -> int:
    """The number `next(counter)` would return, read without taking it."""
    return int(repr(counter)[len("count("):-1])


# --- written by the recorder, read by the test helpers -------------------------------
def index_reserver(log: TraceLog) -> Callable[[], int]:
    """The callable that reserves the index of a run that starts now (atomic: no lock per
    run); bound once per log, as every logged run calls it."""
    return log._reserve_index


def appender(log: TraceLog) -> Callable[[Any], None]:
    """The callable that adds a finished run (or its `TraceEvent`) to `log`, in index order."""
    return log._append


def eager_counter(log: TraceLog) -> Callable[[], int]:
    """The callable that counts one eager run of the body in `log`; the same for the log's life."""
    return log._eager_count.__next__


def next_index(log: TraceLog) -> int:
    """The index the next run will reserve."""
    return _value_of(log._indices)


collections.abc.Sequence.register(TraceLog)
