"""The recorder: wraps a layer's `call` so each body run becomes a `TraceEvent`.

One wrapped `call` per layer class. A run opens a `BodyRun` on this thread's stack
(`runs`; side effects consult it), gathers the signals `classify_run` needs, runs
the user's body untouched, then logs the run and applies the retrace budget. The
eager fast path only counts the run, unless `log_eager` is set. A wrapped `build`
hands the variables it creates, when Keras builds the layer in a call, to that
call's run.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from traceguard import _compat
from traceguard._compat import signature_of
from traceguard._core.errors import RetraceError
from traceguard._core.events import TraceEvent
from traceguard._core.kinds import RETRACE_KINDS
from traceguard._core.verdicts import EarlierTrace, RunContext
from traceguard._record import layer_state as _layer_state
from traceguard._record import observers as _observers
from traceguard._record.internal_errors import log_internal_error
from traceguard._record.layer_state import STATE_ATTRIBUTE, LayerTraceState
from traceguard._record.log import budget_message, event_of
from traceguard._record.runs import BodyRun, EagerRun, _local, active_runs
from traceguard._record.sites import UNASKED, eager_site, site_of
from traceguard._record.variables import made_in_trace

# torch: Dynamo traces the recorded `call` into the frame it compiles, and the recorder's
# bookkeeping (stack frames, locks) would break that graph and add frames of its own (measured
# with torch 2.14.1: 297 frames compiled for a 2-layer `fit`). Under Dynamo the body runs alone,
# after `note_trace_run()`, which tells `_record_trace_run` of the run at trace time, outside the
# graph (`_compat/torch/layers`); the frame's compile is recorded whole (`_compat/torch/traces`).
if _compat.IS_TORCH:
    from traceguard._compat.torch.backend import dynamo_compiling as _dynamo_compiling
    from traceguard._compat.torch.layers import note_trace_run as _note_trace_run
    from traceguard._compat.torch.layers import set_recorder as _set_trace_run_recorder
else:
    _dynamo_compiling = _note_trace_run = _set_trace_run_recorder = None


# --- the wrapped call --------------------------------------------------------------
def record_body(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps an unbound `call` so every run of its body is recorded."""

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        eager = _compat.executing_eagerly() or _runs_uncached()
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
                if state.variables.built:  # Built in this call, which no event records.
                    state.variables.forget()
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
    return _compat.wrap_call(original, _body_alone_under_dynamo(call, original))


def _body_alone_under_dynamo(recorded: Callable[..., Any], original: Callable[..., Any]) -> Any:
    """`recorded`; on torch, a `call` whose body alone Dynamo sees as it traces a frame (see above)."""
    if _dynamo_compiling is None:
        return recorded

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        if _dynamo_compiling():
            _note_trace_run()  # Its locals `layer`, `args` and `kwargs` are read at trace time.
            return original(layer, *args, **kwargs)
        return recorded(layer, *args, **kwargs)

    call.__traceguard_original__ = original  # type: ignore[attr-defined]
    return call


def _record_trace_run(layer: Any, args: tuple, kwargs: dict, tracing: Any) -> None:
    """torch: one run of a recorded `call` that Dynamo traced into a frame, told at trace time
    with its arguments as Dynamo holds them (fake tensors); recorded as a run in that frame's
    compile, as a run in a `tf.function` trace is."""
    state = layer.__dict__.get(STATE_ATTRIBUTE)
    if state is None and _layer_state.plain_layer_state is not None:
        state = _layer_state.plain_layer_state(layer)
    original = getattr(type(layer).call, "__traceguard_original__", None)
    if state is None or original is None:
        return
    run = _begin(layer, state, original, args, kwargs, False)
    if run.index is not None:
        _finish(run, None)


if _set_trace_run_recorder is not None:
    _set_trace_run_recorder(_record_trace_run)


def _runs_uncached() -> bool:
    """Whether the body runs under transformations that keep no cache (JAX's autodiff or `vmap`
    outside any `jax.jit`, as Keras's `jit_compile=False` steps): no trace, counted as eager."""
    transformations = _compat.uncached_transformation()
    if transformations is None:
        return False
    if _observers.observers:
        _observers.notify_uncached(transformations)
    return True


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
            state.variables.note_build(layer, before, created)
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
            site = run.site = _local.__dict__.get("eager_site") or eager_site()
        else:
            graph = _compat.default_graph()
            site = _local.__dict__.get("site")  # The thread's last graph's, most runs'.
            if site is None or site.graph() is not graph or \
                    (site.records() if site.records is not None else None) is not _observers.function_records:
                site = site_of(graph)
            run.site = site
        run.signature = signature_of(original, args, kwargs)
        if site.context is RunContext.GRAPH:
            # Tuples replaced whole by `remember`: taken as they are, no copy, no lock.
            run.earlier = earlier = state.traces_by_function.get(site.function_key, ())
            run.same_origin = () if site.origin is None else state.traces_by_origin.get(site.origin, ())
            # A retrace's hint names the Keras method: asked when the run may be one, its own or
            # its function's (a layer's first run in a new step object is a retrace of its code).
            if site.keras_call is UNASKED and (earlier or site.enclosing is not None
                                               and site.enclosing.kind in RETRACE_KINDS):
                site.keras_call = _compat.keras_call(graph)
            # In a trace on TensorFlow the creation watch below sees every variable the body
            # creates; on JAX the layer's variables before and after the run tell.
            run.variables_before = _compat.layer_variables(layer) if _compat.IS_JAX else None
        else:
            run.earlier = run.same_origin = ()
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
        ledger = state.variables
        if run.deferred_mark is not None:
            created = ledger.created_in_symbolic_pass(run)
        elif run.variables_before is None and not run.created:  # Most traces: only `build`'s, if any.
            created = ledger.built
            if created:
                ledger.forget()
        else:
            created = ledger.created_in_run(run)
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
        made_here = bool(created) if ledger.sees_build else (
            made_in_trace(run, layer) if site.in_creation_phase else None)
        # Several runs in one trace (replicas, a layer called twice) count as one trace.
        # `EarlierTrace(...)`, without the named tuple's `__new__`, a Python call.
        earlier = tuple.__new__(EarlierTrace,
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


def _enforce_budget(state: LayerTraceState, event: TraceEvent) -> None:
    try:
        message = budget_message(state.log.owner, state.settings.max_traces,
                                       state.graph_traces, event)
        stacklevel = _compat.user_stacklevel()
    except Exception:
        log_internal_error("reporting a trace over max_traces")
        return
    if state.settings.on_retrace == "raise":
        raise RetraceError(message)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)
