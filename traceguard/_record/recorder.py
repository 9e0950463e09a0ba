"""The recorder: wraps a layer's `call` so each body run becomes a `TraceEvent`.

One wrapped `call` per layer class. A run opens a `BodyRun` on this thread's stack
(`runs`; side effects consult it), gathers the signals `classify_run` needs, runs
the user's body untouched, then logs the run and applies the retrace budget. The
eager fast path only counts the run, unless `log_eager` is set. A wrapped `build`
hands the variables it creates, when Keras builds the layer in a call, to that
call's run.
"""

from __future__ import annotations

import operator
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from traceguard import _compat
from traceguard._compat import signature_of
from traceguard._core.errors import RetraceError
from traceguard._core.events import TraceEvent
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.verdicts import EarlierTrace, EnclosingTrace, RunContext
from traceguard._record import layer_state as _layer_state
from traceguard._record import observers as _observers
from traceguard._record.internal_errors import log_internal_error
from traceguard._record.layer_state import STATE_ATTRIBUTE, LayerTraceState
from traceguard._record.log import budget_message, event_of
from traceguard._record.runs import BodyRun, EagerRun, _local, active_runs


# --- the wrapped call --------------------------------------------------------------
def record_body(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps an unbound `call` so every run of its body is recorded."""

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        eager = _compat.executing_eagerly()
        caller = None if eager else sys._getframe(1)
        body = original if eager else _graph_body(layer, call, original, caller)
        state = layer.__dict__.get(STATE_ATTRIBUTE)
        if state is None and _layer_state.plain_layer_state is not None:
            state = _layer_state.plain_layer_state(layer)
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
                state.count_eager_call()
                if _observers.observers:
                    _observers.notify_eager(layer)
                if state.built_variables:  # Built in this call, which no event records.
                    state.built_variables = state.deferred_variables = ()
            except Exception:  # Bookkeeping must never break the user's call.
                log_internal_error("counting an eager run")
            runs.append(EagerRun(layer, state, original, args, kwargs))
            try:
                return original(layer, *args, **kwargs)
            finally:
                runs.pop()
        run = _begin(layer, state, original, args, kwargs, eager, caller)
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
            log_internal_error("watching variable creation")
            return original(layer, *args, **kwargs)
        try:
            result = original(layer, *args, **kwargs)
        finally:
            _stop_watching(watch)
        try:
            current = _compat.layer_variables(layer)
            state.built_variables = tuple(_new_variable_paths(current, before, created))
            state.deferred_variables = ()  # Which of them wait is not known: the next run walks.
        except Exception:
            log_internal_error("watching variable creation")
        return result

    build.__traceguard_original__ = original  # type: ignore[attr-defined]
    return _compat.wrap_build(original, build)


def _graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
                caller: Any) -> Callable[..., Any]:
    """`original`, converted by AutoGraph where Keras would have converted it."""
    try:
        return _compat.graph_body(layer, wrapper, original, caller)
    except Exception:  # Bookkeeping must never break the user's call.
        log_internal_error("choosing whether AutoGraph converts `call`")
        return original


def is_recorded(function: Any) -> bool:
    return hasattr(function, "__traceguard_original__")


def _begin(layer: Any, state: LayerTraceState, original: Callable[..., Any],
           args: tuple, kwargs: dict, eager: bool, caller: Any = None) -> BodyRun:
    """Starts the record of a run: what classification needs, taken now; the verdict is made
    when first asked (`BodyRun.verdict`). `caller`: the frame that called `call`, in a graph."""
    run = BodyRun(layer, state, original, args, kwargs)
    try:
        if eager:  # With `log_eager=True`: the run becomes an event.
            _count_eager_run(layer, state)
            graph = None
            site = run.site = _local.__dict__.get("eager_site") or _eager_site()
        else:
            graph = _compat.default_graph()
            site = _local.__dict__.get("site")  # The thread's last graph's, most runs'.
            if site is None or site.graph() is not graph or \
                    (site.records() if site.records is not None else None) is not _observers.function_records:
                site = _site_of(graph)
            run.site = site
        run.signature = signature_of(original, args, kwargs)
        if site.context is RunContext.GRAPH:
            # Tuples replaced whole by `remember`: taken as they are, no copy, no lock.
            run.earlier = earlier = state.traces_by_function.get(site.function_key, ())
            run.same_origin = () if site.origin is None else state.traces_by_origin.get(site.origin, ())
            run.traced_before = state.graph_traces > 0
            if earlier and site.keras_call is _UNASKED:  # A retrace's hint names the Keras method.
                site.keras_call = _compat.keras_call(graph)
            # In a trace on TensorFlow the creation watch below sees every variable the body
            # creates; on JAX the layer's variables before and after the run tell.
            run.variables_before = _compat.layer_variables(layer) if _compat.IS_JAX else None
        else:
            run.earlier = run.same_origin = ()
            run.traced_before = False
            # Which of Keras's symbolic passes runs it: its frames are gone by the time the log is read.
            run.symbolic_pass = _compat.symbolic_pass(type(layer), caller) \
                if site.context is RunContext.SYMBOLIC else None
            if site.defers_variables:  # Keras 3's symbolic pass lists the variables it makes.
                run.deferred_mark = _compat.deferred_variables_mark()
            else:  # Elsewhere the layer's variables before and after the run tell.
                run.variables_before = _compat.layer_variables(layer)
        run.index = state.reserve_index()
        run.started = time.time()
    except Exception:  # Bookkeeping must never break the user's call.
        log_internal_error("starting to record a run")
        run.index = None
        return run
    if site.defers_variables:
        # Keras 3's symbolic pass makes no `tf.Variable`: it lists its weights for later
        # (`deferred_mark`), and one the body makes itself is seen by its trace's run.
        return run
    try:
        # What the body creates, a `tf.Variable` the layer does not track included.
        run.creation_watch = _compat.start_creation_watch(run.created.append, graph)
    except Exception:
        log_internal_error("watching variable creation")
    return run


_UNASKED = object()  # A site's `keras_call` before a run needs it.
_new_tuple = tuple.__new__


class _Site:
    """What every run in one graph shares: where it runs, and the function being traced.

    A graph is built in one place (a trace, Keras's symbolic pass, a SavedModel
    save) by one trace, so its runs (twenty, in a twenty-layer model) share one
    answer: the last graph's is kept per thread, and asked again only for another
    graph, or once `watch()` starts or stops recording function traces. Each run
    keeps its site, for its event.
    """

    __slots__ = ("graph", "records", "frame_name", "context", "function", "function_key",
                 "in_creation_phase", "origin", "trace", "function_trace", "enclosing", "keras_step",
                 "control_flow", "replica", "keras_call", "defers_variables", "thread")

    def __init__(self, graph: Any, records: Any) -> None:
        self.graph = None if graph is None else weakref.ref(graph)
        # By weak reference: a thread's last site must not keep a finished `watch()`'s records.
        self.records = None if records is None else weakref.ref(records)
        # First: it keeps what every run of the trace shares, `in_save_context()` too.
        frame = _compat.enclosing_tf_function(graph)
        if _compat.in_symbolic_build():
            self.context = RunContext.SYMBOLIC
        elif _compat.in_save_context(graph):
            self.context = RunContext.SAVE
        else:
            self.context = RunContext.GRAPH
        self.frame_name = frame.name if frame else None
        self.function = frame.name if frame else _compat.current_graph_name()
        self.function_key = frame.key if frame else self.function
        self.in_creation_phase = frame.creates_variables if frame else None
        self.origin = frame.origin if frame else None
        self.trace = frame.trace if frame else None
        self.control_flow = _compat.control_flow_of(graph)
        self.enclosing, library = self._enclosing_trace(graph, records)
        # Keras's own step: by its name, and, when the function's trace is seen, by its code's
        # place (a user's `train_step` is not Keras's).
        self.keras_step = is_keras_step_function(self.function) and library is not False
        # A replica's runs are made by its own thread, whose sites are its own.
        self.replica = _compat.current_replica(graph)
        self.keras_call = _UNASKED
        self.defers_variables = self.context is RunContext.SYMBOLIC and _compat.defers_variables()
        self.thread = _thread_name()  # Sites are per thread.

    def _enclosing_trace(self, graph: Any, records: Any) -> tuple[EnclosingTrace | None, bool | None]:
        """What the whole-function trace the runs are part of differs in, and whether the function
        is the library's, while function traces are recorded (an observer such as `watch()`
        listens); links the runs to that trace. `(None, None)` when not known."""
        self.function_trace = None
        if records is None or self.context is not RunContext.GRAPH:
            return None, None
        tracing = _compat.tracing_of_graph(graph) if graph is not None else _compat.innermost_tracing()
        if tracing is None:
            return None, None
        self.function_trace = tracing.serial
        return records.preview(tracing), tracing.library_function


class _EagerSite:
    """The place of this thread's eager runs that are logged (`log_eager=True`)."""

    context = RunContext.EAGER
    frame_name = function = function_key = in_creation_phase = origin = trace = None
    function_trace = enclosing = control_flow = replica = keras_call = None
    keras_step = defers_variables = False

    def __init__(self) -> None:
        self.thread = _thread_name()


def _eager_site() -> _EagerSite:
    site = _local.eager_site = _EagerSite()
    return site


def _site_of(graph: Any) -> _Site:
    """The `_Site` of `graph` when this thread's last one (`_local.site`, which `_begin` tries
    first) is not it; on JAX, where there is no graph (None), a new one each run.

    Keras 3 runs each layer's symbolic pass in a scratch graph of its own: those nested
    in one trace share a site, as their runs share the trace.
    """
    records = _observers.function_records
    if graph is None:
        return _Site(graph, records)
    outer = _compat.scratch_graph_outer(graph)
    if outer is None:
        site = _local.site = _Site(graph, records)
        return site
    try:
        site = _local.scratch_site
        if site.graph() is outer and (site.records() if site.records is not None else None) is records:
            return site  # type: ignore[no-any-return]
    except AttributeError:
        pass
    site = _Site(graph, records)
    if site.context is RunContext.SYMBOLIC and site.frame_name is not None:  # In a trace: shared.
        site.graph = weakref.ref(outer)
        _local.scratch_site = site
    return site


def _stop_watching(watch: Any) -> None:
    try:
        # Left as if no error occurred: the user's exception is not thrown into TF's scope.
        watch.__exit__(None, None, None)
    except Exception:
        log_internal_error("watching variable creation")


def _count_eager_run(layer: Any, state: LayerTraceState) -> None:
    try:
        state.count_eager_call()
        if _observers.observers:
            _observers.notify_eager(layer)
    except Exception:  # Bookkeeping must never break the user's call.
        log_internal_error("counting an eager run")


def _finish(run: BodyRun, error: BaseException | None) -> None:
    state = run.state
    if run.creation_watch is not None:
        try:
            _compat.stop_creation_watch(run.creation_watch)
        except Exception:
            log_internal_error("watching variable creation")
    try:
        run.duration = time.time() - run.started
        if run.deferred_mark is not None:
            created = _created_in_symbolic_pass(run, state)
        elif run.variables_before is None and not run.created:  # Most traces: only `build`'s, if any.
            created = state.built_variables
            if created:
                state.built_variables = state.deferred_variables = ()
        else:
            created = _created_variables(run)
        run.created_variables = created
        site = run.site
        run.error = None if error is None else repr(error)
        layer = run.layer
        # The log keeps the run: drop what would keep tensors, variables and the layer's state alive.
        run.owner = state.log.owner
        run.layer = run.args = run.kwargs = run.variables_before = run.created = run.state = None
        run.deferred_mark = None
        run.creation_watch = None
        # The event is made when first read: the log and most observers keep the run.
        state.append(run)
        if _observers.observers:
            _observers.notify_run(layer, run)
        # Only a trace counts (its kind is one of `GRAPH_TRACE_KINDS`), and one that succeeded.
        if site.context is not RunContext.GRAPH or error is not None:
            return
        # Whether the layer's weights came from this trace: when its `build` is not seen, by their kind.
        made_here = bool(created) if state.sees_build else (
            _made_in_trace(run, layer) if site.in_creation_phase else None)
        # Several runs in one trace (replicas, a layer called twice) count as one trace.
        # `EarlierTrace(...)`, without the named tuple's `__new__`, a Python call.
        earlier = _new_tuple(EarlierTrace,
                             (run.signature, bool(site.in_creation_phase), site.trace, made_here))
        traces = state.remember(site.function_key, earlier, site.origin)
        budget = state.settings.max_traces
        excess = budget is not None and traces > budget
    except Exception as failure:
        if _compat.stops_trace(failure):  # An observer's verdict (`no_retrace`): the trace fails.
            raise
        log_internal_error("finishing the record of a run")
        return
    if excess:
        _enforce_budget(state, event_of(run))


def _made_in_trace(run: BodyRun, layer: Any) -> bool:
    """Whether the layer's weights came from this trace, when its `build` is not seen."""
    return bool(run.created_variables) or _compat.any_created_in_a_trace(_compat.layer_variables(layer))


def _thread_name() -> str:
    """This thread's name, looked up once per thread."""
    try:
        return _local.thread_name  # type: ignore[no-any-return]
    except AttributeError:
        _local.thread_name = threading.current_thread().name
        return _local.thread_name  # type: ignore[no-any-return]


def _created_variables(run: BodyRun) -> tuple[str, ...]:
    """Variables created in the run: by Keras building the layer just before, and in the body.

    For a run whose variables were walked, or a trace that created a TF variable;
    `_created_in_symbolic_pass` for Keras 3's symbolic pass."""
    state = run.state
    built, state.built_variables = state.built_variables, ()
    before = run.variables_before
    state.deferred_variables = ()
    if before is None:  # Every variable created was seen (`_begin`).
        if not run.created:
            return built
        current = _compat.layer_variables(run.layer)
        in_body = _new_variable_paths(current, {id(v) for v in current}, run.created)
        return (*built, *[path for path in in_body if path not in built])
    current = _compat.layer_variables(run.layer)
    # Most runs create nothing: the same variables, in the same order, and no TF variable.
    unchanged = not run.created and len(current) == len(before) and all(map(operator.is_, current, before))
    if run.site.context is RunContext.SYMBOLIC and (built or not unchanged or not state.sees_build):
        # Keras 3 on TF creates their `tf.Variable`s after this run, before the next one.
        state.built_variables = _compat.deferred_variable_paths(current)
    if unchanged:
        return built
    in_body = _new_variable_paths(current, {id(v) for v in before}, run.created)
    return (*built, *[path for path in in_body if path not in built])


def _created_in_symbolic_pass(run: BodyRun, state: LayerTraceState) -> tuple[str, ...]:
    """`_created_variables` for a run in Keras 3's symbolic pass, which lists the variables it makes.

    The variables made while the body ran (and by a `build` just before it, when
    seen), and the paths of the layer's variables whose `tf.Variable` Keras creates
    after the run, which go to the next run: those made in it, and those the
    previous run left waiting that still wait. What an earlier pass left is not
    this run's: a symbolic run creates no `tf.Variable` (Keras creates them as its
    outermost pass ends), so those wait for a trace, or were made between the runs
    (a functional model's build pass, then its output pass). Keras's list says what
    the run made; the layer's variables are walked only when a build before the run
    was seen by its paths, or not seen at all.
    """
    built, state.built_variables = state.built_variables, ()
    new = _compat.deferred_since(run.deferred_mark)
    carried, state.deferred_variables = state.deferred_variables, ()
    if new is not None and state.sees_build and (carried or not built):
        if not built and not run.created:
            if not new:
                return built  # Nothing made, nothing waiting: most runs.
            if not carried:  # A first pass: what it made is what waits.
                state.deferred_variables = tuple(new)
                paths = _compat.variable_paths(new)
                state.built_variables = tuple(paths)
                return tuple(dict.fromkeys(paths))
        waiting = [v for v in carried if _compat.backing_variable(v) is None] + new
        state.deferred_variables = tuple(waiting)
        state.built_variables = tuple(_compat.variable_paths(waiting))
        # With `carried`, `built` is what the previous pass left, not a build's.
        claimed = () if carried else built
        in_body = _new_variable_paths([], set(), [*run.created, *new])
        return (*claimed, *[path for path in in_body if path not in claimed])
    current = _compat.layer_variables(run.layer)
    state.built_variables = _compat.deferred_variable_paths(current)
    # A seen build's paths are this run's; unseen (a plain layer), `built` is what the previous pass left.
    claimed = built if state.sees_build else ()
    if new is None:  # The pass ended in the run: what it made is not known.
        return claimed
    made = {id(v) for v in new}
    in_body = _new_variable_paths(current, {id(v) for v in current if id(v) not in made}, run.created)
    return (*claimed, *[path for path in in_body if path not in claimed])


def _new_variable_paths(current: list[Any], before: set[int], created: list[Any]) -> list[str]:
    """The TF variables in `created`, in creation order, then those of `current` not in `before`.

    `current` is the layer's variables, `before` the ids of those it had before.
    """
    paths = []
    if created:
        by_backing = dict(zip([id(_compat.backing_variable(v)) for v in current],
                              _compat.variable_paths(current)))
        paths = [by_backing.get(id(v)) or _compat.variable_path(v) for v in created]
    paths += _compat.variable_paths([v for v in current if id(v) not in before])
    return list(dict.fromkeys(paths))


def _enforce_budget(state: LayerTraceState, event: TraceEvent) -> None:
    try:
        message = budget_message(state.log.owner, state.settings.max_traces,
                                       state.graph_traces, event)
        stacklevel = _compat.user_stacklevel()
    except Exception:
        log_internal_error("reporting a trace over max_traces")
        return
    if state.settings.on_excess == "raise":
        raise RetraceError(message)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)
