"""Replaying a `tf.function`'s recorded signatures against a fresh copy of it (TensorFlow only).

`explanation.verify_fixes()` checks a proposed fix by tracing a copy,
`tf.function(python_function, ...)`, with zero tensors of each recorded spec and
counting its traces (`experimental_get_tracing_count()`). Only public TensorFlow
API is used; it lives here because it is the backend's. The user's function
object is never called or changed: the copy wraps the same Python function.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import tensorflow as tf


def python_function(function: Any) -> Any:
    """The Python function a `tf.function` wraps (bound to its instance for a method), or None."""
    return getattr(function, "python_function", None)


def tensor_spec(dtype: str, dims: Sequence[int | None] | None) -> Any:
    """`tf.TensorSpec(shape=dims, dtype=dtype)`; an unknown rank when `dims` is None."""
    return tf.TensorSpec(shape=None if dims is None else list(dims), dtype=tf.dtypes.as_dtype(dtype))


def zeros(dtype: str, dims: Sequence[int | None] | None) -> Any:
    """A tensor of zeros (empty strings for `string`).

    An unknown dimension becomes 1, an unknown rank a scalar.
    """
    shape = [] if dims is None else [1 if dim is None else dim for dim in dims]
    return tf.zeros(shape, dtype=tf.dtypes.as_dtype(dtype))


def constant(value: Any, dtype: str) -> Any:
    """`tf.constant(value, dtype)`: a Python number as the tensor a user would pass."""
    return tf.constant(value, dtype=tf.dtypes.as_dtype(dtype))


def count_traces(function: Any, calls: Sequence[tuple[tuple, dict]], **options: Any) -> int:
    """Calls `tf.function(function, **options)` with each `(args, kwargs)`; returns its trace count.

    A new `tf.function` object each time, so nothing is shared with the user's
    function or an earlier replay. An exception of the function passes through.
    """
    copy = tf.function(function, **options)
    # TensorFlow's retracing warning counts traces per Python function, the user's
    # included: the replay's retraces are expected, and not the user's to read.
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        for args, kwargs in calls:
            copy(*args, **kwargs)
    finally:
        logger.setLevel(level)
    return int(copy.experimental_get_tracing_count())
