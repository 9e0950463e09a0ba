"""The backend interface: what `tensorflow.backend` and `jax.backend` each provide, written once.

`traceguard._compat` re-exports the names of the backend Keras runs on; each backend
module's `__all__` is `BACKEND_NAMES`, and tests/compat/tensorflow/test_compat.py checks that both
define every name. Imports no backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from traceguard._compat._flavors import KerasFlavor
from traceguard._compat._frames import TfFunctionFrame
from traceguard._core.keras_names import KerasCall


class Backend(Protocol):
    """One backend's answers. `graph` arguments default to the current default graph."""

    TRACER: str  # What traces a function, for messages: "tf.function" or "jax.jit".
    TF_VERSION: tuple[int, int] | None  # None on JAX.
    DEFAULT_FLAVOR: KerasFlavor | None  # The Keras `traceguard.TraceAwareLayer` follows; None without Keras.

    def keras2_flavor(self) -> KerasFlavor:
        """tf_keras or TF 2.12-2.15's Keras 2, loaded; fails where there is none."""

    def keras3_flavor(self) -> KerasFlavor:
        """Keras 3, loaded."""

    def executing_eagerly(self) -> bool:
        """Whether ops run one by one now (no graph or trace is being built)."""

    def uncached_transformation(self) -> tuple[str, ...] | None:
        """The transformations running now when none keeps a cache (JAX's autodiff or `vmap`
        outside any `jax.jit`), outermost first: a body run under them is no trace. None
        otherwise, and always on TensorFlow."""

    def uncached_setting(self, frame: Any = None) -> tuple[str, str] | None:
        """The Keras step and its setting that run it untraced (`("train_step",
        "jit_compile=False")`), found on the stack from `frame`; None when none is."""

    def in_symbolic_build(self) -> bool:
        """Whether Keras runs `call` on symbolic inputs (build, output-shape inference)."""

    def default_graph(self) -> Any:
        """The graph being built, or None."""

    def enclosing_tf_function(self, graph: Any = None) -> TfFunctionFrame | None:
        """The function (tf.function or jax.jit) whose trace is running, and its phase."""

    def keras_call(self, graph: Any = None) -> KerasCall | None:
        """The Keras `fit`/`evaluate`/`predict`/`*_on_batch` whose step is being traced, or None."""

    def in_save_context(self, graph: Any = None) -> bool:
        """Whether the trace writes a SavedModel or an export."""

    def control_flow_of(self, graph: Any = None) -> str | None:
        """`"tf.while_loop"` or `"tf.cond"` when the graph is a body or branch of one, else None."""

    def in_xla_context(self) -> bool:
        """Whether the trace is compiled by XLA (`jit_compile=True`)."""

    def current_graph_name(self) -> str | None:
        """The name of the graph being built, for runs outside any tf.function."""

    def current_replica(self, graph: Any = None) -> int | None:
        """The replica id under `tf.distribute`, else None."""

    def distributed_process(self) -> tuple[int, int] | None:
        """`(process index, process count)` of this process in the backend's own multi-process
        job (`jax.distributed`, once initialized), else None. Never initializes a backend
        that was not; TensorFlow's workers are named by TF_CONFIG, which is public."""

    def variable_creation_watch(self, on_create: Callable[[Any], None], graph: Any = None) -> Any:
        """A context manager calling `on_create(variable)` for each variable created inside."""

    def defers_variables(self) -> bool:
        """Whether the variables made now wait for the symbolic pass's end in a list
        `deferred_since` reads (Keras 3 on TensorFlow, in its symbolic pass)."""

    def deferred_variables_mark(self) -> Any:
        """Where the list of deferred variables stands now, when `defers_variables()`."""

    def deferred_since(self, mark: Any) -> list[Any] | None:
        """The variables deferred since `mark`; None when that is not known."""

    def scratch_graph_outer(self, graph: Any) -> Any:
        """The graph a Keras symbolic pass's scratch `graph` is nested in; None for other graphs."""

    def start_creation_watch(self, on_create: Callable[[Any], None], graph: Any = None) -> Any:
        """Calls `on_create(variable)` for each variable this thread creates from now on,
        until `stop_creation_watch` gets the token returned."""

    def stop_creation_watch(self, token: Any) -> None:
        """Ends the watch `start_creation_watch` returned `token` for."""

    def tensor_spec_reader(self, type_: type) -> Callable[[Any], tuple[str, Any]] | None:
        """For a tensor type read without its public properties: a function giving an
        instance's `(dtype name, dims)` (dims a tuple of ints and None, or None for an
        unknown rank). None for other types."""

    def any_created_in_a_trace(self, variables: list[Any]) -> bool:
        """Whether any of `variables` was created by a tf.function's first trace."""

    def deferred_variable_paths(self, variables: list[Any]) -> tuple[str, ...]:
        """Paths of the variables whose backend variable Keras creates later."""

    def keep_autograph_out(self, obj: Any) -> Any:
        """`obj`, marked so AutoGraph never converts it."""

    def run_unconverted(self, obj: Any) -> Any:
        """`obj`, run as Python even inside an AutoGraph-converted body."""

    def graph_body(self, layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
                   caller: Any) -> Callable[..., Any]:
        """`original`, converted by AutoGraph where Keras would have converted it."""

    def wrap_call(self, original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
        """`wrapper` made to look like `original` to Keras (signature, AutoGraph)."""

    def holds_tensor(self, value: Any) -> bool:
        """Whether `value` is or contains a backend tensor."""

    def retracing_warning_notes(self, note_for: Callable[[str], str | None]) -> Any:
        """A context manager appending `note_for(function_text)` to TensorFlow's retracing warning."""

    def print_at_each_execution(self, inputs: list[Any], stream: Any, sep: str, end: str) -> None:
        """Prints `inputs` each time the graph being built runs."""

    def frequent_tracing_threshold(self) -> int | None:
        """How many traces of one function's code, each in a call made eagerly, make the backend
        warn of frequent retracing (TensorFlow: 5, whichever objects of the code traced); None
        when it never warns."""

    def traces_before(self, function: Any) -> int | None:
        """How many times `function` traced before its trace now ending, as the backend counts;
        None when the backend keeps no count."""


BACKEND_NAMES = tuple(sorted(
    name for name in (*Backend.__annotations__, *vars(Backend)) if not name.startswith("_")))
