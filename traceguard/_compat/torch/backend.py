"""The torch backend: every backend question, answered for Keras 3 on torch.

`__all__` is the backend interface (`_interface.Backend`), as in `_jax`. Keras 3 on
torch runs eagerly unless a step is compiled (`jit_compile=True`: `torch.compile` of
`one_step_on_data`, keras/src/backend/torch/trainer.py); a body run is then part of
a Dynamo frame compile (`traces`), found by thread as on JAX. Symbolic runs
are Keras's `SymbolicScope` (`compute_output_spec` on meta tensors). torch has no
graph object a run could be asked about, no AutoGraph and no variable-creation trace:
the TensorFlow-only questions have neutral answers. Never imports TensorFlow or JAX.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import torch

from traceguard._compat import _backend, _flavors, _frames, _function_tracing, _keras_calls
from traceguard._compat._flavors import KerasFlavor, load_flavor
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
from traceguard._compat.torch import traces as _dynamo_traces
from traceguard._core.keras_names import KerasCall

__all__ = list(BACKEND_NAMES)

TRACER = "torch.compile"  # What traces (compiles) a function, for messages.
TF_VERSION: tuple[int, int] | None = None

HAS_KERAS = "keras" in sys.modules and _backend.KERAS_UNAVAILABLE is None
DEFAULT_FLAVOR: KerasFlavor | None = (_flavors.set_default_flavor(load_flavor("keras3"))
                                      if HAS_KERAS else None)
if HAS_KERAS:
    _frames.hide_traceguard_frames_from_keras()

_function_tracing.set_hook(_dynamo_traces)


def keras2_flavor() -> KerasFlavor:
    """Keras 2 never runs on torch: ImportError."""
    raise ImportError("Keras 2 runs on TensorFlow only, and this process records torch. "
                      f"Received: {_flavors.describe_versions()}.")


def keras3_flavor() -> KerasFlavor:
    """Keras 3, the default flavor on torch; ImportError saying why when Keras cannot run."""
    if DEFAULT_FLAVOR is None:
        raise ImportError(_backend.KERAS_UNAVAILABLE or (
            "Keras is not installed: traceguard records plain torch.compile functions here "
            "(pip install keras, and KERAS_BACKEND=torch, for Keras on torch)."))
    return DEFAULT_FLAVOR


def dynamo_compiling() -> bool:
    """Whether Dynamo is tracing a frame now: it folds this to True while it traces
    (`torch.compiler.is_compiling`, torch/compiler/__init__.py), so a branch on it costs nothing
    in the compiled graph."""
    return torch.compiler.is_compiling()


def executing_eagerly() -> bool:
    # `torch.compiler.is_compiling()` is True while Dynamo traces a frame (torch/compiler/__init__.py).
    return not torch.compiler.is_compiling()


def uncached_transformation() -> tuple[str, ...] | None:
    return None


# Keras 3's torch trainer runs its steps eagerly unless `jit_compile=True` (keras/src/backend/torch/
# trainer.py; `jit_compile="auto"` resolves to False on torch, measured with Keras 3.15.1).
_KERAS_TRAINER = "/keras/src/backend/torch/trainer.py"
_STEP_NAMES = ("train_step", "test_step", "predict_step")


def uncached_setting(frame: Any = None) -> tuple[str, str] | None:
    """The Keras step and the setting that run it eagerly (`("train_step", "jit_compile=False")`)
    when a Keras 3 torch trainer's step is on the stack from `frame`; else None (no Keras step, or
    a compiled one that Dynamo gave up on)."""
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name in _STEP_NAMES and code.co_filename.replace("\\", "/").endswith(_KERAS_TRAINER):
            model = frame.f_locals.get("self")
            if getattr(model, "run_eagerly", False):
                return code.co_name, "run_eagerly=True"
            if getattr(model, "jit_compile", True) is False:
                return code.co_name, "jit_compile=False"
            return None
        frame = frame.f_back
    return None


def in_symbolic_build() -> bool:
    """True while Keras runs `call` on symbolic inputs to infer shapes or build."""
    scope = DEFAULT_FLAVOR.symbolic_scope if DEFAULT_FLAVOR is not None else None
    return scope is not None and scope()


def default_graph() -> None:
    return None  # No graph object: the functions below take `graph=None`.


def enclosing_tf_function(graph: Any = None) -> TfFunctionFrame | None:
    """The frame Dynamo compiles on this thread now (as a `TfFunctionFrame`), or None."""
    tracing = _function_tracing.innermost_tracing()
    if tracing is None or tracing.origin != _dynamo_traces.ORIGIN:
        return None
    return TfFunctionFrame(tracing.function or tracing.name, tracing.name, None)


def in_save_context(graph: Any = None) -> bool:
    return False


def any_created_in_a_trace(variables: list[Any]) -> bool:
    return False  # Keras creates its torch variables eagerly.


def retracing_warning_notes(note_for: Callable[[str], str | None]) -> Any:
    return contextlib.nullcontext()  # torch warns at its recompile limit through its own logger.


def frequent_tracing_threshold() -> int | None:
    return None


def traces_before(function: Any) -> int | None:
    return None


def keras_call(graph: Any = None) -> KerasCall | None:
    return _keras_calls.keras_call(sys._getframe(1))


def control_flow_of(graph: Any = None) -> str | None:
    return None


def in_xla_context() -> bool:
    return False


def current_graph_name() -> str | None:
    return None


def current_replica(graph: Any = None) -> int | None:
    return None


def distributed_process() -> tuple[int, int] | None:
    # `torch.distributed.is_initialized()` is public and initializes nothing.
    distributed = getattr(torch, "distributed", None)
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return None
    return distributed.get_rank(), distributed.get_world_size()


tensor_spec_reader = _flavors.keras_tensor_spec_reader


def holds_tensor(value: Any) -> bool:
    """Whether `value` (a structure) holds a torch tensor."""
    try:
        return any(isinstance(leaf, torch.Tensor) for leaf in torch.utils._pytree.tree_leaves(value))
    except Exception:  # A structure torch cannot flatten.
        return False


def print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
    # Under Dynamo, `print` is a graph break: Python runs it at each execution.
    print(*inputs, sep=sep, end=end, file=stream)
