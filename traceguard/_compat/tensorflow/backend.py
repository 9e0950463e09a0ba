"""The TensorFlow backend: every backend question, answered for Keras on TensorFlow.

`__all__` is the backend interface (`_interface.Backend`), as in `jax.backend`; `traceguard._compat`
takes them from the backend Keras runs on, so no caller asks which one it is.
The answers live in `tensorflow.context` (eager, graph, XLA, replica), `tensorflow.function`
(the function being traced, saving) and `tensorflow.autograph`; this module decides which
Keras `tf.keras` is, and holds the rest: variable creation, printing, Keras's traceback filter.

`traceguard.TraceAwareLayer` follows `tf.keras`, decided once at import, the way
TensorFlow itself routes `tf.keras` (`TF_USE_LEGACY_KERAS`, see
tensorflow/python/util/lazy_loader.py).

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/polymorphic_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/ops.py
"""

from __future__ import annotations

import importlib.util
import operator
import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import polymorphic_function as _tf_function_module
from tensorflow.python.framework import ops as _tf_ops

from traceguard._compat import _flavors, _frames
from traceguard._compat._backend import parse_version
from traceguard._compat._flavors import KerasFlavor, flavor_of_class, internal_missing, load_flavor
from traceguard._compat._interface import BACKEND_NAMES

__all__ = list(BACKEND_NAMES)

TRACER = "tf.function"  # What traces a function, for messages.
TF_VERSION: tuple[int, int] = parse_version(tf.__version__)
# Each tf_keras release requires its own TensorFlow minor version: without the pin, pip would
# upgrade TensorFlow to the newest one to satisfy the newest tf_keras.
# tf_keras is on the package index (keras-traceguard is not yet): this line works anywhere.
KERAS2_INSTALL = f"pip install 'tf_keras=={TF_VERSION[0]}.{TF_VERSION[1]}.*'"


# --- which Keras `tf.keras` is ----------------------------------------------------------
def _flavor_following_tf_keras() -> KerasFlavor | None:
    """The Keras `tf.keras` is, or None for TensorFlow >= 2.16 without Keras (plain `tf.function`)."""
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")
    # TensorFlow >= 2.16 routes `tf.keras` to the `keras` package (lazy_loader.py).
    if TF_VERSION >= (2, 16) and not legacy and importlib.util.find_spec("keras") is None:
        return None
    try:
        layer_base = tf.keras.layers.Layer
    except (ImportError, AttributeError) as error:
        raise ImportError(
            "traceguard follows `tf.keras`, which could not be imported: with "
            "TF_USE_LEGACY_KERAS set TensorFlow needs the `tf_keras` package "
            f"({KERAS2_INSTALL}). Received: TensorFlow "
            f"{tf.__version__}, TF_USE_LEGACY_KERAS={os.environ.get('TF_USE_LEGACY_KERAS')!r}."
        ) from error
    flavor = flavor_of_class(layer_base)
    if flavor is None:
        raise ImportError(f"`tf.keras.layers.Layer` is {layer_base!r}, which traceguard does not "
                          f"know. Installed: TensorFlow {tf.__version__}.")
    return flavor


# Decided before the modules imported below check their internals, so that a missing
# one is reported with the Keras installed (`_flavors.describe_versions()`).
_FOLLOWED = _flavor_following_tf_keras()
DEFAULT_FLAVOR: KerasFlavor | None = _flavors.set_default_flavor(_FOLLOWED) if _FOLLOWED else None

# The backend's answers that live in its own modules (re-exported: `__all__`).
from traceguard._compat import _function_tracing  # noqa: E402
from traceguard._compat.tensorflow import traces as _tf_traces  # noqa: E402
from traceguard._compat.tensorflow.autograph import (  # noqa: E402, F401
    graph_body,
    keep_autograph_out,
    run_unconverted,
    wrap_call,
)
from traceguard._compat.tensorflow.context import (  # noqa: E402, F401
    control_flow_of,
    current_graph_name,
    current_replica,
    default_graph,
    executing_eagerly,
    in_symbolic_build,
    in_xla_context,
)
from traceguard._compat.tensorflow.function import (  # noqa: E402, F401
    enclosing_tf_function,
    in_save_context,
    keras_call,
    scratch_graph_outer,
)
from traceguard._compat.tensorflow.retracing import (  # noqa: E402, F401
    frequent_tracing_threshold,
    retracing_warning_notes,
)
from traceguard._compat.tensorflow.traces import traces_before  # noqa: E402, F401

_function_tracing.set_hook(_tf_traces)


def _describe_default() -> str:
    return DEFAULT_FLAVOR.describe() if DEFAULT_FLAVOR is not None else "no Keras"


def uncached_transformation() -> tuple[str, ...] | None:
    return None  # A tf.function traces under every transformation: its cache keys it.


def uncached_setting(frame: Any = None) -> tuple[str, str] | None:
    return None


def keras2_flavor() -> KerasFlavor:
    """The Keras 2 of `traceguard.keras2`: `tf_keras`, else `tf.keras` on TF <= 2.15."""
    if importlib.util.find_spec("tf_keras") is not None:
        return load_flavor("tf_keras")
    if DEFAULT_FLAVOR is not None and not DEFAULT_FLAVOR.is_keras_3:
        return DEFAULT_FLAVOR
    raise ImportError(
        "traceguard's Keras 2 support needs Keras 2: install `tf_keras` "
        f"({KERAS2_INSTALL}), or use TensorFlow 2.12-2.15, whose `tf.keras` "
        f"is Keras 2. Received: TensorFlow {tf.__version__} with "
        f"{_describe_default()} and no tf_keras."
    )


def keras3_flavor() -> KerasFlavor:
    """Keras 3, or ImportError naming what is installed instead."""
    # TensorFlow 2.16 is the first to depend on Keras 3 rather than Keras 2.
    if TF_VERSION >= (2, 16) and importlib.util.find_spec("keras") is not None:
        return load_flavor("keras3")
    raise ImportError("Keras 3 needs TensorFlow >= 2.16 and the `keras` 3 package "
                      "(pip install 'keras>=3' 'tensorflow>=2.16'). "
                      f"Received: TensorFlow {tf.__version__} with {_describe_default()}.")


def distributed_process() -> tuple[int, int] | None:
    """None: TensorFlow's multi-worker jobs name each worker in TF_CONFIG, a public environment
    variable that `_diagnosis.workers` reads."""
    return None


# --- variables -------------------------------------------------------------------------
if not isinstance(getattr(tf.Graph, "_variable_creator_stack", None), property):
    raise internal_missing("tensorflow.python.framework.ops.Graph._variable_creator_stack")


class _CreationWatch:
    """`variable_creation_watch`'s context manager: `start_creation_watch` to `stop_creation_watch`."""

    __slots__ = ("_on_create", "_graph", "_token")

    def __init__(self, graph: Any, on_create: Callable[[Any], None]) -> None:
        self._graph, self._on_create = graph, on_create

    def __enter__(self) -> _CreationWatch:
        self._token = start_creation_watch(self._on_create, self._graph)
        return self

    def __exit__(self, *exception: Any) -> None:
        stop_creation_watch(self._token)


_DEFAULT_CREATOR_PRIORITY = 100  # `_variable_creator_scope`'s default `priority`.
_priority = operator.itemgetter(0)


def variable_creation_watch(on_create: Callable[[Any], None], graph: Any = None) -> Any:
    """A context manager calling `on_create(variable)` for each TF variable created.

    `graph`: the default graph, if known.
    """
    return _CreationWatch(default_graph() if graph is None else graph, on_create)


def start_creation_watch(on_create: Callable[[Any], None], graph: Any = None) -> Any:
    """Calls `on_create(variable)` for each TF variable created on this thread from now on.

    What entering `graph._variable_creator_scope(creator)` does, in one call: the
    thread's creator stack, copied with the creator added at the default priority
    (tensorflow/python/framework/ops.py, TF 2.12 to 2.21). Every logged run starts one,
    and the generator and `contextlib` around TF's cost more Python calls than the
    rest of the watch. Returns the token `stop_creation_watch` takes.
    """

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        on_create(variable)
        return variable

    local = (default_graph() if graph is None else graph)._thread_local
    try:
        old = local._variable_creator_stack
    except AttributeError:  # The thread's first: what the `_variable_creator_stack` property does.
        old = local._variable_creator_stack = []
    new = [*old, (_DEFAULT_CREATOR_PRIORITY, creator)]
    if old and old[-1][0] > _DEFAULT_CREATOR_PRIORITY:  # The stack is kept sorted; stable.
        new.sort(key=_priority)
    local._variable_creator_stack = new
    return local, old, new


def stop_creation_watch(token: Any) -> None:
    """Restores the creator stack `start_creation_watch` changed, as TF's scope does on exit."""
    local, old, new = token
    if local._variable_creator_stack is not new:
        raise RuntimeError("Exiting variable_creator_scope without proper nesting.")
    local._variable_creator_stack = old


# --- tensors ------------------------------------------------------------------------------
# A tensor in a trace's graph holds its dtype and its shape as `([dims], unknown rank)` in
# C (`pywrap_tf_session.PyTensor`), which its public `shape` turns into a `TensorShape`
# at a dozen Python calls (tensorflow/python/framework/tensor.py). TF 2.12 has no such class.
_GRAPH_TENSOR = getattr(_tf_ops, "SymbolicTensor", None)
# Names by the dtype object's id: hashing a `DType` is a call into C++. Each entry keeps
# its dtype, so no other object takes its id; TF makes a few dtypes, and a dtype with
# handle data is a new object each time, so past 64 entries a name is read each time.
_dtype_names: dict[int, tuple[Any, str]] = {}


def _graph_tensor_spec(tensor: Any) -> tuple[str, Any]:
    dtype = tensor._dtype
    known = _dtype_names.get(id(dtype))
    if known is None:
        known = (dtype, dtype.name)
        if len(_dtype_names) < 64:
            _dtype_names[id(dtype)] = known
    dims, unknown_rank = tensor._shape
    return known[1], None if unknown_rank else tuple(dims)


def tensor_spec_reader(type_: type) -> Callable[[Any], tuple[str, Any]] | None:
    if type_ is _GRAPH_TENSOR and _GRAPH_TENSOR is not None:
        return _graph_tensor_spec
    return _flavors.keras_tensor_spec_reader(type_)


# `tf.function`'s first trace creates its variables as `UnliftedInitializerVariable`s
# (tensorflow/python/eager/polymorphic_function/polymorphic_function.py, TF 2.12 to 2.21);
# a variable created eagerly is another `ResourceVariable`.
_UNLIFTED_VARIABLE: Any = getattr(_tf_function_module, "UnliftedInitializerVariable", None)
if not isinstance(_UNLIFTED_VARIABLE, type):
    raise internal_missing("polymorphic_function.UnliftedInitializerVariable")


def any_created_in_a_trace(variables: list[Any]) -> bool:
    """Whether any of the (Keras or TF) `variables` was created by a tf.function's first trace."""
    keras3 = _flavors._flavors.get("keras3")
    if keras3 is None:  # Keras 2's variables are TF variables.
        return any([isinstance(v, _UNLIFTED_VARIABLE) for v in variables])
    # `_flavors.backing_variable`, written out: a call less per variable of a watched layer.
    keras_variable = keras3.keras.Variable
    return any([isinstance(v._value if isinstance(v, keras_variable) else v, _UNLIFTED_VARIABLE)
                for v in variables])


def defers_variables() -> bool:
    """Whether Keras 3 defers the variables made now: in its `StatelessScope` (a symbolic pass).

    A weight made in the scope registers in a per-thread list (keras/src/backend/common/
    variables.py, `register_uninitialized_variable`), which the outermost scope's exit
    replaces: `deferred_since` reads what a run added, where walking the layer's
    variables before and after would cost two walks.
    """
    keras3 = _flavors._flavors.get("keras3")
    return keras3 is not None and keras3.stateless_scope is not None and bool(keras3.stateless_scope())


def deferred_variables_mark() -> Any:
    """Where Keras 3's list of deferred variables stands now (`defers_variables()`)."""
    waiting = getattr(_flavors._flavors["keras3"].global_state, "uninitialized_variables", None)
    return waiting, 0 if waiting is None else len(waiting)


def deferred_since(mark: Any) -> list[Any] | None:
    """The variables deferred since `deferred_variables_mark()` returned `mark`; None if the
    list was replaced since (the scope ended), when what was added is not known."""
    keras3 = _flavors._flavors.get("keras3")
    waiting, length = mark
    now = getattr(keras3.global_state, "uninitialized_variables", None) if keras3 is not None else None
    if now is waiting:
        return [] if now is None else now[length:]
    if waiting is None:  # The list was made in the run: all of it is new.
        return [] if now is None else list(now)
    return None


def deferred_variable_paths(variables: list[Any]) -> tuple[str, ...]:
    """The paths of the Keras 3 weights in `variables` whose `tf.Variable` is not created yet.

    Weights made in Keras 3's symbolic pass (a `StatelessScope`) get their
    `tf.Variable` when the scope exits, after the pass's run of the body and
    before the run that follows in the same call (keras/src/backend/common/
    stateless_scope.py, `initialize_all_variables`). A Keras 3 variable's `_value`
    is that `tf.Variable`, None until created (`_flavors.backing_variable`).
    """
    keras3 = _flavors._flavors.get("keras3")
    if keras3 is None:
        return ()
    keras_variable = keras3.keras.Variable
    return tuple([_flavors.variable_path(v) for v in variables
                  if isinstance(v, keras_variable) and v._value is None])


# --- printing at each execution (the "tf.print" print mode) ---------------------------
def holds_tensor(value: Any) -> bool:
    """Whether `value` (a structure) holds a tensor, whose runtime value prints."""
    return any(tf.is_tensor(item) for item in tf.nest.flatten(value))


def print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
    """Adds a print of `inputs` (tensors and strings) to the graph being traced."""
    tf.print(*inputs, output_stream=stream, sep=sep, end=end)


# --- errors raised through the recorded `call` read as from a plain layer -----------------
if DEFAULT_FLAVOR is None:  # TensorFlow without Keras: no Keras traceback filter to join.
    pass
elif DEFAULT_FLAVOR.is_keras_3:
    _frames.hide_traceguard_frames_from_keras()
else:
    _keras2_traceback_utils = _frames.hide_traceguard_frames_from_keras2(DEFAULT_FLAVOR.layer_base)
