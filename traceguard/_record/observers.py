"""Who is told of every run: `watch()`, `explain()`, `TraceMonitor` and the test helpers.

Observers register for a block (`observing`) and are told of each logged event
and each eager run, from any thread. An observer with a `record_function` method
is also told of every trace of a whole function (`tf.function`, `jax.jit`): while
any such observer is registered, `_compat`'s function-trace hook is installed and
one `FunctionRecords` diagnoses each trace; the last to leave removes the hook. A
failing observer is logged once and never breaks the user's call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from traceguard import _compat
from traceguard._core.events import TraceEvent
from traceguard._record.functions import FunctionRecords
from traceguard._record.internal_errors import log_internal_error
from traceguard._record.log import event_of


class Observer(Protocol):
    """What the recorder calls on an observer; both may be called from any thread.

    An observer may also define `record_function(record)`, which receives each
    `FunctionTrace` while it is registered (as its trace ends, with the trace's
    phase only), `record_function_cost(record)`, which receives it again when the
    call that traced returns, its `phases` and `miss` final, and `record_run(layer, run)`, which
    receives the finished run instead of its event: the event's words are then made
    when it first calls `log.event_of(run)`, not at once. One with a
    `retracing_note(records, function_text)` method words traceguard's note on
    TensorFlow's retracing warning.
    """

    def record_event(self, layer: Any, event: TraceEvent) -> object:
        """Receives each logged `TraceEvent` of `layer`."""

    def record_eager(self, layer: Any) -> None:
        """Receives each eager run of `layer`, logged or not."""


# Read on every run, so a tuple replaced whole under the lock: readers take no lock.
observers: tuple[Observer, ...] = ()
_lock = threading.Lock()


# Observers of function traces, and the records that diagnose them while any is registered.
function_observers: tuple[Any, ...] = ()
function_records: FunctionRecords | None = None
_retracing_notes: Any = None


def add_observer(observer: Observer) -> None:
    """Tells `observer` of every run from now on."""
    global observers, function_observers, function_records, _retracing_notes
    with _lock:
        if any(o is observer for o in observers):
            return
        observers = (*observers, observer)
        if not hasattr(observer, "record_function"):
            return
        if not function_observers:
            function_records = FunctionRecords()
            _compat.add_trace_listener(_on_function_trace, _on_function_complete)
            _retracing_notes = _compat.retracing_warning_notes(_retracing_note)
            _retracing_notes.__enter__()
        function_observers = (*function_observers, observer)


def remove_observer(observer: Observer) -> None:
    global observers, function_observers, function_records, _retracing_notes
    with _lock:
        observers = tuple(o for o in observers if o is not observer)
        if all(o is not observer for o in function_observers):
            return
        function_observers = tuple(o for o in function_observers if o is not observer)
        if not function_observers:
            _compat.remove_trace_listener(_on_function_trace)
            _retracing_notes.__exit__(None, None, None)
            function_records = _retracing_notes = None


# `.active` on a thread while its function traces go unrecorded (`unrecorded()`).
_unrecorded = threading.local()


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """This thread's function traces inside the block are not recorded nor told to observers.

    For traceguard's own traces: a fix-it's replay (`explanation.verify_fixes()`)
    traces copies of the user's functions, which are no part of the user's run.
    """
    saved = getattr(_unrecorded, "active", False)
    _unrecorded.active = True
    try:
        yield
    finally:
        _unrecorded.active = saved


def _on_function_trace(tracing: Any) -> None:
    records = function_records
    if records is None or getattr(_unrecorded, "active", False):
        return
    try:
        record = records.on_trace(tracing)
    except Exception:
        log_internal_error("recording a function trace", "the trace goes on unrecorded")
        return
    verdict = None
    for observer in function_observers:
        try:
            observer.record_function(record)
        except Exception as error:
            if not _compat.stops_trace(error):
                log_internal_error("reporting a function trace")
            elif verdict is None:  # A `no_retrace` block's failure: raised once every observer knows.
                verdict = error
    if verdict is not None:
        raise verdict


def _on_function_complete(tracing: Any) -> None:
    records = function_records
    if records is None or getattr(_unrecorded, "active", False):
        return
    try:
        record = records.on_complete(tracing)
    except Exception:
        log_internal_error("recording the cost of a function trace", "its phases go unrecorded")
        return
    if record is None:
        return
    for observer in function_observers:
        record_cost = getattr(observer, "record_function_cost", None)
        if record_cost is not None:
            try:
                record_cost(record)
            except Exception:
                log_internal_error("reporting the cost of a function trace")


def traced_function(record: Any) -> Any:
    """A weak reference to the function object `record` traced, while function traces are observed.

    For a fix-it's check (`explanation.verify_fixes()`); None outside observing.
    """
    records = function_records
    return None if records is None else records.function_reference(record)


def _retracing_note(function_text: str) -> str | None:
    """traceguard's measured cause, for TensorFlow's warning about `function_text`: in the
    words of the first function observer that has them."""
    records = function_records
    if records is None:
        return None
    for observer in function_observers:
        note = getattr(observer, "retracing_note", None)
        if note is not None:
            return note(records.records_for_function_text(function_text))
    return None


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[Observer]:
    """Tells `observer` of every run inside the block, however the block ends."""
    add_observer(observer)
    try:
        yield observer
    finally:
        remove_observer(observer)


def notify_run(layer: Any, run: Any) -> None:
    """Tells every observer of a finished run (`runs.BodyRun`): its `record_run` if it
    has one, else its `record_event` with the run's event, made once for all. An error
    that stops the trace (`no_retrace`) is raised after all of them."""
    event = None
    verdict = None
    for observer in observers:
        try:
            record_run = getattr(observer, "record_run", None)
            if record_run is not None:
                record_run(layer, run)
                continue
            if event is None:
                event = event_of(run)
            observer.record_event(layer, event)
        except Exception as error:
            if not _compat.stops_trace(error):
                log_internal_error("reporting a run")
            elif verdict is None:
                verdict = error
    if verdict is not None:
        raise verdict


def notify_uncached(transformations: tuple[str, ...]) -> None:
    """An eager run under JAX transformations that keep no cache (`_compat.uncached_transformation`),
    told to the observers that take it (`record_uncached`)."""
    for observer in observers:
        record = getattr(observer, "record_uncached", None)
        if record is not None:
            try:
                record(transformations)
            except Exception:
                log_internal_error("reporting an uncached run")


def notify_eager(layer: Any) -> None:
    for observer in observers:
        try:
            observer.record_eager(layer)
        except Exception:
            log_internal_error("reporting a run")
