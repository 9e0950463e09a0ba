"""Which `tf.function` is tracing, in which phase, and whether it traces to save.

Found by walking the Python stack to TensorFlow's own frames, once per trace (the
answer is kept for the graph the trace builds), and across the threads
`MirroredStrategy` runs replicas in. Part of the TensorFlow backend (see
`tensorflow.backend`); imported only when Keras runs on TensorFlow.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/distribute/mirrored_run.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/polymorphic_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/saved_model/function_deserialization.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/saved_model/save_context.py
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from tensorflow.python.distribute import mirrored_run as _mirrored_run
from tensorflow.python.eager.polymorphic_function import polymorphic_function as _tf_function
from tensorflow.python.saved_model import function_deserialization as _function_deserialization
from tensorflow.python.saved_model import save_context as _save_context

from traceguard._compat import _flavors, _keras_calls
from traceguard._compat._flavors import internal_missing
from traceguard._compat._frames import TfFunctionFrame
from traceguard._compat.tensorflow.context import current_graph_name, default_graph, in_symbolic_build
from traceguard._core.keras_names import KerasCall


# --- tf.function's trace phases --------------------------------------------------
# `Function._initialize` traces the first call through a `wrapped_fn` closure whose
# `scope` is `variable_capturing_scope`; once that trace created variables, every
# later trace runs `wrapped_fn` with `scope=invalid_creator_scope` (variable
# creation forbidden). `wrapped_fn` runs inside the FuncGraph being built and keeps
# it in its `default_graph` local: that graph identifies one trace. See `_call` in
# tensorflow/python/eager/polymorphic_function/polymorphic_function.py: the closure is
# made by `_generate_scoped_tracing_options` since TF 2.14, by `_compiler_with_scope`
# in TF 2.12-2.13.
def _find_wrapped_fn_code() -> Any:
    for factory_name in ("_generate_scoped_tracing_options", "_compiler_with_scope"):
        factory = getattr(_tf_function.Function, factory_name, None)
        codes = [c for c in getattr(getattr(factory, "__code__", None), "co_consts", ())
                 if getattr(c, "co_name", None) == "wrapped_fn"]
        if len(codes) == 1 and "scope" in codes[0].co_freevars \
                and "default_graph" in codes[0].co_varnames:
            return codes[0]
    raise internal_missing("Function._generate_scoped_tracing_options.<wrapped_fn>")


_WRAPPED_FN_CODE = _find_wrapped_fn_code()
# The `Function` methods above `wrapped_fn` on the stack, whose `self` is the tf.function.
_CALL_CODE = getattr(getattr(_tf_function.Function, "_call", None), "__code__", None)
_CONCRETE_FUNCTION_CODE = getattr(getattr(
    _tf_function.Function, "_get_concrete_function_garbage_collected", None), "__code__", None)
if _CALL_CODE is None or _CONCRETE_FUNCTION_CODE is None:
    raise internal_missing("Function._call and Function._get_concrete_function_garbage_collected")
_NO_VARIABLE_CREATION_SCOPE = "invalid_creator_scope"


# --- MirroredStrategy replica threads ------------------------------------------------
# `MirroredStrategy.run` runs each replica's function in its own
# `_MirroredReplicaThread` while the calling thread waits in
# `_call_for_each_replica`, whose `coord` local is each replica thread's `coord`
# (tensorflow/python/distribute/mirrored_run.py). The tf.function whose trace runs
# the replicas is on the waiting thread's stack, so a replica's stack continues there.
_REPLICA_THREAD_TYPE: Any = getattr(_mirrored_run, "_MirroredReplicaThread", None)
_CALL_FOR_EACH_REPLICA_CODE = getattr(getattr(_mirrored_run, "_call_for_each_replica", None),
                                      "__code__", None)
if _REPLICA_THREAD_TYPE is None or _CALL_FOR_EACH_REPLICA_CODE is None \
        or "coord" not in _CALL_FOR_EACH_REPLICA_CODE.co_varnames \
        or "coord" not in _REPLICA_THREAD_TYPE.__init__.__code__.co_names:
    raise internal_missing("mirrored_run._call_for_each_replica and _MirroredReplicaThread.coord")


def _replica_caller(thread: threading.Thread) -> tuple[Any, threading.Thread | None]:
    """The `_call_for_each_replica` frame waiting for replica `thread`, and its thread."""
    coord = getattr(thread, "coord", None)
    for ident, frame in sys._current_frames().items():
        while frame is not None:
            if frame.f_code is _CALL_FOR_EACH_REPLICA_CODE and frame.f_locals.get("coord") is coord:
                caller = next((t for t in threading.enumerate() if t.ident == ident), None)
                return frame, caller
            frame = frame.f_back
    return None, None


def _caller_thread_frame(thread: threading.Thread | None) -> tuple[Any, threading.Thread | None]:
    """Where a walk up the stack goes on past the top of `thread`'s (None: this thread's).

    In a replica thread, in the frames of the thread it runs for, and that thread; else
    nowhere: `(None, None)`.
    """
    thread = threading.current_thread() if thread is None else thread
    return _replica_caller(thread) if isinstance(thread, _REPLICA_THREAD_TYPE) else (None, None)


# --- the function being traced ------------------------------------------------------
def function_origin(function: Any) -> Any:
    """A key equal for tf.functions wrapping the same Python function, or None.

    The same function is the same code with the same closure: the same `def`
    or lambda re-evaluated in a loop, with the same captured objects. Code
    alone is not enough: Keras 3.15 makes the train, test and predict steps
    from one closure in `TensorFlowTrainer._make_function`, so they share code.
    Captured objects are compared by identity through weak references, so an
    object that died never matches a new one at the same address.
    """
    wrapped = getattr(function, "python_function", None)  # Public: "The python function wrapped".
    if wrapped is None:
        return None
    wrapped = getattr(wrapped, "__func__", wrapped)  # A bound method: its function.
    code = getattr(wrapped, "__code__", None)
    try:
        if code is None:  # A callable object, such as a layer.
            return _identity_key(wrapped)
        cells = tuple(_identity_key(cell.cell_contents) for cell in wrapped.__closure__ or ())
    except (TypeError, ValueError):  # Unhashable, or an empty cell.
        return None
    return code, cells


def _identity_key(value: Any) -> Any:
    try:
        reference = weakref.ref(value)
    except TypeError:  # Numbers, strings, tuples: compared by value.
        hash(value)
        return ("value", value)
    hash(reference)
    return reference


_UNKNOWN = object()


class _TraceFacts:
    """What every run of one trace sees the same: its tf.function, whether Keras exports."""

    __slots__ = ("function", "exporting", "keras_call")

    def __init__(self, function: TfFunctionFrame) -> None:
        self.function = function
        self.exporting: bool | None = None  # Filled in by the first `in_save_context()`.
        self.keras_call: Any = _UNKNOWN  # Filled in by the first `keras_call()`.


# The stack above `wrapped_fn` stays as it is while `wrapped_fn` builds its FuncGraph
# (its `default_graph` local), and every trace builds a graph of its own: runs in that
# graph share one answer, kept here until the graph dies. Only a trace's first run
# walks the stack.
_facts_of_trace: weakref.WeakKeyDictionary[Any, _TraceFacts] = weakref.WeakKeyDictionary()
# Keras 3 runs `call` on symbolic inputs in a FuncGraph it names `scratch_graph`,
# `scratch_graph_1`, ... inside the graph being traced (`compute_output_spec` in
# keras/src/backend/tensorflow/core.py, Keras 3.0 to 3.15).
_KERAS_SCRATCH_GRAPH_PREFIX = "scratch_graph"


def scratch_graph_outer(graph: Any) -> Any:
    """The graph a Keras 3 scratch graph (a symbolic pass's) is nested in; None for other graphs.

    Keras 3 runs each layer's symbolic pass in a new `FuncGraph` named so
    (keras/src/backend/tensorflow/core.py, `compute_output_spec`), nested in the graph
    it was made in: a trace's, when a model is built in its first trace.
    """
    if not getattr(graph, "name", "").startswith(_KERAS_SCRATCH_GRAPH_PREFIX):
        return None
    return getattr(graph, "outer_graph", None)


def _known_facts(graph: Any) -> _TraceFacts | None:
    """The facts of the trace whose graph is `graph`, or holds Keras's scratch `graph`."""
    facts = _facts_of_trace.get(graph)
    if facts is None and getattr(graph, "name", "").startswith(_KERAS_SCRATCH_GRAPH_PREFIX) \
            and in_symbolic_build():
        # Not for other nested graphs: a tf.function traced in one has a graph of its own.
        outer = getattr(graph, "outer_graph", None)
        facts = None if outer is None else _facts_of_trace.get(outer)
    return facts


def enclosing_tf_function(graph: Any = None) -> TfFunctionFrame | None:
    """Returns the innermost tf.function being traced by this thread, if any.

    Walks the Python stack (and, in a `MirroredStrategy` replica thread, the
    stack of the thread that started the replica) on a trace's first run, so
    call it only off the eager fast path. `graph`: the default graph, if known.
    """
    facts = _known_facts(default_graph() if graph is None else graph)
    if facts is not None:
        return facts.function
    function, trace_graph = _find_enclosing_tf_function(sys._getframe(1))
    if trace_graph is not None:
        _facts_of_trace[trace_graph] = _TraceFacts(function)
    return function


def _find_enclosing_tf_function(start: Any) -> tuple[TfFunctionFrame | None, Any]:
    """The innermost tf.function traced on the stack from frame `start`, and its trace's graph.

    The graph is None unless the `tf.function` itself was found.
    """
    phase: bool | None = None
    graph: Any = None
    frame, thread = start, None
    while frame is not None:  # A plain loop: no generator frame to resume at each step.
        code = frame.f_code
        if code is _WRAPPED_FN_CODE and phase is None:
            local = frame.f_locals
            phase = getattr(local.get("scope"), "__name__", "") != _NO_VARIABLE_CREATION_SCOPE
            graph = local.get("default_graph")
        # Compared by identity: `in` a set would hash each frame's code, its constants too.
        elif (code is _CALL_CODE or code is _CONCRETE_FUNCTION_CODE) and phase is not None:
            function = frame.f_locals.get("self")
            try:
                key: Any = weakref.ref(function)
            except TypeError:
                key = function.name
            trace = None if graph is None else weakref.ref(graph)
            return TfFunctionFrame(key, function.name, phase, function_origin(function), trace), graph
        frame = frame.f_back
        if frame is None:
            frame, thread = _caller_thread_frame(thread)
    if phase is None:
        return None, None
    trace = None if graph is None else weakref.ref(graph)
    return TfFunctionFrame(current_graph_name(), current_graph_name(), phase, trace=trace), None


def keras_call(graph: Any = None) -> KerasCall | None:
    """The Keras method whose step is being traced (see `_keras_calls`), once per trace.

    `graph`: the default graph, if known.
    """
    facts = _known_facts(default_graph() if graph is None else graph)
    if facts is not None and facts.keras_call is not _UNKNOWN:
        return facts.keras_call
    found = _keras_calls.keras_call(sys._getframe(1))
    if found is None:  # In a replica thread: the stack of the thread that started it.
        frame, _ = _caller_thread_frame(None)
        found = None if frame is None else _keras_calls.keras_call(frame)
    if facts is not None:
        facts.keras_call = found
    return found


# --- saving ---------------------------------------------------------------------------
def in_save_context(graph: Any = None) -> bool:
    """True while SavedModel saving (or `model.export`) traces functions.

    `graph`: the default graph, if known.
    """
    if _save_context.in_save_context():
        return True
    export_dirs = _flavors._KERAS_EXPORT_DIRS
    if not export_dirs:
        return False
    # Keras 3 `model.export` traces `__call__` and `serving_default` before it
    # enters TF's save context (measured on Keras 3.15), Keras 2's `__call__`
    # (tf_keras 2.21, Keras 2.12-2.15): recognise its frames, once per trace (see
    # `_facts_of_trace`).
    facts = _facts_of_trace.get(default_graph() if graph is None else graph)
    if facts is not None and facts.exporting is not None:
        return facts.exporting
    exporting = False
    frame, thread = sys._getframe(1), None
    while frame is not None:
        if frame.f_code.co_filename.startswith(export_dirs):
            exporting = True
            break
        frame = frame.f_back
        if frame is None:
            frame, thread = _caller_thread_frame(thread)
    if facts is not None:
        facts.exporting = exporting
    return exporting


# `tf.saved_model.load` restores each saved tf.function as a `RestoredFunction`, a `Function` whose
# Python body dispatches to the concrete functions saved (saved_model/function_deserialization.py,
# TF 2.12-2.21); it cannot trace a signature that was not saved.
_RESTORED_FUNCTION = getattr(_function_deserialization, "RestoredFunction", None)
if not isinstance(_RESTORED_FUNCTION, type) or not issubclass(_RESTORED_FUNCTION, _tf_function.Function):
    raise internal_missing("saved_model.function_deserialization.RestoredFunction")


def is_restored(function: Any) -> bool:
    """Whether `function` is a tf.function restored by `tf.saved_model.load`."""
    return isinstance(function, _RESTORED_FUNCTION)
