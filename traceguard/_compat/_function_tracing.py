"""Every trace of a whole function (`tf.function`, `jax.jit`), handed to one sink while connected.

The backend's hook (`tensorflow.traces` on TensorFlow, `jax.traces` on JAX) is patched
in when the sink connects and removed, restoring the originals exactly, when it
disconnects: with no sink, no hook exists, nothing costs anything, and traced graphs
are what TensorFlow alone makes. While installed, the hook runs only when the
backend traces (a cache miss), never on a call that hits.

Each trace is a `FunctionTracing`, made when the trace starts and handed to the sink
(`_record.observers`, the one fan-out to observers and listeners) when it ends, on the
tracing thread: `sink.on_trace(tracing)`. Its `arguments` hold the call's values
(tensors too) for that call only; they are dropped afterwards, and the records keep
specs, never the values. `tracing_of_graph(graph)` answers, while a trace runs, which
one a graph belongs to: a layer run made during it links to it by `serial`.

What the miss cost after the trace (building, lowering, compiling, the first call;
see `_function_calls`) is known when the call that traced returns: each trace is
then *completed*, handed to `sink.on_complete` with its `phases` final. A
trace made outside a call the hooks see (`get_concrete_function`, a `tf.data`
function) is completed as it ends. An XLA compilation without a trace (a new input
shape of a relaxed concrete function) is reported the same way, as a
`FunctionTracing` whose `compilation` is true.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
import weakref
from typing import Any, Protocol

from traceguard._compat import _calling_code, _function_calls
from traceguard._compat._backend import IS_JAX
from traceguard._compat._keras_calls import keras_call
from traceguard._core.functions import BODY_ORIGIN
from traceguard._core.keras_names import KerasCall, OptimizerBuild

# Where a trace's function came from: `tf.function` (a user's, or Keras's own
# steps), a `tf.data` transformation's function, `jax.jit`, or a function JAX traces
# below `jax.jit` with the same cache (a `lax.scan` body, a `lax.cond` branch, ...; `jax.bodies`).
# `torch.compile`: a Dynamo frame compile (`torch/traces`).
ORIGINS = ("tf.function", "tf.data", "jax.jit", BODY_ORIGIN, "torch.compile")
# The trace phases of a `tf.function` (see `tensorflow.function`): the first trace may
# create variables; once it did, later traces may not.
PHASES = ("variable_creation", "no_variable_creation")

_log = logging.getLogger("traceguard")


@dataclasses.dataclass(eq=False)
class FunctionTracing:
    """One trace of a whole function: made when it starts, complete when it ends."""

    serial: int  # 1, 2, ... in this process: the trace's identity.
    parent: int | None  # The serial of the trace it runs inside (a nested function), if any.
    origin: str  # One of ORIGINS.
    name: str  # The backend's name for the function (`tf.function`'s `name`).
    function: Any  # A weak reference (hashed) to the tf.function / jitted function, or None.
    function_id: int  # id() of that object (of the Python function on JAX).
    python_function: Any  # The user's function: what the tf.function wraps, a map function.
    arguments: dict[str, Any] | None  # Name -> value, `self` dropped; None after the sink.
    start: float  # time.perf_counter() when the trace started ...
    end: float | None = None  # ... and when it ended.
    saving: bool = False  # Traced to save (SavedModel, Keras `export`).
    phase: str | None = None  # One of PHASES, or None (JAX; a function without them).
    created_variables: tuple[str, ...] = ()  # The names of variables this trace created.
    # For a retrace that lifting made: the optimizers that own the first trace's variables.
    optimizer_builds: tuple[OptimizerBuild, ...] = ()
    graph: Any = None  # A weak reference to the FuncGraph built (None on JAX).
    call_site: tuple[str, int] | None = None  # The first user frame: (file, line).
    caller: str | None = None  # That frame's function name.
    entry: str | None = None  # The library function the user called (`Model.fit`), if any.
    # Traced because `get_concrete_function` asked for it (by the user or a library), not on a
    # call's cache miss: TensorFlow's retracing warning does not count it.
    requested: bool = False
    # A function restored by `tf.saved_model.load` (TensorFlow's `RestoredFunction`): the user's
    # saved function, though its Python body is TensorFlow's dispatcher to the saved graphs.
    restored: bool = False
    relaxed: bool | None = None  # TF traced a generalised signature (`reduce_retracing`).
    raised: bool = False  # The trace raised an exception.
    function_text: str | None = None  # repr() of the function, as TF's retracing warning shows it.
    # The Python function is TensorFlow's, Keras's or JAX's own (Keras's steps and
    # its data adapters' `tf.data` functions), not the user's.
    library_function: bool = False
    # The Keras `fit`/`evaluate`/`predict`/`*_on_batch` it traced under, and its data.
    keras_call: KerasCall | None = None
    # The serial of an earlier trace of the same function object (and phase) that
    # built the same graph: a retrace that changed nothing (see `_graph_fingerprint`).
    same_graph_as: int | None = None
    # The call's cache key as the backend compares it (`tensorflow.keys`, `jax.keys`): specs by
    # argument name; None when the hook could not read it (the records read `arguments` then).
    signature: dict[Any, Any] | None = None
    # The context the backend keyed the trace by besides the arguments (JAX: `config.trace_context()`;
    # TensorFlow: the `FunctionContext`'s fields), as (name, value) pairs compared with `==`; None
    # when not read.
    context: tuple[tuple[str, Any], ...] | None = None
    # JAX: the arguments the call passed by keyword, sorted (`jax.jit` keys `(args, kwargs)`);
    # None when not read (TensorFlow binds every argument to its parameter first).
    keywords: tuple[str, ...] | None = None
    # JAX: where each argument's arrays are placed (`jax.keys.placements`), which the compiled
    # executable is keyed by; None when not read.
    placements: dict[Any, str] | None = None
    # With `relaxed`: the key TensorFlow traced instead (a dimension made None), as specs.
    relaxed_signature: dict[Any, Any] | None = None
    # "dataset" when the user's calling frame holds a `tf.data` dataset or iterator, else None.
    data: str | None = None
    # Not a trace: XLA compiled the function's concrete function for new input shapes.
    compilation: bool = False
    # The graph runs XLA: `jit_compile=True`, or it calls a function that has it (TensorFlow).
    xla: bool = False
    # The names of the `jit_compile=True` functions its graph calls (TensorFlow).
    xla_functions: tuple[str, ...] = ()
    # Seconds per phase (`_function_calls.PHASES`) measured so far: `trace` when it ends.
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    call: Any = None  # The `_function_calls.Call` it was made in, while that call runs.
    call_start: float | None = None  # time.perf_counter() at that call's entry.
    miss: float | None = None  # That call's seconds, on the last trace the call made.
    persistent_cache: str | None = None  # One of `_function_calls.CACHE_OUTCOMES`, or None.
    cache_saved: float | None = None  # Seconds the persistent cache saved (a hit).
    # The call's arguments as compiled (TensorFlow, XLA: a Keras step's batch), for the records.
    compiled_arguments: dict[str, Any] | None = None
    completed: bool = False
    # A `jax.body` trace: what JAX traced it for (`debug_info.traced_for`: "scan", "while_body",
    # "cond", ...), and the name of the function it is a body of (the one that called the control flow).
    traced_for: str | None = None
    body_of: str | None = None
    # torch: why Dynamo recompiled, in torch's words (one per cache entry, most recent first), and
    # the first of them as changes in the user's terms; None where the backend gives no reason.
    backend_reasons: tuple[str, ...] = ()
    backend_changes: tuple[Any, ...] | None = None
    # torch: the graph breaks in this compile, as (torch's kind of break, file, line).
    graph_breaks: tuple[tuple[str, str, int], ...] = ()
    # torch: a frame Dynamo compiled after a graph break (`torch_dynamo_resume_in_<name>_at_<line>`):
    # the (file, line) of that break, and a weak reference to the stand-in of the function it is part
    # of, whose name, `def` site and object number its record takes. None for any other trace.
    resumed_after: tuple[str, int] | None = None
    part_of: Any = None

    @property
    def duration(self) -> float:
        return 0.0 if self.end is None else self.end - self.start


# --- the sink ---------------------------------------------------------------------------
class Sink(Protocol):
    """Who is handed every function trace: `_record.observers`, the one fan-out to observers."""

    def on_trace(self, tracing: FunctionTracing) -> None:
        """As the trace ends; an error with a true `stops_trace` fails the trace (`no_retrace`)."""

    def on_complete(self, tracing: FunctionTracing) -> None:
        """When the call that made the trace returns, its `phases` final."""


_lock = threading.RLock()
_sink: Sink | None = None
_local = threading.local()  # .stack: the traces running on this thread, innermost last.
_serial = 0
# The traces running now, by id() of their graph: `tracing_in_progress` finds a graph's.
_running_by_graph: dict[int, FunctionTracing] = {}


# The backend's hook module (`tensorflow.traces` or `jax.traces`: `install`, `uninstall`,
# `is_installed`), set by the backend module when it is imported.
_hook: Any = None


def set_hook(hook: Any) -> None:
    """Makes `hook` the backend's hook, installed while a sink is connected."""
    global _hook
    _hook = hook


def _backend() -> Any:
    if _hook is None:
        raise RuntimeError(f"No function-trace hook for the {'JAX' if IS_JAX else 'TensorFlow'} backend.")
    return _hook


def connect(sink: Sink) -> None:
    """Hands every function trace to `sink` from now on, installing the backend's hooks.

    One sink at a time: `_record.observers` tells each of its observers and listeners.
    """
    global _sink
    with _lock:
        if _sink is not None:
            raise RuntimeError(f"A function-trace sink is connected already: {_sink!r}. Received: {sink!r}")
        _backend().install()
        _sink = sink


def disconnect() -> None:
    """Removes the sink and the backend's hooks, restoring the originals exactly."""
    global _sink
    with _lock:
        if _sink is not None:
            _sink = None
            _backend().uninstall()


def is_installed() -> bool:
    """Whether the backend's hook is patched in now."""
    return _backend().is_installed()


def begin(origin: str, name: str, function: Any, python_function: Any,
          arguments: dict[str, Any], graph: Any = None, compilation: bool = False,
          in_call: bool = True) -> FunctionTracing:
    """A trace starts on this thread: its record, now in progress. Called by the hooks.

    With `compilation`, an XLA compilation without a trace instead (see `FunctionTracing`).
    Without `in_call`, it takes no part in the call in progress (a JAX body traced inside
    a `jax.jit` trace: the call's lowering and compilation are the enclosing trace's), and
    is completed as it ends.
    """
    global _serial
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    parent = stack[-1].serial if stack else None
    if parent is None and graph is not None:
        # A trace started by another thread for this one's (`MirroredStrategy` replicas).
        outer = tracing_of_graph(getattr(graph, "outer_graph", None))
        parent = None if outer is None else outer.serial
    try:
        reference = None if function is None else weakref.ref(function)
        hash(reference)  # Kept by the reference: it keys dicts after the function dies.
    except TypeError:  # Not weakly referenceable, or not hashable.
        reference = None
    with _lock:
        _serial += 1
        serial = _serial
    tracing = FunctionTracing(
        serial, parent, origin, name, reference,
        id(python_function if function is None else function), python_function, arguments,
        time.perf_counter(), graph=None if graph is None else weakref.ref(graph), compilation=compilation)
    call = _function_calls.current_call() if in_call else None
    if call is not None:
        tracing.call = call
        call.tracings.append(tracing)
    code = getattr(getattr(python_function, "__func__", python_function), "__code__", None)
    tracing.library_function = code is not None and _calling_code.is_library(code.co_filename)
    if tracing.library_function:  # A Keras step: under which method, with which data.
        tracing.keras_call = keras_call(sys._getframe(1))
    stack.append(tracing)
    if graph is not None:
        _running_by_graph[id(graph)] = tracing
    return tracing


def end(tracing: FunctionTracing, graph: Any = None) -> None:
    """The trace ends: hands it to the sink, then drops its argument values.

    Completes it too when no call the hooks see made it (else its call does, as it returns).
    """
    tracing.end = time.perf_counter()
    if not tracing.compilation and "trace" not in tracing.phases:  # torch's hook reads its own phases.
        tracing.phases["trace"] = tracing.end - tracing.start
    stack = _local.stack
    if stack and stack[-1] is tracing:
        stack.pop()
    elif tracing in stack:
        stack.remove(tracing)
    if graph is not None:
        _running_by_graph.pop(id(graph), None)
    verdict: BaseException | None = None
    sink = _sink
    try:
        if sink is not None:
            sink.on_trace(tracing)
    except Exception as error:
        if stops_trace(error):  # Meant for the user (`no_retrace`): the trace fails.
            verdict = error
        else:  # The sink's failure must not fail the user's trace.
            _log.exception("The function-trace sink failed on the trace of %s", tracing.name)
    finally:
        tracing.arguments = None
        tracing.python_function = None
        if tracing.call is None:
            complete(tracing)
    if verdict is not None:
        raise verdict


def discard(tracing: FunctionTracing, graph: Any = None) -> None:
    """A call the hook saw did not trace after all (the backend's inner cache had it): it is
    dropped from this thread's traces in progress, and the sink never hears of it."""
    stack = getattr(_local, "stack", None) or []
    if tracing in stack:
        stack.remove(tracing)
    if graph is not None:
        _running_by_graph.pop(id(graph), None)
    call = tracing.call
    if call is not None and tracing in call.tracings:  # Its call's costs go to no trace.
        call.tracings.remove(tracing)
    tracing.call = None
    tracing.arguments = None
    tracing.python_function = None
def complete(tracing: FunctionTracing) -> None:
    """The call that made `tracing` returned: hands it, its phases final, to the sink. Once per
    tracing; the sink's failure is logged."""
    if tracing.completed:
        return
    tracing.completed = True
    tracing.call = None
    sink = _sink
    try:
        if sink is not None:
            sink.on_complete(tracing)
    except Exception:
        _log.exception("The function-trace sink failed on the costs of %s", tracing.name)
    tracing.compiled_arguments = None


def stops_trace(error: BaseException) -> bool:
    """Whether an observer's `error` is meant for the user: it fails the trace it was told of.

    Such errors (traceguard's `RetraceError` from a `no_retrace` block) set a true
    `stops_trace` attribute; any other error of an observer is logged and dropped.
    The hooks raise it from the backend's tracing call, before the traced graph
    is cached: the next call traces again.
    """
    return getattr(error, "stops_trace", False) is True


def tracing_of_graph(graph: Any) -> FunctionTracing | None:
    """The function trace that `graph` belongs to, while that trace runs.

    A graph built inside a trace (a `tf.while_loop` body, a `tf.cond` branch,
    Keras's scratch graph, a nested function's graph) belongs to the trace of the
    nearest graph outward (`outer_graph`) that a function trace builds. None
    outside any trace, and while no sink is connected.
    """
    while graph is not None:
        tracing = _running_by_graph.get(id(graph))
        if tracing is not None:
            return tracing
        graph = getattr(graph, "outer_graph", None)
    return None


def innermost_tracing() -> FunctionTracing | None:
    """The innermost whole-function trace running on this thread (on JAX, the one to ask): a
    body JAX traces within it (`BODY_ORIGIN`) is part of it."""
    stack = getattr(_local, "stack", None)
    for tracing in reversed(stack or ()):
        if tracing.origin != BODY_ORIGIN:
            return tracing
    return None


def running_traces() -> tuple[FunctionTracing, ...]:
    """This thread's function traces in progress, outermost first."""
    return tuple(getattr(_local, "stack", ()))


_function_calls.set_completion(complete)
