"""The one place that knows TensorFlow, JAX and Keras internals and versions.

Everything else in traceguard asks this package named questions
(`_compat.in_symbolic_build()`, `_compat.enclosing_tf_function()`, ...) and never
which backend or Keras answers them. Every private attribute relied on is looked up
in a module of this package, when the Keras or backend that needs it is first used,
and `tests/compat/` checks each one, so a release that moves one fails loudly
instead of misclassifying silently.

The modules, in the order they are imported:

- `_backend`: which backend is recorded, and whether Keras imports, found before anything imports
  TensorFlow (plain JAX, or TensorFlow alone, has no Keras: `DEFAULT_FLAVOR` is None).
- `_flavors`: the Kerases recorded (Keras 3, tf_keras, TF 2.12-2.15's Keras 2), their
  state, and the questions about layer classes and variables that any of them answers.
- `_frames`: which stack frames are the user's; Keras 3's traceback filter.
- `_keras_calls`: which Keras method (`fit`, `predict`, ...) a trace runs under.
- `_function_tracing`: every trace of a whole function (`tf.function`, `jax.jit`), handed to
  one sink while it is connected (`tensorflow.traces`, `jax.traces` hook the backend).
- `_interface`: the backend interface, `Backend`, written once.
- One backend folder, whose `backend` module's `__all__` is that interface, with the same module
  names for the same jobs (`backend`, `traces`, `calls`, `keys`): `tensorflow/` (with `context`,
  `function` and `autograph`), or `jax/`, which never imports TensorFlow. The two folders import
  nothing of each other (`.importlinter`).
- `_specs`: the `_core.specs` values of live arguments (`spec_of`, `signature_of`).

The pure Keras vocabulary (step names, Keras methods, variable owners) is `_core.keras_names`:
this package reads live objects, and gives `_core` values back.

Callers use the names below as `_compat.<name>`: replace one there (a test's
`monkeypatch.setattr(_compat, ...)`) to change what callers get. A module's own
state (`_flavors._KERAS_EXPORT_DIRS`, `tensorflow.function._facts_of_trace`, ...) is read
from that module: it exists there only.
"""

from typing import TYPE_CHECKING

from traceguard._compat._backend import BACKEND, BACKENDS, IS_JAX, IS_TORCH, KERAS_UNAVAILABLE, parse_version
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
    variable_paths,
    wrap_build,
)
from traceguard._compat._frames import (
    TfFunctionFrame,
    built_by_keras_call,
    calling_frame,
    symbolic_pass,
    user_stacklevel,
)
from traceguard._compat._function_tracing import (
    FunctionTracing,
    innermost_tracing,
    stops_trace,
    tracing_of_graph,
)
from traceguard._compat._function_tracing import connect as connect_trace_sink
from traceguard._compat._function_tracing import disconnect as disconnect_trace_sink
from traceguard._compat._interface import BACKEND_NAMES
from traceguard._core.keras_names import KERAS_METHODS, KerasCall

# The backend's answers, the names of `_interface.Backend` (each backend's `__all__`).
if TYPE_CHECKING:
    # Type checkers cannot read a computed `__all__`: the same names, as `tensorflow.backend` types
    # them (tests/compat/tensorflow/test_compat.py checks that this list is `BACKEND_NAMES`).
    from traceguard._compat.tensorflow.backend import (  # noqa: F401 (re-exported: `__all__`)
        DEFAULT_FLAVOR,
        TF_VERSION,
        TRACER,
        any_created_in_a_trace,
        control_flow_of,
        current_graph_name,
        current_replica,
        default_graph,
        deferred_since,
        deferred_variable_paths,
        deferred_variables_mark,
        defers_variables,
        distributed_process,
        enclosing_tf_function,
        executing_eagerly,
        frequent_tracing_threshold,
        graph_body,
        holds_tensor,
        in_save_context,
        in_symbolic_build,
        in_xla_context,
        keep_autograph_out,
        keras2_flavor,
        keras3_flavor,
        keras_call,
        print_at_each_execution,
        retracing_warning_notes,
        run_unconverted,
        scratch_graph_outer,
        start_creation_watch,
        stop_creation_watch,
        tensor_spec_reader,
        traces_before,
        uncached_setting,
        uncached_transformation,
        variable_creation_watch,
        wrap_call,
    )
elif IS_JAX:
    from traceguard._compat.jax.backend import *  # noqa: F403
elif IS_TORCH:
    from traceguard._compat.torch.backend import *  # noqa: F403
else:
    from traceguard._compat.tensorflow.backend import *  # noqa: F403

from traceguard._compat._specs import signature_of, spec_of  # noqa: E402 (after the backend)
from traceguard._core.keras_names import (  # noqa: E402
    DENSE_TENSOR_TYPES,
    KERAS_STEP_FUNCTIONS,
    is_keras_step_function,
)

# The Keras `traceguard.TraceAwareLayer` follows; all None when only the engine is here
# (plain JAX, or TensorFlow without Keras): then only whole functions trace.
KERAS_FLAVOR = DEFAULT_FLAVOR.name if DEFAULT_FLAVOR else None  # noqa: F405
IS_KERAS_3 = DEFAULT_FLAVOR.is_keras_3 if DEFAULT_FLAVOR else False  # noqa: F405
keras = DEFAULT_FLAVOR.keras if DEFAULT_FLAVOR else None  # noqa: F405
LayerBase = DEFAULT_FLAVOR.layer_base if DEFAULT_FLAVOR else None  # noqa: F405

# A literal list, which documentation tools read without running the code; it holds
# `_interface.BACKEND_NAMES` (tests/compat/tensorflow/test_compat.py checks it).
__all__ = [
    "BACKEND", "BACKENDS", "BACKEND_NAMES", "DEFAULT_FLAVOR", "DENSE_TENSOR_TYPES", "FunctionTracing",
    "IS_JAX", "IS_KERAS_3", "IS_TORCH", "KERAS_FLAVOR", "KERAS_METHODS", "KERAS_STEP_FUNCTIONS",
    "KERAS_UNAVAILABLE", "KerasCall",
    "KerasFlavor", "LayerBase", "TF_VERSION", "TRACER", "TfFunctionFrame",
    "any_created_in_a_trace", "backing_variable", "built_by_keras_call", "calling_frame",
    "connect_trace_sink",
    "control_flow_of", "current_graph_name", "current_replica", "default_graph",
    "defers_variables", "deferred_since", "deferred_variable_paths", "deferred_variables_mark",
    "describe_versions", "disconnect_trace_sink", "distributed_process", "enclosing_tf_function",
    "executing_eagerly",
    "flavor_of_class", "frequent_tracing_threshold", "graph_body", "holds_tensor", "in_save_context",
    "in_symbolic_build",
    "in_xla_context", "innermost_tracing", "is_base_layer_method", "is_keras_default_method",
    "is_keras_step_function", "keep_autograph_out", "keras", "keras2_flavor", "keras3_flavor",
    "keras_call", "layer_base_of", "layer_variables", "load_flavor", "loaded_layer_bases",
    "mark_keras_default_method", "parse_version", "present_signature", "print_at_each_execution",
    "retracing_warning_notes", "run_unconverted", "scratch_graph_outer",
    "signature_of", "spec_of",
    "start_creation_watch", "stop_creation_watch", "stops_trace", "symbolic_pass", "tensor_spec_reader",
    "traces_before", "tracing_of_graph", "uncached_setting", "uncached_transformation",
    "user_stacklevel",
    "variable_creation_watch", "variable_path", "variable_paths", "wrap_build", "wrap_call",
]
