"""Where a body run happens: its site, shared by the runs in one graph.

A graph is built in one place (a trace, Keras's symbolic pass, a SavedModel save)
by one trace, so its runs share one answer to "where": eager, symbolic, save or a
graph trace; which function, in which phase; the function trace recorded around it;
the replica and the Keras method. The recorder keeps the last graph's site per
thread and asks `_compat` again only for another graph.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from traceguard import _compat
from traceguard._core.keras_names import is_keras_step_function
from traceguard._core.verdicts import EnclosingTrace, RunContext
from traceguard._record import observers as _observers
from traceguard._record.runs import UNASKED, _local


class RunSite:
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
        self.keras_call = UNASKED
        self.defers_variables = self.context is RunContext.SYMBOLIC and _compat.defers_variables()
        self.thread = thread_name()  # Sites are per thread.

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


class EagerSite:
    """The place of this thread's eager runs that are logged (`log_eager=True`)."""

    context = RunContext.EAGER
    frame_name = function = function_key = in_creation_phase = origin = trace = None
    function_trace = enclosing = control_flow = replica = keras_call = None
    keras_step = defers_variables = False

    def __init__(self) -> None:
        self.thread = thread_name()


def eager_site() -> EagerSite:
    site = _local.eager_site = EagerSite()
    return site


def site_of(graph: Any) -> RunSite:
    """The `RunSite` of `graph` when this thread's last one (`_local.site`, which `_begin` tries
    first) is not it; on JAX, where there is no graph (None), a new one each run.

    Keras 3 runs each layer's symbolic pass in a scratch graph of its own: those nested
    in one trace share a site, as their runs share the trace.
    """
    records = _observers.function_records
    if graph is None:
        return RunSite(graph, records)
    outer = _compat.scratch_graph_outer(graph)
    if outer is None:
        site = _local.site = RunSite(graph, records)
        return site
    try:
        site = _local.scratch_site
        if site.graph() is outer and (site.records() if site.records is not None else None) is records:
            return site
    except AttributeError:
        pass
    site = RunSite(graph, records)
    if site.context is RunContext.SYMBOLIC and site.frame_name is not None:  # In a trace: shared.
        site.graph = weakref.ref(outer)
        _local.scratch_site = site
    return site


def thread_name() -> str:
    """This thread's name, looked up once per thread."""
    try:
        return _local.thread_name
    except AttributeError:
        _local.thread_name = threading.current_thread().name
        return _local.thread_name
