"""The backend answers about graphs and AutoGraph for a backend that has neither (JAX, torch).

TensorFlow builds a graph per trace, creates variables in it and converts `call` with
AutoGraph; `tensorflow/backend.py` answers these questions from that. JAX and torch run
Python on tracers (or Dynamo's frames): no graph to watch, no variable a trace creates, no
conversion to keep out. Their backend modules take these answers from here.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any


def variable_creation_watch(on_create: Callable[[Any], None], graph: Any = None) -> Any:
    # Variables are arrays or tensors Keras holds; the layer's `variables` show new ones.
    return contextlib.nullcontext()


def defers_variables() -> bool:
    # A symbolic run's new variables are found by walking the layer's.
    return False


def deferred_variables_mark() -> Any:
    return None


def deferred_since(mark: Any) -> list[Any] | None:
    return None


def scratch_graph_outer(graph: Any) -> Any:
    return None


def start_creation_watch(on_create: Callable[[Any], None], graph: Any = None) -> Any:
    return None


def stop_creation_watch(token: Any) -> None:
    pass


def deferred_variable_paths(variables: list[Any]) -> tuple[str, ...]:
    # A trace creates no variables: values come when the symbolic pass ends.
    return ()


def keep_autograph_out(obj: Any) -> Any:
    return obj


run_unconverted = keep_autograph_out


def graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
               caller: Any) -> Callable[..., Any]:
    return original  # No AutoGraph.


def wrap_call(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    # Keras 3 reads `call`'s parameters with `inspect.signature`, which follows `__wrapped__`.
    return functools.update_wrapper(wrapper, original)
