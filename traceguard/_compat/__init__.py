"""The one place that knows TensorFlow, JAX and Keras internals and versions.

Everything else in traceguard asks this package named questions
(`_compat.in_symbolic_build()`, `_compat.enclosing_tf_function()`, ...) and never
which backend or Keras answers them. Every private attribute relied on is looked up
in a module of this package, when the Keras or backend that needs it is first used,
and `tests/test_compat*.py` check each one, so a release that moves one fails loudly
instead of misclassifying silently.

The modules, in the order they are imported:

- `_backend`: which backend Keras runs on, decided before anything imports TensorFlow.
- `_flavors`: the Kerases recorded (Keras 3, tf_keras, TF 2.12-2.15's Keras 2), their
  state, and the questions about layer classes and variables that any of them answers.
- `_frames`: which stack frames are the user's; Keras 3's traceback filter.
- One backend module, with the same names (its `__all__`) in each:
  `_tensorflow` (with `_tf_context`, `_tf_function` and `_autograph`), or `_jax`,
  which never imports TensorFlow.

Callers use the names below as `_compat.<name>`: replace one there (a test's
`monkeypatch.setattr(_compat, ...)`) to change what callers get. A module's own
state (`_flavors._KERAS_EXPORT_DIRS`, `_tf_function._facts_of_trace`, ...) is read
from that module: it exists there only.
"""

from traceguard._compat._backend import BACKEND, BACKENDS, IS_JAX, parse_version
from traceguard._compat._flavors import (
    KerasFlavor,
    backing_variable,
    describe_versions,
    flavor_of_class,
    is_base_layer_method,
    is_keras_default_method,
    layer_base_of,
    layer_variables,
    load_flavor,
    loaded_layer_bases,
    mark_keras_default_method,
    present_signature,
    variable_path,
    wrap_build,
)
from traceguard._compat._frames import (
    TfFunctionFrame,
    built_by_keras_call,
    calling_frame,
    user_stacklevel,
)

# The backend's implementation: both have the same names, so that callers never ask which.
if IS_JAX:
    from traceguard._compat import _jax as _implementation
else:
    from traceguard._compat import _tensorflow as _implementation

TRACER = _implementation.TRACER
TF_VERSION = _implementation.TF_VERSION  # None on JAX.
DEFAULT_FLAVOR = _implementation.DEFAULT_FLAVOR
keras2_flavor = _implementation.keras2_flavor
keras3_flavor = _implementation.keras3_flavor
executing_eagerly = _implementation.executing_eagerly
in_symbolic_build = _implementation.in_symbolic_build
default_graph = _implementation.default_graph
enclosing_tf_function = _implementation.enclosing_tf_function
in_save_context = _implementation.in_save_context
in_xla_context = _implementation.in_xla_context
current_graph_name = _implementation.current_graph_name
current_replica = _implementation.current_replica
variable_creation_watch = _implementation.variable_creation_watch
deferred_variable_paths = _implementation.deferred_variable_paths
keep_autograph_out = _implementation.keep_autograph_out
run_unconverted = _implementation.run_unconverted
graph_body = _implementation.graph_body
wrap_call = _implementation.wrap_call
holds_tensor = _implementation.holds_tensor
print_at_each_execution = _implementation.print_at_each_execution

# The Keras `traceguard.TraceAwareLayer` follows.
KERAS_FLAVOR = DEFAULT_FLAVOR.name
IS_KERAS_3 = DEFAULT_FLAVOR.is_keras_3
keras = DEFAULT_FLAVOR.keras
LayerBase = DEFAULT_FLAVOR.layer_base

__all__ = [
    "BACKEND", "BACKENDS", "DEFAULT_FLAVOR", "IS_JAX", "IS_KERAS_3", "KERAS_FLAVOR", "KerasFlavor",
    "LayerBase", "TF_VERSION", "TRACER", "TfFunctionFrame", "backing_variable", "built_by_keras_call",
    "calling_frame", "current_graph_name", "current_replica", "default_graph", "deferred_variable_paths",
    "describe_versions", "enclosing_tf_function", "executing_eagerly", "flavor_of_class", "graph_body",
    "holds_tensor", "in_save_context", "in_symbolic_build", "in_xla_context", "is_base_layer_method",
    "is_keras_default_method", "keep_autograph_out", "keras", "keras2_flavor", "keras3_flavor",
    "layer_base_of", "layer_variables", "load_flavor", "loaded_layer_bases", "mark_keras_default_method",
    "parse_version", "present_signature", "print_at_each_execution", "run_unconverted", "user_stacklevel",
    "variable_creation_watch", "variable_path", "wrap_build", "wrap_call",
]
