"""Who is told of every run: `watch()`, `explain()`, `TraceMonitor` and the test helpers.

Observers register for a block (`observing`) and are told of each logged event
and each eager run, from any thread. An observer with a `record_function` method
is also told of every trace of a whole function (`tf.function`, `jax.jit`): while
any such observer (or a trace listener) is registered, this module is `_compat`'s one
function-trace sink, the hooks are installed, and one `FunctionRecords` diagnoses each
trace; the last to leave removes the hooks. This is the only fan-out: `_tell_each` tells
each receiver, and an error that stops the trace (`no_retrace`) is raised once all were
told. A failing observer is logged once and never breaks the user's call.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
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
    phase only), `record_function_cost(record, cost)`, which receives the same record and its
    `MissCost` when the call that traced returns (`phases` and `miss` final; the record is not
    copied, its `miss_cost` stays the trace's own), and `record_run(layer, run)`, which
    receives the finished run instead of its event: the event's words are then made
    when it first calls `log.event_of(run)`, not at once. One with a
    `retracing_note(records, function_text)` method words traceguard's note on
    TensorFlow's retracing warning.
    """

    def record_event(self, layer: Any, event: TraceEvent) -> object:
        """Receives each logged `TraceEvent` of `layer`."""

    def record_eager(self, layer: Any) -> None:
        """Receives each eager run of `layer`, logged or not."""


# Told each `_compat._function_tracing.FunctionTracing` as it is (a test of the hooks, a check).
TraceListener = Callable[[Any], object]
_log = logging.getLogger("traceguard")

# Read on every run, so a tuple replaced whole under the lock: readers take no lock.
observers: tuple[Observer, ...] = ()
_lock = threading.Lock()


# Observers of function traces, and the records that diagnose them while any is registered;
# listeners of the backend's `FunctionTracing`s as they are (the `_compat` hooks' tests).
function_observers: tuple[Any, ...] = ()
function_records: FunctionRecords | None = None
trace_listeners: tuple[tuple[TraceListener, TraceListener | None], ...] = ()  # (on_trace, on_complete)
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
            _connect()
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
            _retracing_notes.__exit__(None, None, None)
            function_records = _retracing_notes = None
            _disconnect()


def add_trace_listener(listener: TraceListener, on_complete: TraceListener | None = None) -> None:
    """Calls `listener(tracing)` with the backend's `FunctionTracing` as every function trace ends,
    and `on_complete(tracing)`, if given, when the call that traced returns; before the observers."""
    global trace_listeners
    if not callable(listener) or (on_complete is not None and not callable(on_complete)):
        raise TypeError(f"A function-trace listener must be callable. Received: {listener!r}, "
                        f"on_complete={on_complete!r}")
    with _lock:
        _connect()
        trace_listeners = (*trace_listeners, (listener, on_complete))


def remove_trace_listener(listener: TraceListener) -> None:
    """Stops calling `listener` (and its `on_complete`)."""
    global trace_listeners
    with _lock:
        if all(pair[0] is not listener for pair in trace_listeners):
            raise ValueError(f"{listener!r} is not a function-trace listener.")
        trace_listeners = tuple(pair for pair in trace_listeners if pair[0] is not listener)
        _disconnect()


@contextlib.contextmanager
def listening_to_traces(listener: TraceListener, on_complete: TraceListener | None = None) -> Iterator[None]:
    """`add_trace_listener(listener, on_complete)` for the duration of the block."""
    add_trace_listener(listener, on_complete)
    try:
        yield
    finally:
        remove_trace_listener(listener)


class _Sink:
    """What `_compat` hands every function trace to, while an observer or listener wants them."""

    def on_trace(self, tracing: Any) -> None:
        _on_function_trace(tracing)

    def on_complete(self, tracing: Any) -> None:
        _on_function_complete(tracing)


_connected = False


def _connect() -> None:
    """Connects the sink, if not yet (the first function observer or listener). With the lock held."""
    global _connected
    if not _connected:
        _compat.connect_trace_sink(_Sink())
        _connected = True


def _disconnect() -> None:
    """Disconnects the sink once no function observer nor listener is left. With the lock held."""
    global _connected
    if _connected and not function_observers and not trace_listeners:
        _compat.disconnect_trace_sink()
        _connected = False


def _tell_each(receivers: Iterable[Any], tell: Callable[[Any], object],
               failed: Callable[[Any], None]) -> BaseException | None:
    """`tell(receiver)` for each receiver, in order; `failed(receiver)` logs a failure, and the
    others are told. An error that stops the trace (`no_retrace`'s) is returned (the first if
    several) once every receiver was told: the caller raises it."""
    stop: BaseException | None = None
    for receiver in receivers:
        try:
            tell(receiver)
        except Exception as error:
            if not _compat.stops_trace(error):
                failed(receiver)
            elif stop is None:
                stop = error
    return stop


def _logged(where: str) -> Callable[[Any], None]:
    return lambda _: log_internal_error(where)


def _listener_failed(tracing: Any, what: str) -> Callable[[Any], None]:
    """A listener's failure: logged each time (a test's listener, not traceguard's own)."""
    return lambda _: _log.exception("A function-trace listener failed on the %s of %s", what, tracing.name)


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
    """A trace ended: its listeners, then its record (made once) to every function observer; an
    error that stops the trace is raised once all of them know."""
    records = function_records
    record = None
    if records is not None and not getattr(_unrecorded, "active", False):
        try:
            record = records.on_trace(tracing)
        except Exception:
            log_internal_error("recording a function trace", "the trace goes on unrecorded")
    stop = _tell_each(trace_listeners, lambda pair: pair[0](tracing), _listener_failed(tracing, "trace"))
    if record is not None:
        stop = _tell_each(function_observers, lambda observer: observer.record_function(record),
                          _logged("reporting a function trace")) or stop
    if stop is not None:
        raise stop


def _on_function_complete(tracing: Any) -> None:
    """The call that traced returned: its listeners, then its record and the record's `MissCost` to
    every function observer that takes costs (`record_function_cost(record, cost)`)."""
    records = function_records
    completed = None
    if records is not None and not getattr(_unrecorded, "active", False):
        try:
            completed = records.on_complete(tracing)
        except Exception:
            log_internal_error("recording the cost of a function trace", "its phases go unrecorded")
    completions = [on_complete for _, on_complete in trace_listeners if on_complete is not None]
    _tell_each(completions, lambda on_complete: on_complete(tracing), _listener_failed(tracing, "costs"))
    if completed is not None:
        record, cost = completed
        _tell_each([observer.record_function_cost for observer in function_observers
                    if hasattr(observer, "record_function_cost")],
                   lambda record_cost: record_cost(record, cost),
                   _logged("reporting the cost of a function trace"))


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

    def tell(observer: Any) -> None:
        nonlocal event
        record_run = getattr(observer, "record_run", None)
        if record_run is not None:
            record_run(layer, run)
            return
        if event is None:
            event = event_of(run)
        observer.record_event(layer, event)

    stop = _tell_each(observers, tell, _logged("reporting a run"))
    if stop is not None:
        raise stop


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
