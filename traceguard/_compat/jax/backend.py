"""The JAX backend: every backend question, answered for Keras 3 on JAX, without TensorFlow.

`__all__` is the backend interface (`_interface.Backend`), as in `tensorflow.backend`;
`traceguard._compat` takes them from the backend Keras runs on. This module never
imports TensorFlow (tests/record/test_jax_backend.py checks it in a subprocess).

Keras 3 on JAX (measured with Keras 3.15.1 and jax 0.10.2; /work/shared/tracing-facts.md):
a body run is eager at JAX's top level, symbolic under Keras's `SymbolicScope`
(`compute_output_spec` runs `call` on Tracers through `jax.eval_shape`), and a
trace when `jax.jit` misses its cache: `pjit.py`'s `cache_miss` closure, whose
free variable `fun` is the jitted Python function, is then on the stack. JAX
has no trace for variable creation: Keras's `stateless_call` and its jitted
steps take variables as arguments, so `creates_variables` is always None. The
TensorFlow-only questions (save context, graph, replica, AutoGraph) have neutral
answers.

Plain JAX (no Keras, or a Keras that cannot import: `_backend.KERAS_UNAVAILABLE`)
is recorded too: `DEFAULT_FLAVOR` is then None, and only `jax.jit` functions trace.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/core.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/pjit.py
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable
from typing import Any

import jax
from jax._src import core as _jax_core

from traceguard._compat import _backend, _flavors, _frames, _function_tracing, _keras_calls
from traceguard._compat._flavors import KerasFlavor, internal_missing, load_flavor
from traceguard._compat._frames import TfFunctionFrame
from traceguard._compat._graphless import (  # noqa: F401 (the backend interface's answers)
    deferred_since,
    deferred_variable_paths,
    deferred_variables_mark,
    defers_variables,
    graph_body,
    keep_autograph_out,
    run_unconverted,
    scratch_graph_outer,
    start_creation_watch,
    stop_creation_watch,
    variable_creation_watch,
    wrap_call,
)
from traceguard._compat._interface import BACKEND_NAMES
from traceguard._compat.jax import traces as _jax_traces
from traceguard._compat.jax.transforms import uncached_setting, uncached_transformation  # noqa: F401
from traceguard._core.keras_names import KerasCall

__all__ = list(BACKEND_NAMES)

TRACER = "jax.jit"  # What traces a function, for messages.
TF_VERSION: tuple[int, int] | None = None

# On JAX, `TraceAwareLayer` is Keras 3's `Layer`: the only Keras that runs there. `_backend`
# imported Keras already when it imports; plain JAX has no layers to record.
HAS_KERAS = "keras" in sys.modules and _backend.KERAS_UNAVAILABLE is None
DEFAULT_FLAVOR: KerasFlavor | None = (_flavors.set_default_flavor(load_flavor("keras3"))
                                      if HAS_KERAS else None)
if HAS_KERAS:
    _frames.hide_traceguard_frames_from_keras()  # From errors raised through the recorded `call`.


def keras2_flavor() -> KerasFlavor:
    """Keras 2 never runs on JAX: ImportError."""
    if not HAS_KERAS:
        raise ImportError("Keras 2 runs on TensorFlow only, and this process records plain JAX. "
                          f"Received: {_flavors.describe_versions()}.")
    raise ImportError("Keras 2 runs on TensorFlow only, and Keras 3 runs on JAX here. "
                      f"Received: KERAS_BACKEND='jax' ({_flavors.describe_versions()}).")


def keras3_flavor() -> KerasFlavor:
    """Keras 3, the default flavor on JAX; ImportError saying why when Keras cannot run."""
    if DEFAULT_FLAVOR is None:
        raise ImportError(_backend.KERAS_UNAVAILABLE or (
            "Keras is not installed: traceguard records plain jax.jit functions here "
            "(pip install keras, and KERAS_BACKEND=jax, for Keras on JAX)."))
    return DEFAULT_FLAVOR


# --- where JAX is running now ------------------------------------------------------------
def executing_eagerly() -> bool:
    # `trace_state_clean()` is True at the top level: no jit, grad, vmap or eval_shape
    # trace is running (jax/_src/core.py, `TracingContext.is_top_level`).
    return _jax_core.trace_state_clean()


def in_symbolic_build() -> bool:
    """True while Keras runs `call` on symbolic inputs to infer shapes or build."""
    return DEFAULT_FLAVOR is not None and DEFAULT_FLAVOR.symbolic_scope()


def _find_jax_cache_miss_code() -> Any:
    from jax._src import pjit

    codes = [c for c in pjit._cpp_pjit.__code__.co_consts
             if getattr(c, "co_name", None) == "cache_miss"]
    if len(codes) != 1 or "fun" not in codes[0].co_freevars:
        raise internal_missing("jax._src.pjit._cpp_pjit.<cache_miss> and its `fun`")
    return codes[0]


_JAX_CACHE_MISS_CODE = _find_jax_cache_miss_code()


def default_graph() -> None:
    return None  # JAX traces no graph object: the functions below take `graph=None`.


def enclosing_tf_function(graph: Any = None) -> TfFunctionFrame | None:
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


def in_save_context(graph: Any = None) -> bool:
    return False


def any_created_in_a_trace(variables: list[Any]) -> bool:
    return False  # `jax.jit` creates no variables: Keras passes them in.


_function_tracing.set_hook(_jax_traces)


def retracing_warning_notes(note_for: Callable[[str], str | None]) -> Any:
    return contextlib.nullcontext()  # JAX has no retracing warning of its own.


def frequent_tracing_threshold() -> int | None:
    return None


def traces_before(function: Any) -> int | None:
    return None  # `jax.jit` keeps no count of its traces.


def keras_call(graph: Any = None) -> KerasCall | None:
    # A jitted step's trace runs on the calling thread: its stack holds the Keras method.
    return _keras_calls.keras_call(sys._getframe(1))


def control_flow_of(graph: Any = None) -> str | None:
    return None  # No graph to ask: a `lax.while_loop` body's runs are classified as the trace's.


def in_xla_context() -> bool:
    return False  # jax.debug.print runs inside XLA: printing needs no fallback.


def current_graph_name() -> str | None:
    return None


def current_replica(graph: Any = None) -> int | None:
    return None


# `jax.distributed.is_initialized()` tells whether `jax.distributed.initialize()` ran without
# initializing a backend (it reads the distributed client, jax/_src/distributed.py), which
# `jax.process_index()` would do in a process of no job.
if not callable(getattr(jax.distributed, "is_initialized", None)):
    raise internal_missing("`jax.distributed.is_initialized()`")


def distributed_process() -> tuple[int, int] | None:
    if not jax.distributed.is_initialized():
        return None
    # Initialized: the backend knows the job, and the first array made initialized it anyway.
    return jax.process_index(), jax.process_count()


tensor_spec_reader = _flavors.keras_tensor_spec_reader


# --- printing at each execution (the "tf.print" print mode) ---------------------------
def holds_tensor(value: Any) -> bool:
    """Whether `value` (a structure) holds a JAX array or Tracer: printed at execution."""
    try:
        return any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(value))
    except Exception:  # A structure JAX cannot flatten.
        return False


def print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
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
