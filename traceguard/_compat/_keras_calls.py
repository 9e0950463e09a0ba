"""Which Keras method (`fit`, `predict`, ...) a trace runs under, and what data it was given.

A changed batch dimension means a partial last batch in `fit` (fixed by dropping the
remainder), but a new batch size in `predict` (where dropping would lose predictions);
the fix also depends on whether `fit` got a `tf.data.Dataset` or arrays. Found by walking
the stack to the innermost frame of one of the methods below in a Keras package, once per
trace. The methods and their `x` and `batch_size` parameters are the same in Keras 3
(keras/src/backend/*/trainer.py) and Keras 2 (tf_keras/src/engine/training.py; keras
2.12-2.15's engine/training.py); `test_compat.py` checks each loaded Keras.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from traceguard._core.keras_names import KERAS_METHODS, KerasCall


def _package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)  # Finds the package without importing it.
    location = spec.submodule_search_locations if spec else None
    return os.path.join(list(location)[0], "") if location else None


_KERAS_DIRS = tuple(directory for directory in map(_package_dir, ("keras", "tf_keras")) if directory)


def keras_method_frame(frame: Any) -> Any:
    """The frame of the innermost Keras `fit`/`evaluate`/`predict`/`*_on_batch` from `frame` up, or None."""
    while frame is not None:
        code = frame.f_code
        if code.co_name in KERAS_METHODS and code.co_filename.startswith(_KERAS_DIRS) \
                and "self" in frame.f_locals:
            return frame
        frame = frame.f_back
    return None


def is_keras_frame(frame: Any) -> bool:
    """Whether `frame` runs code of a Keras package (a method, its traceback filter)."""
    return frame.f_code.co_filename.startswith(_KERAS_DIRS)


def keras_call(start: Any = None) -> KerasCall | None:
    """The innermost Keras `fit`/`evaluate`/`predict`/`*_on_batch` on this thread's stack, or None.

    `start`: the frame to walk up from; defaults to the caller's.
    """
    frame = keras_method_frame(sys._getframe(1) if start is None else start)
    if frame is None:
        return None
    local = frame.f_locals
    data, samples = _describe_data(local.get("x"))
    batch_size = local.get("batch_size")
    return KerasCall(frame.f_code.co_name, data, samples,
                     batch_size if type(batch_size) is int else None, id(local["self"]))


def _describe_data(x: Any) -> tuple[str | None, int | None]:
    if x is None:
        return None, None
    if hasattr(x, "element_spec") and hasattr(x, "batch"):  # tf.data.Dataset's public API.
        return "dataset", None
    first = x
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, dict) and first:
        first = next(iter(first.values()))
    shape = getattr(first, "shape", None)
    if shape is not None and hasattr(first, "dtype"):
        try:
            return "arrays", int(shape[0])
        except (TypeError, ValueError, IndexError):
            return "arrays", None
    return "other", None
