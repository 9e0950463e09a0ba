"""The recorder: wraps a layer's `call` so each body run becomes a `TraceEvent`.

One wrapped `call` per layer class. A run opens a `BodyRun` on a thread-local
stack (side effects consult it), gathers the signals `classify_run` needs,
runs the user's body untouched, then logs the event and applies the retrace
budget. The eager fast path only counts the run, unless `log_eager` is set.
A wrapped `build` hands the variables it creates, when Keras builds the layer in
a call, to that call's run.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import operator
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from traceguard import _compat
from traceguard._classify import EarlierTrace, RunContext, classify_run, same_trace
from traceguard._errors import RetraceError
from traceguard._events import GRAPH_TRACE_KINDS, TraceEvent, TraceKind
from traceguard._log import TraceLog
from traceguard._signature import Signature, format_signature, signature_of

logger = logging.getLogger("traceguard")

STATE_ATTRIBUTE = "_traceguard_state"
ON_EXCESS_MODES = ("warn", "raise")
# Per layer, how many tf.functions and how many traces of each classification remembers.
_REMEMBERED_FUNCTIONS = 64
_REMEMBERED_TRACES = 64

_local = threading.local()

# Set while `watch()` or `explain()` instruments plain Keras layer classes: returns
# the state that records a layer without traceguard state of its own (or None).
plain_layer_state: Callable[[Any], LayerTraceState | None] | None = None
# Reports (`watch()`, `explain()`, `TraceMonitor`, ...) told of every run; see `add_observer`.
_observers: tuple[Any, ...] = ()
_observers_lock = threading.Lock()


def add_observer(observer: Any) -> None:
    """Tells `observer` of every run from now on.

    `observer._record_event(layer, event)` receives each logged `TraceEvent`,
    `observer._record_eager(layer)` each eager run (logged or not). Both may be
    called from any thread; what they raise is logged once and swallowed.
    """
    global _observers
    with _observers_lock:
        if all(o is not observer for o in _observers):
            _observers = (*_observers, observer)


def remove_observer(observer: Any) -> None:
    global _observers
    with _observers_lock:
        _observers = tuple(o for o in _observers if o is not observer)


@contextlib.contextmanager
def observing(observer: Any) -> Iterator[Any]:
    """Tells `observer` of every run inside the block, however the block ends."""
    add_observer(observer)
    try:
        yield observer
    finally:
        remove_observer(observer)


def active_runs() -> list[BodyRun]:
    """This thread's body runs in progress, innermost last."""
    try:
        return _local.runs
    except AttributeError:
        _local.runs = []
        return _local.runs


@dataclasses.dataclass(frozen=True)
class TraceSettings:
    """A layer's traceguard constructor arguments, checked where they are given."""

    trace_log_size: int = 1000
    log_eager: bool = False
    max_traces: int | None = None
    on_excess: str = "warn"

    def __post_init__(self) -> None:
        if isinstance(self.trace_log_size, bool) or not isinstance(self.trace_log_size, int) \
                or self.trace_log_size < 1:
            raise ValueError("`trace_log_size` expects a positive integer. "
                             f"Received: trace_log_size={self.trace_log_size!r}")
        if not isinstance(self.log_eager, bool):
            raise ValueError(f"`log_eager` expects a bool. Received: log_eager={self.log_eager!r}")
        if self.max_traces is not None and (
            isinstance(self.max_traces, bool) or not isinstance(self.max_traces, int)
            or self.max_traces < 0
        ):
            raise ValueError("`max_traces` expects None or a non-negative integer. "
                             f"Received: max_traces={self.max_traces!r}")
        if self.on_excess not in ON_EXCESS_MODES:
            raise ValueError(f"`on_excess` expects one of {', '.join(ON_EXCESS_MODES)}. "
                             f"Received: on_excess={self.on_excess!r}")

    def as_config(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class EagerRun:
    """An eager run of a `call` body in progress on this thread, counted and not logged.

    Every eager step of a layer makes one, so it holds only what the code running
    inside the body may ask: which layer runs, and its input signature.
    """

    __slots__ = ("layer", "state", "original", "args", "kwargs", "signature")
    index: int | None = None  # Never logged.
    kind = TraceKind.EAGER

    def __init__(self, layer: Any, state: LayerTraceState, original: Callable[..., Any],
                 args: tuple, kwargs: dict) -> None:
        self.layer = layer
        self.state = state
        self.original = original
        self.args = args
        self.kwargs = kwargs

    def input_signature(self) -> Signature:
        """The run's signature; computed on first use when the run is not logged."""
        try:
            return self.signature
        except AttributeError:
            self.signature = signature_of(self.original, self.args, self.kwargs)
            return self.signature


class BodyRun(EagerRun):
    """A run of a `call` body in progress on this thread that may become an event."""

    __slots__ = ("index", "kind", "context", "function", "function_key", "origin",
                 "in_creation_phase", "trace", "messages", "started",
                 "variables_before", "created", "creation_watch", "verdict",
                 # Filled in as the run finishes; `event()` makes its TraceEvent from them.
                 "duration", "created_variables", "thread", "replica", "error", "_event")

    def __init__(self, layer: Any, state: LayerTraceState, original: Callable[..., Any],
                 args: tuple, kwargs: dict) -> None:
        super().__init__(layer, state, original, args, kwargs)
        self.index: int | None = None  # None: the run is not logged.
        self.kind = TraceKind.EAGER
        self.messages: list[str] = []
        self.created: list[Any] = []  # The TF variables created while the body runs.
        self.creation_watch: Any = None

    def event(self) -> TraceEvent:
        """The finished run's `TraceEvent`, made on first use (the log is read rarely)."""
        try:
            return self._event
        except AttributeError:
            verdict = self.verdict
            self._event = TraceEvent(
                index=self.index, kind=verdict.kind, layer=self.state.log.owner,
                function=self.function, signature=format_signature(self.signature),
                changes=verdict.changes, created_variables=self.created_variables,
                reason=verdict.reason, hint=verdict.hint, timestamp=self.started,
                duration_s=self.duration, thread=self.thread, replica=self.replica,
                messages=tuple(self.messages), error=self.error,
            )
            return self._event


class LayerTraceState:
    """Everything traceguard keeps on one layer; never Keras-tracked, never saved."""

    def __init__(self, settings: TraceSettings, owner: str) -> None:
        self.settings = settings
        self.log = TraceLog(settings.trace_log_size, owner=owner)
        self.lock = threading.Lock()
        self.graph_traces = 0
        # Paths of the variables `build` just created as Keras built the layer in a call:
        # the next run of the body, that call's, takes them.
        self.built_variables: tuple[str, ...] = ()
        self._memory: collections.OrderedDict[Any, collections.deque[EarlierTrace]] = \
            collections.OrderedDict()
        # The same traces by what their tf.function wraps, to recognise a tf.function made anew.
        self._by_origin: collections.OrderedDict[Any, collections.deque[EarlierTrace]] = \
            collections.OrderedDict()

    # Copies (deepcopy, pickle, clone) start with an empty log of their own.
    def __deepcopy__(self, memo: dict) -> LayerTraceState:
        return LayerTraceState(self.settings, self.log.owner)

    def __reduce__(self) -> tuple:
        return (LayerTraceState, (self.settings, self.log.owner))

    def earlier_traces(self, key: Any) -> list[EarlierTrace]:
        with self.lock:
            return list(self._memory.get(key, ()))

    def earlier_traces_of_origin(self, origin: Any) -> list[EarlierTrace]:
        with self.lock:
            return list(self._by_origin.get(origin, ())) if origin is not None else []

    def remember(self, key: Any, trace: EarlierTrace, origin: Any = None) -> bool:
        """Remembers a trace of the function `key`; False when its trace was already seen."""
        with self.lock:
            new_trace = _append_bounded(self._memory, key, trace)
            if origin is not None:
                _append_bounded(self._by_origin, origin, trace)
            return new_trace


def _append_bounded(memory: collections.OrderedDict, key: Any, trace: EarlierTrace) -> bool:
    """Appends `trace` under `key` unless its trace has this signature already; False if seen."""
    traces = memory.pop(key, None)
    if traces is None:
        traces = collections.deque(maxlen=_REMEMBERED_TRACES)
        if len(memory) >= _REMEMBERED_FUNCTIONS:
            memory.popitem(last=False)
    memory[key] = traces
    seen = [] if trace.trace is None else [
        past for past in traces if same_trace(past.trace, trace.trace)]
    if not any(past.signature == trace.signature for past in seen):
        traces.append(trace)
    return not seen


# --- the wrapped call --------------------------------------------------------------
def record_body(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps an unbound `call` so every run of its body is recorded."""

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        eager = _compat.executing_eagerly()
        body = original if eager else _graph_body(layer, call, original, sys._getframe(1))
        state = layer.__dict__.get(STATE_ATTRIBUTE)
        if state is None and plain_layer_state is not None:
            state = plain_layer_state(layer)
        try:
            runs = _local.runs
        except AttributeError:
            runs = active_runs()
        if state is None or (runs and runs[-1].layer is layer):
            # Not initialised yet, or `super().call()` of an already recorded run.
            return body(layer, *args, **kwargs)
        if eager and not state.settings.log_eager:
            # The eager fast path, every step of an eager loop: count the run and keep
            # it on the stack (side effects read it); nothing is logged.
            try:
                state.log._count_eager_call()
                if _observers:
                    _notify("_record_eager", layer)
                if state.built_variables:  # Built in this call, which no event records.
                    state.built_variables = ()
            except Exception:  # Bookkeeping must never break the user's call.
                _log_internal_error("counting an eager run")
            runs.append(EagerRun(layer, state, original, args, kwargs))
            try:
                return original(layer, *args, **kwargs)
            finally:
                runs.pop()
        run = _begin(layer, state, original, args, kwargs, eager)
        runs.append(run)
        try:
            result = body(layer, *args, **kwargs)
        except BaseException as error:
            runs.pop()
            if run.index is not None:
                _finish(run, error)
            raise
        runs.pop()
        if run.index is not None:
            _finish(run, None)
        return result

    call.__traceguard_original__ = original  # type: ignore[attr-defined]
    return _compat.wrap_call(original, call)


def record_build(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps an unbound `build` so the variables it creates go to the run that follows.

    Only when Keras's `__call__` builds the layer: its body runs next on this thread.
    A direct `layer.build(shape)` creates variables outside any run.
    """

    def build(layer: Any, *args: Any, **kwargs: Any) -> Any:
        state = layer.__dict__.get(STATE_ATTRIBUTE)
        if state is None or not _compat.built_by_keras_call(layer, sys._getframe(1)):
            return original(layer, *args, **kwargs)
        try:
            before = {id(v) for v in _compat.layer_variables(layer)}
            created: list[Any] = []
            watch = _compat.variable_creation_watch(created.append)
            watch.__enter__()
        except Exception:  # Bookkeeping must never break the user's build.
            _log_internal_error("watching variable creation")
            return original(layer, *args, **kwargs)
        try:
            result = original(layer, *args, **kwargs)
        finally:
            _stop_watching(watch)
        try:
            current = _compat.layer_variables(layer)
            state.built_variables = tuple(_new_variable_paths(current, before, created))
        except Exception:
            _log_internal_error("watching variable creation")
        return result

    build.__traceguard_original__ = original  # type: ignore[attr-defined]
    return _compat.wrap_build(original, build)


def _graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
                caller: Any) -> Callable[..., Any]:
    """`original`, converted by AutoGraph where Keras would have converted it."""
    try:
        return _compat.graph_body(layer, wrapper, original, caller)
    except Exception:  # Bookkeeping must never break the user's call.
        _log_internal_error("choosing whether AutoGraph converts `call`")
        return original


def is_recorded(function: Any) -> bool:
    return hasattr(function, "__traceguard_original__")


def _begin(layer: Any, state: LayerTraceState, original: Callable[..., Any],
           args: tuple, kwargs: dict, eager: bool) -> BodyRun:
    run = BodyRun(layer, state, original, args, kwargs)
    try:
        graph = _compat.default_graph()
        if eager:  # With `log_eager=True`: the run becomes an event.
            _count_eager_run(layer, state)
            run.context = RunContext.EAGER
            run.function = run.function_key = run.in_creation_phase = run.origin = frame = None
            run.trace = None
        else:
            # First: it keeps what every run of the trace shares, `in_save_context()` too.
            frame = _compat.enclosing_tf_function(graph)
            if _compat.in_symbolic_build():
                run.context = RunContext.SYMBOLIC
            elif _compat.in_save_context(graph):
                run.context = RunContext.SAVE
            else:
                run.context = RunContext.GRAPH
            run.function = frame.name if frame else _compat.current_graph_name()
            run.function_key = frame.key if frame else run.function
            run.in_creation_phase = frame.creates_variables if frame else None
            run.origin = frame.origin if frame else None
            run.trace = frame.trace if frame else None
        run.signature = signature_of(original, args, kwargs)
        earlier: list[EarlierTrace] = []
        same_origin: list[EarlierTrace] = []
        if run.context is RunContext.GRAPH:
            earlier = state.earlier_traces(run.function_key)
            # Only for a function's first trace (runs of the trace in progress aside):
            # earlier traces of tf.functions wrapping the same code.
            if all(same_trace(past.trace, run.trace) for past in earlier):
                same_origin = state.earlier_traces_of_origin(run.origin)
        run.verdict = classify_run(run.context, run.signature, frame.name if frame else None,
                                   run.in_creation_phase, earlier, same_origin, run.trace,
                                   _compat.BACKEND)
        run.kind = run.verdict.kind
        run.replica = _compat.current_replica(graph)
        run.variables_before = _compat.layer_variables(layer)
        run.index = state.log._reserve_index()
        run.started = time.time()
    except Exception:  # Bookkeeping must never break the user's call.
        _log_internal_error("starting to record a run")
        run.index = None
        return run
    try:
        # What the body creates, a `tf.Variable` the layer does not track included.
        watch = _compat.variable_creation_watch(run.created.append, graph)
        watch.__enter__()
        run.creation_watch = watch
    except Exception:
        _log_internal_error("watching variable creation")
    return run


def _stop_watching(watch: Any) -> None:
    try:
        # Left as if no error occurred: the user's exception is not thrown into TF's scope.
        watch.__exit__(None, None, None)
    except Exception:
        _log_internal_error("watching variable creation")


def _count_eager_run(layer: Any, state: LayerTraceState) -> None:
    try:
        state.log._count_eager_call()
        if _observers:
            _notify("_record_eager", layer)
    except Exception:  # Bookkeeping must never break the user's call.
        _log_internal_error("counting an eager run")


def _finish(run: BodyRun, error: BaseException | None) -> None:
    state = run.state
    if run.creation_watch is not None:
        _stop_watching(run.creation_watch)
    try:
        run.duration = time.time() - run.started
        run.created_variables = _created_variables(run)
        run.thread = threading.current_thread().name
        run.error = None if error is None else repr(error)
        layer = run.layer
        # The log keeps the run: drop what would keep tensors and variables alive.
        run.layer = run.args = run.kwargs = run.variables_before = run.created = None
        run.creation_watch = None
        if _observers:
            event = run.event()
            state.log._append(event)
            _notify("_record_event", layer, event)
        else:
            state.log._append(run)
        if run.kind not in GRAPH_TRACE_KINDS or error is not None:
            return
        # Several runs in one trace (replicas, a layer called twice) count as one trace.
        if not state.remember(run.function_key,
                              EarlierTrace(run.signature, bool(run.in_creation_phase), run.trace),
                              run.origin):
            return
        with state.lock:
            state.graph_traces += 1
            excess = (state.settings.max_traces is not None
                      and state.graph_traces > state.settings.max_traces)
    except Exception:
        _log_internal_error("finishing the record of a run")
        return
    if excess:
        _enforce_budget(state, run.event())


def _notify(method: str, *args: Any) -> None:
    for observer in _observers:
        try:
            getattr(observer, method)(*args)
        except Exception:
            _log_internal_error("reporting a run")


def _created_variables(run: BodyRun) -> tuple[str, ...]:
    """Variables created in the run: by Keras building the layer just before, and in the body."""
    state = run.state
    built, state.built_variables = state.built_variables, ()
    current = _compat.layer_variables(run.layer)
    before = run.variables_before
    if run.context is RunContext.SYMBOLIC:
        # Keras 3 on TF creates their `tf.Variable`s after this run, before the next one.
        state.built_variables = _compat.deferred_variable_paths(current)
    # Most runs create nothing: the same variables, in the same order, and no TF variable.
    if not run.created and len(current) == len(before) and all(map(operator.is_, current, before)):
        return built
    in_body = _new_variable_paths(current, {id(v) for v in before}, run.created)
    return (*built, *[path for path in in_body if path not in built])


def _new_variable_paths(current: list[Any], before: set[int], created: list[Any]) -> list[str]:
    """The TF variables in `created`, in creation order, then those of `current` not in `before`.

    `current` is the layer's variables, `before` the ids of those it had before.
    """
    paths = []
    if created:
        by_backing = {id(_compat.backing_variable(v)): _compat.variable_path(v) for v in current}
        paths = [by_backing.get(id(v)) or _compat.variable_path(v) for v in created]
    paths += [_compat.variable_path(v) for v in current if id(v) not in before]
    return list(dict.fromkeys(paths))


def _enforce_budget(state: LayerTraceState, event: TraceEvent) -> None:
    try:
        from traceguard._report import format_budget_excess

        message = format_budget_excess(state.log.owner, state.settings.max_traces,
                                       state.graph_traces, event)
        stacklevel = _compat.user_stacklevel()
    except Exception:
        _log_internal_error("reporting a trace over max_traces")
        return
    if state.settings.on_excess == "raise":
        raise RetraceError(message)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)


_reported_errors: set[str] = set()
_reported_errors_lock = threading.Lock()


def _log_internal_error(where: str) -> None:
    """Logs the exception being handled once per `where` (threads may fail at once)."""
    with _reported_errors_lock:
        first = where not in _reported_errors
        _reported_errors.add(where)
    if first:
        logger.exception("traceguard failed while %s; the call goes on unrecorded "
                         "(reported once). Please report this with %s.",
                         where, _compat.describe_versions())
