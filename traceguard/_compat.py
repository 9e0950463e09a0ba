"""The one place that knows TensorFlow and Keras internals and versions.

Everything else in traceguard asks this module named questions
(`in_symbolic_build()`, `enclosing_tf_function()`, ...). It decides once, at
import, which Keras is active, as Keras itself picks its backend layer at the
top of `keras/src/layers/layer.py`. Every private attribute relied on is looked
up here, at import, and `tests/test_compat.py` checks each one, so a TF or Keras
release that moves one fails loudly instead of misclassifying silently.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf
from tensorflow.python.distribute import mirrored_run as _mirrored_run
from tensorflow.python.eager.polymorphic_function import polymorphic_function as _tf_function
from tensorflow.python.ops import control_flow_util as _control_flow_util
from tensorflow.python.saved_model import save_context as _save_context

# `import keras` on TF >= 2.16 is Keras 3 unless the user opted into Keras 2 with
# TF_USE_LEGACY_KERAS=1, in which case `tf.keras` is `tf_keras`. traceguard's
# base class follows `tf.keras` (https://keras.io/getting_started/#tensorflow--keras-2-backwards-compatibility).
_LEGACY_REQUESTED = os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true", "yes")

try:
    import keras as _keras3

    IS_KERAS_3 = int(_keras3.__version__.split(".")[0]) >= 3 and not _LEGACY_REQUESTED
except ImportError:  # TF 2.12-2.15 without the keras package; handled with Keras 2.
    IS_KERAS_3 = False

if IS_KERAS_3:
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope as _in_symbolic_scope

    keras = _keras3
    KERAS_FLAVOR = "keras3"
    _KERAS_EXPORT_DIR = os.path.dirname(_keras3.src.export.__file__) + os.sep
else:  # pragma: no cover - exercised by the Keras 2 CI jobs.
    raise ImportError(
        "traceguard currently supports Keras 3 on TensorFlow. Installed: "
        f"TensorFlow {tf.__version__}; TF_USE_LEGACY_KERAS="
        f"{os.environ.get('TF_USE_LEGACY_KERAS')!r}."
    )

LayerBase = keras.layers.Layer


def describe_versions() -> str:
    """The installed stack, for error messages and reports."""
    return f"TensorFlow {tf.__version__}, Keras {keras.__version__} ({KERAS_FLAVOR})"


def _internal_missing(what: str) -> RuntimeError:
    return RuntimeError(
        f"traceguard relies on {what}, which this installation does not have "
        f"({describe_versions()}). Please report this with the versions above."
    )


# --- tf.function's trace phases --------------------------------------------------
# `Function._initialize` traces the first call through a `wrapped_fn` closure whose
# `scope` is `variable_capturing_scope`; once that trace created variables, every
# later trace runs `wrapped_fn` with `scope=invalid_creator_scope` (variable
# creation forbidden). `wrapped_fn` runs inside the FuncGraph being built and keeps
# it in its `default_graph` local: that graph identifies one trace. See
# `_generate_scoped_tracing_options` and `_call` in
# tensorflow/python/eager/polymorphic_function/polymorphic_function.py.
def _find_wrapped_fn_code() -> Any:
    factory = getattr(_tf_function.Function, "_generate_scoped_tracing_options", None)
    codes = [c for c in getattr(getattr(factory, "__code__", None), "co_consts", ())
             if getattr(c, "co_name", None) == "wrapped_fn"]
    if len(codes) != 1 or "scope" not in codes[0].co_freevars \
            or "default_graph" not in codes[0].co_varnames:
        raise _internal_missing("Function._generate_scoped_tracing_options.<wrapped_fn>")
    return codes[0]


_WRAPPED_FN_CODE = _find_wrapped_fn_code()
_FUNCTION_METHOD_CODES = frozenset(
    getattr(_tf_function.Function, name).__code__
    for name in ("_call", "_get_concrete_function_garbage_collected")
)
_NO_VARIABLE_CREATION_SCOPE = "invalid_creator_scope"


# --- MirroredStrategy replica threads ------------------------------------------------
# `MirroredStrategy.run` runs each replica's function in its own
# `_MirroredReplicaThread` while the calling thread waits in
# `_call_for_each_replica`, whose `coord` local is each replica thread's `coord`
# (tensorflow/python/distribute/mirrored_run.py). The tf.function whose trace runs
# the replicas is on the waiting thread's stack, so a replica's stack continues there.
_REPLICA_THREAD_TYPE = getattr(_mirrored_run, "_MirroredReplicaThread", None)
_CALL_FOR_EACH_REPLICA_CODE = getattr(getattr(_mirrored_run, "_call_for_each_replica", None),
                                      "__code__", None)
if _REPLICA_THREAD_TYPE is None or _CALL_FOR_EACH_REPLICA_CODE is None \
        or "coord" not in _CALL_FOR_EACH_REPLICA_CODE.co_varnames \
        or "coord" not in _REPLICA_THREAD_TYPE.__init__.__code__.co_names:
    raise _internal_missing("mirrored_run._call_for_each_replica and _MirroredReplicaThread.coord")


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


def calling_frames(frame: Any) -> Iterator[Any]:
    """`frame` and its callers; in a replica thread, then the frames of the thread it runs for."""
    thread: threading.Thread | None = threading.current_thread()
    while frame is not None:
        yield frame
        frame = frame.f_back
        if frame is None and isinstance(thread, _REPLICA_THREAD_TYPE):
            frame, thread = _replica_caller(thread)


@dataclasses.dataclass(frozen=True)
class TfFunctionFrame:
    """The innermost `tf.function` whose trace is running on this thread."""

    key: Any  # A weak reference to the Function, or its name when none was found.
    name: str
    creates_variables: bool | None  # None when the phase could not be seen.
    # What the Function wraps (see `function_origin`), or None.
    origin: Any = None
    trace: Any = None  # A weak reference to the FuncGraph being built: one per trace.


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


def enclosing_tf_function() -> TfFunctionFrame | None:
    """Returns the innermost tf.function being traced by this thread, if any.

    Walks the Python stack (and, in a `MirroredStrategy` replica thread, the
    stack of the thread that started the replica), so call it only off the
    eager fast path.
    """
    phase: bool | None = None
    trace: Any = None
    for frame in calling_frames(sys._getframe(1)):
        code = frame.f_code
        if code is _WRAPPED_FN_CODE and phase is None:
            local = frame.f_locals
            phase = getattr(local.get("scope"), "__name__", "") != _NO_VARIABLE_CREATION_SCOPE
            graph = local.get("default_graph")
            trace = None if graph is None else weakref.ref(graph)
        elif code in _FUNCTION_METHOD_CODES and phase is not None:
            function = frame.f_locals.get("self")
            try:
                key: Any = weakref.ref(function)
            except TypeError:
                key = function.name
            return TfFunctionFrame(key, function.name, phase, function_origin(function), trace)
    if phase is None:
        return None
    return TfFunctionFrame(current_graph_name(), current_graph_name(), phase, trace=trace)


# --- execution context -------------------------------------------------------------
executing_eagerly: Callable[[], bool] = tf.executing_eagerly


def in_symbolic_build() -> bool:
    """True while Keras runs `call` on symbolic inputs to infer shapes or build."""
    return _in_symbolic_scope()


def in_save_context() -> bool:
    """True while SavedModel saving (or `model.export`) traces functions."""
    if _save_context.in_save_context():
        return True
    # Keras 3 `model.export` traces `__call__` and `serving_default` before it
    # enters TF's save context (measured on Keras 3.15): recognise its frames.
    return any(frame.f_code.co_filename.startswith(_KERAS_EXPORT_DIR)
               for frame in calling_frames(sys._getframe(1)))


def current_graph_name() -> str | None:
    graph = tf.compat.v1.get_default_graph()
    return getattr(graph, "name", None)


if not callable(getattr(_control_flow_util, "GraphOrParentsInXlaContext", None)):
    raise _internal_missing("tensorflow.python.ops.control_flow_util.GraphOrParentsInXlaContext")


def in_xla_context() -> bool:
    """True while tracing code that XLA will compile (`jit_compile=True`, TPU).

    `tf.function(jit_compile=True)` enters an `XLAControlFlowContext` on the
    graph it traces (`OptionalXlaContext` in polymorphic_function.py); TF's own
    ops ask the same question with `GraphOrParentsInXlaContext`, which also
    sees an enclosing jit-compiled function through `outer_graph`.
    """
    return _control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def current_replica() -> int | None:
    """The replica id under `tf.distribute`, else None."""
    if not tf.distribute.has_strategy():
        return None
    context = tf.distribute.get_replica_context()
    if context is None:  # Cross-replica context.
        return None
    # A constant tensor inside tf.function; `get_static_value` gives a 0-d array.
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return None if replica is None else int(replica)


# --- variables ---------------------------------------------------------------------
def variable_creation_watch(on_create: Callable[[Any], None]) -> Any:
    """A context manager calling `on_create(variable)` for each TF variable created."""

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        on_create(variable)
        return variable

    return tf.variable_creator_scope(creator)


def layer_variables(layer: Any) -> list[Any]:
    return list(layer.variables)


def variable_path(variable: Any) -> str:
    path = getattr(variable, "path", None) or getattr(variable, "name", "?")
    return path[:-2] if path.endswith(":0") else path


def backing_variable(variable: Any) -> Any:
    """The TF variable behind a Keras variable, without forcing initialisation.

    Keras 3's public `.value` would run a deferred initializer; `_value` is the
    backing `tf.Variable` (None until created).
    """
    return getattr(variable, "_value", variable) if IS_KERAS_3 else variable


_LIBRARY_DIRS = tuple(
    os.path.dirname(module.__file__) + os.sep
    for module in (tf, keras, sys.modules[__package__])
) + (os.path.dirname(os.path.dirname(tf.__file__)) + os.sep + "tf_keras",
     os.path.dirname(contextlib.__file__) + os.sep + "contextlib.py")


def user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn` that points at the user's code."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_LIBRARY_DIRS)
        # AutoGraph's converted copies of functions, written to temporary files.
        or "__autograph_generated_file" in frame.f_code.co_filename
    ):
        frame, level = frame.f_back, level + 1
    return level


def calling_frame() -> Any:
    """The innermost caller's frame outside TF, Keras and traceguard.

    AutoGraph's converted copies of user functions count as the user's code:
    each converted function has its own code object and generated file.
    """
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame = frame.f_back
    return frame


# --- AutoGraph ------------------------------------------------------------------------
# AutoGraph (tf_keras's `call`, `tf.function(autograph=True)`) converts every
# function it calls that is not TensorFlow's own: it would turn the builtin
# `print` inside traceguard's routing into a `py_function`. Functions wrapped by
# this public decorator are called as they are (`is_autograph_artifact` in
# tensorflow/python/autograph/impl/api.py).
run_unconverted: Callable[[Callable[..., Any]], Callable[..., Any]] = \
    tf.autograph.experimental.do_not_convert
# --- looking like Keras's own `Layer.__call__` ------------------------------------------
# Keras 3 wraps `Layer.__call__` in `filter_traceback`, which drops the frames of
# files under `_EXCLUDED_PATHS` from the traceback of an error raised by `call`
# (keras/src/utils/traceback_utils.py; off after
# `keras.config.disable_traceback_filtering()`). traceguard's directory joins that
# list so an error from a trace-aware layer reads exactly as from a plain layer.
_TRACEGUARD_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
if IS_KERAS_3:
    from keras.src.utils import traceback_utils as _keras_traceback_utils
    from tensorflow.python.autograph.impl import api as _autograph_api

    if not isinstance(getattr(_keras_traceback_utils, "_EXCLUDED_PATHS", None), tuple) \
            or not callable(getattr(_keras_traceback_utils, "filter_traceback", None)):
        raise _internal_missing("keras.src.utils.traceback_utils._EXCLUDED_PATHS and filter_traceback")
    if _TRACEGUARD_DIR not in _keras_traceback_utils._EXCLUDED_PATHS:
        _keras_traceback_utils._EXCLUDED_PATHS += (_TRACEGUARD_DIR,)


def as_keras_call(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a mixin's `__call__` the way Keras 3 wraps `Layer.__call__`.

    The wrapper is Keras's `filter_traceback`, so it is what AutoGraph converts
    when a layer is given to `tf.function`, as for a plain layer. `method` itself
    is marked an AutoGraph artifact (after wrapping, so the wrapper does not copy
    the mark): AutoGraph calls it unconverted, as it calls Keras's own code, whose
    module it allowlists (tensorflow/python/autograph/core/config.py). Converting
    traceguard's bookkeeping would add its frames to the error messages of
    `tf.function` and cost trace time.
    """
    wrapper = _keras_traceback_utils.filter_traceback(method)
    _autograph_api.autograph_artifact(method)
    return wrapper


# --- wrapping `call` -----------------------------------------------------------------
def wrap_call(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """Makes `wrapper` stand in for `original` as a layer's `call`.

    Keras 3 reads `call`'s parameters with `inspect.signature`, which follows
    the `__wrapped__` that `functools.wraps` set.
    """
    return wrapper


# Keras 3 generates `get_config` for subclasses that do not define one, but only
# while the method it finds carries `_is_default` (keras/src/utils/python_utils.py).
_KERAS_DEFAULT_MARK = "_is_default"
if not getattr(keras.layers.Layer.get_config, _KERAS_DEFAULT_MARK, False):
    raise _internal_missing("keras.layers.Layer.get_config._is_default")


def is_keras_default_method(method: Any) -> bool:
    return bool(getattr(method, _KERAS_DEFAULT_MARK, False))


def mark_keras_default_method(method: Any) -> None:
    setattr(method, _KERAS_DEFAULT_MARK, True)
