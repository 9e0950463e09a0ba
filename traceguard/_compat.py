"""The one place that knows TensorFlow and Keras internals and versions.

Everything else in traceguard asks this module named questions
(`in_symbolic_build()`, `enclosing_tf_function()`, ...). Every private
attribute relied on is looked up here, when the Keras that needs it is first
used, and `tests/test_compat.py` checks each one, so a TF or Keras release that
moves one fails loudly instead of misclassifying silently.

Three Kerases, called flavors, can be recorded, even side by side in one process:

- `"keras3"`: Keras 3 on TensorFlow (TF >= 2.16).
- `"tf_keras"`: the `tf_keras` package, Keras 2 for TF >= 2.15.
- `"keras2"`: the Keras 2 that TF 2.12-2.15 ships (`tf.keras`, the `keras` 2.x package).

`traceguard.TraceAwareLayer` follows `tf.keras`, decided once at import, the way
TensorFlow itself routes `tf.keras` (`TF_USE_LEGACY_KERAS`, see
tensorflow/python/util/lazy_loader.py). The TensorFlow-only questions are the
functions of the sections "tf.function", "AutoGraph" and "variables", so a
backend without TensorFlow replaces them, not their callers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any


def parse_version(version: str) -> tuple[int, int]:
    """`"2.15.1"` -> `(2, 15)`: versions are compared as numbers, never as strings."""
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


# --- the backend ---------------------------------------------------------------------
BACKENDS = ("tensorflow", "jax")


def _decide_backend() -> str:
    """The backend Keras runs on, decided before anything imports TensorFlow.

    `TF_USE_LEGACY_KERAS` selects tf_keras, which runs on TensorFlow only (TF reads
    it the same way in tensorflow/python/util/lazy_loader.py). Otherwise Keras 3
    itself says, from `KERAS_BACKEND` or `~/.keras/keras.json`
    (keras/src/backend/config.py); importing Keras 3 imports only that backend.
    Keras 2 (`import keras` on TF <= 2.15) is TensorFlow's.
    """
    if os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1"):
        return "tensorflow"
    try:
        import keras
    except ImportError:  # TensorFlow without Keras: the import of TF below says what is missing.
        return "tensorflow"
    if parse_version(keras.__version__)[0] < 3:
        return "tensorflow"
    backend = keras.backend.backend()
    if backend not in BACKENDS:
        raise ImportError(f"traceguard records Keras 3 on the backends {', '.join(BACKENDS)}. "
                          f"Received: KERAS_BACKEND={backend!r} (Keras {keras.__version__}).")
    return backend


BACKEND = _decide_backend()
IS_JAX = BACKEND == "jax"
TRACER = "jax.jit" if IS_JAX else "tf.function"  # What traces a function, for messages.
# The TensorFlow-only questions below are asked only when `BACKEND` is "tensorflow";
# on JAX, TensorFlow is never imported (tests/test_compat.py checks it in a subprocess).
if IS_JAX:
    import jax
    from jax._src import core as _jax_core

    tf: Any = None
    TF_VERSION: tuple[int, int] | None = None
else:
    import tensorflow as tf
    from tensorflow.python.autograph.core import ag_ctx as _autograph_context
    from tensorflow.python.autograph.core import config as _autograph_config
    from tensorflow.python.autograph.impl import api as _autograph_api
    from tensorflow.python.distribute import mirrored_run as _mirrored_run
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as _tf_function
    from tensorflow.python.ops import control_flow_util as _control_flow_util
    from tensorflow.python.saved_model import save_context as _save_context

    TF_VERSION = parse_version(tf.__version__)


def _internal_missing(what: str) -> RuntimeError:
    return RuntimeError(
        f"traceguard relies on {what}, which this installation does not have "
        f"({describe_versions()}). Please report this with the versions above."
    )


# --- Keras flavors -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class KerasFlavor:
    """One Keras that traceguard records: its namespace, `Layer` class and internals."""

    name: str  # "keras3", "tf_keras" or "keras2".
    keras: types.ModuleType  # What users import: `keras`, `tf_keras` or `tf.keras`.
    layer_base: type
    version: str
    symbolic_scope: Callable[[], bool] | None = None  # Keras 3 only.
    base_layer_utils: types.ModuleType | None = None  # Keras 2 only.

    @property
    def is_keras_3(self) -> bool:
        return self.name == "keras3"

    def describe(self) -> str:
        """`"Keras 3.15.1"`, `"tf_keras 2.21.0"` or `"Keras 2.15.0"`."""
        return f"{'tf_keras' if self.name == 'tf_keras' else 'Keras'} {self.version}"


_flavors: dict[str, KerasFlavor] = {}
_KERAS_DEFAULT_MARK = "_is_default"
_KERAS_EXPORT_DIR: str | None = None  # Set when Keras 3 loads.
_keras2_layer_bases: tuple[type, ...] = ()


def _check_default_mark(layer_base: type, name: str) -> None:
    # Keras generates `get_config` for subclasses that do not define one only while the
    # method it finds carries `_is_default` (keras/src/utils/python_utils.py in Keras 3,
    # `generic_utils.default` in Keras 2.12+ and tf_keras).
    if not getattr(layer_base.get_config, _KERAS_DEFAULT_MARK, False):
        raise _internal_missing(f"{name} `Layer.get_config._is_default`")


def _load_keras3() -> KerasFlavor:
    global _KERAS_EXPORT_DIR
    import keras
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope

    _check_default_mark(keras.layers.Layer, "Keras 3")
    # Keras 3 `model.export` traces `__call__` and `serving_default` before it
    # enters TF's save context (measured on Keras 3.15): its frames tell.
    _KERAS_EXPORT_DIR = os.path.dirname(keras.src.export.__file__) + os.sep
    return KerasFlavor("keras3", keras, keras.layers.Layer, keras.__version__,
                       symbolic_scope=in_symbolic_scope)


def _load_keras2(name: str) -> KerasFlavor:
    global _keras2_layer_bases
    # tf_keras is itself the namespace; TF 2.12-2.15 ship their Keras 2 as `tf.keras`.
    namespace = importlib.import_module("tf_keras") if name == "tf_keras" else tf.keras
    layer_base = namespace.layers.Layer
    root = layer_base.__module__.split(".")[0]
    # `base_layer_utils` sits beside `base_layer` in every Keras 2: keras/engine (2.12),
    # keras/src/engine (2.13-2.15), tf_keras/src/engine.
    utils = importlib.import_module(layer_base.__module__.rsplit(".", 1)[0] + ".base_layer_utils")
    for function in ("is_subclassed", "from_saved_model"):
        if not callable(getattr(utils, function, None)):
            raise _internal_missing(f"{utils.__name__}.{function}")
    _check_default_mark(layer_base, name)
    _keras2_layer_bases += (layer_base,)
    return KerasFlavor(name, namespace, layer_base, sys.modules[root].__version__,
                       base_layer_utils=utils)


def load_flavor(name: str) -> KerasFlavor:
    """The `KerasFlavor` named `name`, imported on first use."""
    if name not in _flavors:
        _flavors[name] = _load_keras3() if name == "keras3" else _load_keras2(name)
    return _flavors[name]


def flavor_of_class(cls: type) -> KerasFlavor | None:
    """The Keras that `cls` is a layer of, from the first Keras class in its MRO."""
    for klass in cls.__mro__:
        root = klass.__module__.split(".")[0]
        if root == "tf_keras":
            return load_flavor("tf_keras")
        if root == "keras":
            major = parse_version(sys.modules["keras"].__version__)[0]
            return load_flavor("keras3" if major >= 3 else "keras2")
    return None


def _flavor_following_tf_keras() -> KerasFlavor:
    try:
        layer_base = tf.keras.layers.Layer
    except (ImportError, AttributeError) as error:
        raise ImportError(
            "traceguard follows `tf.keras`, which could not be imported: with "
            "TF_USE_LEGACY_KERAS set TensorFlow needs the `tf_keras` package "
            "(pip install 'traceguard[keras2]'). Received: TensorFlow "
            f"{tf.__version__}, TF_USE_LEGACY_KERAS={os.environ.get('TF_USE_LEGACY_KERAS')!r}."
        ) from error
    flavor = flavor_of_class(layer_base)
    if flavor is None:
        raise ImportError(f"`tf.keras.layers.Layer` is {layer_base!r}, which traceguard does not "
                          f"know. Installed: TensorFlow {tf.__version__}.")
    return flavor


def keras2_flavor() -> KerasFlavor:
    """The Keras 2 of `traceguard.keras2`: `tf_keras`, else `tf.keras` on TF <= 2.15."""
    if IS_JAX:
        raise ImportError("Keras 2 runs on TensorFlow only, and Keras 3 runs on JAX here. "
                          f"Received: KERAS_BACKEND='jax' ({describe_versions()}).")
    if importlib.util.find_spec("tf_keras") is not None:
        return load_flavor("tf_keras")
    if not DEFAULT_FLAVOR.is_keras_3:
        return DEFAULT_FLAVOR
    raise ImportError(
        "traceguard's Keras 2 support needs Keras 2: install `tf_keras` "
        "(pip install 'traceguard[keras2]'), or use TensorFlow 2.12-2.15, whose `tf.keras` "
        f"is Keras 2. Received: TensorFlow {tf.__version__} with "
        f"{DEFAULT_FLAVOR.describe()} and no tf_keras."
    )


def keras3_flavor() -> KerasFlavor:
    """Keras 3, or ImportError naming what is installed instead."""
    if IS_JAX:
        return DEFAULT_FLAVOR
    # TensorFlow 2.16 is the first to depend on Keras 3 rather than Keras 2.
    if TF_VERSION >= (2, 16) and importlib.util.find_spec("keras") is not None:
        return load_flavor("keras3")
    raise ImportError("Keras 3 needs TensorFlow >= 2.16 and the `keras` 3 package. "
                      f"Received: TensorFlow {tf.__version__} with {DEFAULT_FLAVOR.describe()}.")


# On JAX, `TraceAwareLayer` is Keras 3's `Layer`: the only Keras that runs there.
DEFAULT_FLAVOR = _flavor_following_tf_keras() if not IS_JAX else load_flavor("keras3")
KERAS_FLAVOR = DEFAULT_FLAVOR.name
IS_KERAS_3 = DEFAULT_FLAVOR.is_keras_3
keras = DEFAULT_FLAVOR.keras
LayerBase = DEFAULT_FLAVOR.layer_base


def describe_versions() -> str:
    """The installed stack, for error messages and reports."""
    default = globals().get("DEFAULT_FLAVOR")  # None while the default flavor loads.
    flavors = ([default] if default else []) + [f for f in _flavors.values() if f is not default]
    engine = f"JAX {jax.__version__}" if IS_JAX else f"TensorFlow {tf.__version__}"
    return f"{engine}, " + ", ".join(
        f"{flavor.describe()} ({flavor.name})" for flavor in flavors)


def layer_base_of(cls: type) -> type | None:
    """The `Layer` class of the Keras `cls` belongs to, if `cls` is a layer class."""
    flavor = flavor_of_class(cls)
    return flavor.layer_base if flavor is not None and issubclass(cls, flavor.layer_base) else None


def is_base_layer_method(cls: type, name: str) -> bool:
    """Whether `cls.<name>` is still the Keras `Layer`'s own method."""
    flavor = flavor_of_class(cls)
    return flavor is not None and getattr(cls, name, None) is getattr(flavor.layer_base, name, None)


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
    raise _internal_missing("Function._generate_scoped_tracing_options.<wrapped_fn>")


if not IS_JAX:
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
_REPLICA_THREAD_TYPE: Any = ()  # No replica threads on JAX: `isinstance(thread, ())` is False.
if not IS_JAX:
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


def _caller_thread_frame(thread: threading.Thread | None) -> tuple[Any, threading.Thread | None]:
    """Where a walk up the stack goes on past the top of `thread`'s (None: this thread's).

    In a replica thread, in the frames of the thread it runs for, and that thread; else
    nowhere: `(None, None)`.
    """
    thread = threading.current_thread() if thread is None else thread
    return _replica_caller(thread) if isinstance(thread, _REPLICA_THREAD_TYPE) else (None, None)


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


class _TraceFacts:
    """What every run of one trace sees the same: its tf.function, whether Keras exports."""

    __slots__ = ("function", "exporting")

    def __init__(self, function: TfFunctionFrame) -> None:
        self.function = function
        self.exporting: bool | None = None  # Filled in by the first `in_save_context()`.


# The stack above `wrapped_fn` stays as it is while `wrapped_fn` builds its FuncGraph
# (its `default_graph` local), and every trace builds a graph of its own: runs in that
# graph share one answer, kept here until the graph dies. Only a trace's first run
# walks the stack.
_facts_of_trace: weakref.WeakKeyDictionary[Any, _TraceFacts] = weakref.WeakKeyDictionary()
# Keras 3 runs `call` on symbolic inputs in a FuncGraph it names `scratch_graph`,
# `scratch_graph_1`, ... inside the graph being traced (`compute_output_spec` in
# keras/src/backend/tensorflow/core.py, Keras 3.0 to 3.15).
_KERAS_SCRATCH_GRAPH_PREFIX = "scratch_graph"


def _known_facts(graph: Any) -> _TraceFacts | None:
    """The facts of the trace whose graph is `graph`, or holds Keras's scratch `graph`."""
    facts = _facts_of_trace.get(graph)
    if facts is None and getattr(graph, "name", "").startswith(_KERAS_SCRATCH_GRAPH_PREFIX) \
            and in_symbolic_build():
        # Not for other nested graphs: a tf.function traced in one has a graph of its own.
        outer = getattr(graph, "outer_graph", None)
        facts = None if outer is None else _facts_of_trace.get(outer)
    return facts


def enclosing_tf_function() -> TfFunctionFrame | None:
    """Returns the innermost tf.function being traced by this thread, if any.

    Walks the Python stack (and, in a `MirroredStrategy` replica thread, the
    stack of the thread that started the replica) on a trace's first run, so
    call it only off the eager fast path.
    """
    facts = _known_facts(tf.compat.v1.get_default_graph())
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
        elif code in _FUNCTION_METHOD_CODES and phase is not None:
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


# --- execution context -------------------------------------------------------------
if not IS_JAX:
    executing_eagerly: Callable[[], bool] = tf.executing_eagerly

# Keras 2 infers a layer's outputs by running `call` in a FuncGraph named
# `<layer name>_scratch_graph` (`Layer._infer_output_signature`, and the default
# `compute_output_shape`), in every Keras 2 from 2.4 to tf_keras 2.21.
KERAS2_SCRATCH_GRAPH_SUFFIX = "_scratch_graph"


def in_symbolic_build() -> bool:
    """True while Keras runs `call` on symbolic inputs to infer shapes or build."""
    keras3 = _flavors.get("keras3")
    if keras3 is not None and keras3.symbolic_scope():
        return True
    if _keras2_layer_bases:
        name = current_graph_name()
        return name is not None and name.endswith(KERAS2_SCRATCH_GRAPH_SUFFIX)
    return False


def in_save_context() -> bool:
    """True while SavedModel saving (or `model.export`) traces functions."""
    if _save_context.in_save_context():
        return True
    if _KERAS_EXPORT_DIR is None:
        return False
    # Keras 3 `model.export` traces `__call__` and `serving_default` before it
    # enters TF's save context (measured on Keras 3.15): recognise its frames,
    # once per trace (see `_facts_of_trace`).
    facts = _facts_of_trace.get(tf.compat.v1.get_default_graph())
    if facts is not None and facts.exporting is not None:
        return facts.exporting
    exporting = False
    frame, thread = sys._getframe(1), None
    while frame is not None:
        if frame.f_code.co_filename.startswith(_KERAS_EXPORT_DIR):
            exporting = True
            break
        frame = frame.f_back
        if frame is None:
            frame, thread = _caller_thread_frame(thread)
    if facts is not None:
        facts.exporting = exporting
    return exporting


def current_graph_name() -> str | None:
    graph = tf.compat.v1.get_default_graph()
    return getattr(graph, "name", None)


if not IS_JAX and not callable(getattr(_control_flow_util, "GraphOrParentsInXlaContext", None)):
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
    backing `tf.Variable` (None until created). Keras 2 variables are TF variables.
    """
    keras3 = _flavors.get("keras3")
    if keras3 is not None and isinstance(variable, keras3.keras.Variable):
        return variable._value
    return variable


def _package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)  # Finds the package without importing it.
    location = spec.submodule_search_locations if spec else None
    return os.path.join(list(location)[0], "") if location else None


_LIBRARY_DIRS = tuple(
    directory for directory in (
        *(_package_dir(name) for name in ("tensorflow", "keras", "tf_keras", "jax", "jaxlib",
                                          __package__)),
        os.path.dirname(contextlib.__file__) + os.sep + "contextlib.py",
    ) if directory
)


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
# AutoGraph converts the Python functions a `tf.function` calls unless their module is
# listed in its conversion rules (TensorFlow, Keras and tf_keras are). traceguard is
# library code as they are: converting it would turn its bookkeeping into graph
# control flow. Listing it keeps AutoGraph out of every traceguard function.
if not IS_JAX and not any(getattr(rule, "_prefix", None) == __package__
                          for rule in _autograph_config.CONVERSION_RULES):
    _autograph_config.CONVERSION_RULES = (
        (_autograph_config.DoNotConvert(__package__),) + tuple(_autograph_config.CONVERSION_RULES))

if not IS_JAX:
    # An object carrying `autograph_info__` is run as it is by AutoGraph, even when a
    # `tf.function` wraps it directly (tensorflow/python/autograph/impl/api.py).
    _autograph_artifact: Callable[[Any], Any] = _autograph_api.autograph_artifact
    _CALL_UNCONVERTED_CODE = _autograph_api._call_unconverted.__code__
    _AUTOGRAPH_DISABLED = _autograph_context.Status.DISABLED

    # AutoGraph (tf_keras's `call`, `tf.function(autograph=True)`) converts every
    # function it calls that is not TensorFlow's own: it would turn the builtin
    # `print` inside traceguard's routing into a `py_function`. Functions wrapped by
    # this public decorator are called as they are (`is_autograph_artifact` in
    # tensorflow/python/autograph/impl/api.py).
    run_unconverted: Callable[[Callable[..., Any]], Callable[..., Any]] = \
        tf.autograph.experimental.do_not_convert


def keep_autograph_out(obj: Any) -> Any:
    """Makes AutoGraph run `obj` (a function, or instances of a class) unconverted."""
    return _autograph_artifact(obj)


def graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
               caller: Any) -> Callable[..., Any]:
    """The function to run for a graph-mode run of `original`, `layer`'s `call`.

    traceguard's wrapped `call` (`wrapper`) is never converted by AutoGraph itself,
    so it converts the user's body wherever Keras or AutoGraph would have converted
    the plain `call`:

    - `tf.function(layer.call)` converts the function under TensorFlow's decorator
      protocol: it puts the converted `original` in `wrapper.__wrapped__`
      (`tf_decorator.rewrap`) just before calling `wrapper`, which takes it, once.
    - Keras 2 runs a subclassed layer's `call` through `tf_convert`
      (`_autographed_call`, `_infer_output_signature`), so `if tensor:` works in its
      body, unless the context disables AutoGraph (`tf.function(autograph=False)`).
      Keras 2 runs `call` unconverted in its SavedModel traces; this converts it there too.
    - Converted code calling `layer.call(x)` or `super().call(x)` converts it; such a
      call reaches `wrapper` through AutoGraph's `_call_unconverted`.

    Keras 3 never converts `call` itself.
    """
    rewrapped = wrapper.__wrapped__
    if rewrapped is not original:
        wrapper.__wrapped__ = original
        wrapper._tf_decorator.decorated_target = original
        return rewrapped
    context = _autograph_context.control_status_ctx()
    if context.status == _AUTOGRAPH_DISABLED:
        return original
    keras2_converts = isinstance(layer, _keras2_layer_bases) and _keras2_autographs(layer)
    if keras2_converts or getattr(caller, "f_code", None) is _CALL_UNCONVERTED_CODE:
        return tf.__internal__.autograph.tf_convert(original, context)
    return original


def _keras2_autographs(layer: Any) -> bool:
    utils = flavor_of_class(type(layer)).base_layer_utils
    return utils.is_subclassed(layer) and not utils.from_saved_model(layer)


# --- looking like Keras's own `Layer.__call__` ------------------------------------------
# Keras 3 wraps `Layer.__call__` in `filter_traceback`, which drops the frames of
# files under `_EXCLUDED_PATHS` from the traceback of an error raised by `call`
# (keras/src/utils/traceback_utils.py; off after
# `keras.config.disable_traceback_filtering()`). traceguard's directory joins that
# list so an error from a trace-aware layer reads exactly as from a plain layer.
_TRACEGUARD_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
if IS_KERAS_3:
    from keras.src.utils import traceback_utils as _keras_traceback_utils

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
    if not IS_KERAS_3:  # Keras 2 as tf.keras: `keep_autograph_out_of_layers` covers it.
        return _autograph_api.autograph_artifact(method)
    wrapper = _keras_traceback_utils.filter_traceback(method)
    if not IS_JAX:
        _autograph_api.autograph_artifact(method)
    return wrapper


def keep_autograph_out_of_layers(mixin: type) -> None:
    """Makes AutoGraph run every layer with `mixin` as it is, when `tf.keras` is Keras 2.

    `tf.function(layer)` has AutoGraph convert `type(layer).__call__`; with Keras 3,
    that is Keras's `filter_traceback` wrapper (see `as_keras_call`). With Keras 2 it
    would be the mixin's own `__call__`, so the instances are marked instead.
    """
    if not IS_KERAS_3:
        _autograph_artifact(mixin)


# --- wrapping `call` -----------------------------------------------------------------
def wrap_call(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """Makes `wrapper` stand in for `original` as a layer's `call`.

    Keras 3 reads `call`'s parameters with `inspect.signature`, which follows
    `__wrapped__`; Keras 2 with `tf_inspect.getfullargspec`, which follows only
    TensorFlow's decorator protocol (`make_decorator`). AutoGraph is kept out of
    the wrapper: `graph_body` converts the user's body where it should be.
    """
    wrapped = tf.__internal__.decorator.make_decorator(original, wrapper)
    return keep_autograph_out(wrapped)


def is_keras_default_method(method: Any) -> bool:
    return bool(getattr(method, _KERAS_DEFAULT_MARK, False))


def mark_keras_default_method(method: Any) -> None:
    setattr(method, _KERAS_DEFAULT_MARK, True)


# --- printing at each execution (the "tf.print" print mode) ---------------------------
def holds_tensor(value: Any) -> bool:
    """Whether `value` (a structure) holds a tensor, whose runtime value prints."""
    return any(tf.is_tensor(item) for item in tf.nest.flatten(value))


def print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
    """Adds a print of `inputs` (tensors and strings) to the graph being traced."""
    tf.print(*inputs, output_stream=stream, sep=sep, end=end)


# --- the JAX backend -----------------------------------------------------------------
# Keras 3 on JAX (measured with Keras 3.15.1 and jax 0.10.2; /work/shared/tracing-facts.md):
# a body run is eager at JAX's top level, symbolic under Keras's `SymbolicScope`
# (`compute_output_spec` runs `call` on Tracers through `jax.eval_shape`), and a
# trace when `jax.jit` misses its cache: `pjit.py`'s `cache_miss` closure, whose
# free variable `fun` is the jitted Python function, is then on the stack. JAX
# has no trace for variable creation: Keras's `stateless_call` and its jitted
# steps take variables as arguments, so `creates_variables` is always None.
def _jax_executing_eagerly() -> bool:
    # `trace_state_clean()` is True at the top level: no jit, grad, vmap or eval_shape
    # trace is running (jax/_src/core.py, `TracingContext.is_top_level`).
    return _jax_core.trace_state_clean()


def _find_jax_cache_miss_code() -> Any:
    from jax._src import pjit

    codes = [c for c in pjit._cpp_pjit.__code__.co_consts
             if getattr(c, "co_name", None) == "cache_miss"]
    if len(codes) != 1 or "fun" not in codes[0].co_freevars:
        raise _internal_missing("jax._src.pjit._cpp_pjit.<cache_miss> and its `fun`")
    return codes[0]


def _enclosing_jit() -> TfFunctionFrame | None:
    """The innermost `jax.jit` function tracing on this thread (as a `TfFunctionFrame`)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _JAX_CACHE_MISS_CODE:
            function = frame.f_locals.get("fun")
            function = getattr(function, "__func__", function)  # A bound method: its function.
            name = getattr(function, "__name__", None) or type(function).__name__
            try:
                key: Any = weakref.ref(function)
            except TypeError:
                key = name
            return TfFunctionFrame(key, name, None)
        frame = frame.f_back
    return None


def _jax_in_save_context() -> bool:
    return False


def _no_graph_name() -> str | None:
    return None


def _no_replica() -> int | None:
    return None


def _no_variable_creation_watch(on_create: Callable[[Any], None]) -> Any:
    # JAX variables are arrays held by Keras; the layer's `variables` show new ones.
    return contextlib.nullcontext()


def _as_it_is(obj: Any) -> Any:
    return obj


def _jax_graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
                    caller: Any) -> Callable[..., Any]:
    return original  # No AutoGraph on JAX.


def _jax_wrap_call(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    # Keras 3 reads `call`'s parameters with `inspect.signature`, which follows `__wrapped__`.
    return functools.update_wrapper(wrapper, original)


def _jax_holds_array(value: Any) -> bool:
    """Whether `value` (a structure) holds a JAX array or Tracer: printed at execution."""
    try:
        return any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(value))
    except Exception:  # A structure JAX cannot flatten.
        return False


def _jax_print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
    """`print(*inputs, sep=sep, end=end, file=stream)` at every execution of the traced code.

    `jax.debug.print` formats its arguments' runtime values into a format string and
    writes it to `sys.stdout` with a newline (jax/_src/debugging.py). Every input,
    strings too, is an argument of its own `{}`: jax 0.10.2 looks for placeholders
    only before the first escaped brace (`_format_print_callback`'s `has_placeholders`),
    so a literal `{{` first would print the format string unformatted. Other streams,
    and an `end` other than a newline, go through `jax.debug.callback`, its mechanism.
    """
    text = sep.replace("{", "{{").replace("}", "}}").join("{}" for _ in inputs)
    if not inputs:
        text, inputs = "{}", [""]
    if stream is sys.stdout and end == "\n":
        jax.debug.print(text, *inputs)
        return

    def write(*values: Any) -> None:
        stream.write(text.format(*values) + end)

    jax.debug.callback(write, *inputs)


if IS_JAX:
    _JAX_CACHE_MISS_CODE = _find_jax_cache_miss_code()
    executing_eagerly = _jax_executing_eagerly
    enclosing_tf_function = _enclosing_jit
    in_save_context = _jax_in_save_context
    current_graph_name = _no_graph_name
    current_replica = _no_replica
    variable_creation_watch = _no_variable_creation_watch
    keep_autograph_out = _as_it_is
    run_unconverted = _as_it_is
    in_xla_context = _jax_in_save_context  # False: jax.debug.print runs inside XLA.
    holds_tensor = _jax_holds_array
    print_at_each_execution = _jax_print_at_each_execution
    graph_body = _jax_graph_body
    wrap_call = _jax_wrap_call
