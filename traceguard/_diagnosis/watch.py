"""`explain()` and `watch()`: every Keras layer's body runs, with no change to the user's code.

Both open an instrumentation session (`_instrument`), so plain Keras layers are
recorded for its duration, and register an `Explanation`'s `Filler` with the recorder,
which also hears `TraceAwareLayer`s. Closing the session, even on an exception,
restores every Keras layer class.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

from traceguard._diagnosis import instrument as _instrument
from traceguard._diagnosis.explanation import Explanation
from traceguard._diagnosis.filler import Filler
from traceguard._diagnosis.trace_file import TraceFileWriter, check_trace_file_path
from traceguard._record.observers import observing


@functools.cache
def _say_keras_unavailable() -> None:
    """Logs, once per process, why Keras is not recorded though installed: its backend is missing."""
    from traceguard import _compat

    if _compat.KERAS_UNAVAILABLE:
        logging.getLogger("traceguard").warning(_compat.KERAS_UNAVAILABLE)


@contextlib.contextmanager
def _session(explanation: Explanation, log_eager: bool) -> Iterator[Explanation]:
    _say_keras_unavailable()
    _instrument.open_session(log_eager)
    try:
        with observing(Filler(explanation)):
            yield explanation
    finally:
        _instrument.close_session(log_eager)


def describe_target(target: Any) -> str:
    """How a report names what was explained: a layer's `name`, a function's name."""
    if hasattr(target, "experimental_get_tracing_count"):  # A tf.function.
        return f"tf.function {getattr(target, 'name', '?')}"
    name = getattr(target, "name", None)
    if isinstance(name, str):
        return name
    return getattr(target, "__qualname__", None) or type(target).__name__


def explain(target: Callable[..., Any], *args: Any, **kwargs: Any) -> Explanation:
    """Calls `target(*args, **kwargs)` and explains every layer body run it caused.

    Every Keras layer involved is recorded, plain Keras layers included: they
    are instrumented for the duration of the call only. Each run is classified
    (`symbolic`, `trace`, `variable_retrace`, `retrace`, `save`, `eager`) with
    the reason, what changed since the previous trace and how to avoid it.
    Runs of plain layers are recorded from the first call on: a retrace of a
    function traced before `explain()` reads as its first trace. A
    `TraceAwareLayer` also logs in its own `trace_log`, and its eager runs
    become events only if it has `log_eager=True` (they are always counted).

    Args:
        target: What to call: a Keras layer or model, a `tf.function`, or any
            function that calls layers.
        *args: Positional arguments for `target`.
        **kwargs: Keyword arguments for `target`.

    Returns:
        A `traceguard.Explanation`: `str()` is a readable report, `.events`
        the `TraceEvent`s, `.layers` the runs grouped per layer `name`.

    Raises:
        ValueError: If `target` is not callable.
        Exception: Whatever `target` raises, unchanged.

    Example:

    ```python
    step = tf.function(keras.layers.Dense(4))
    print(traceguard.explain(step, tf.ones((2, 3))))
    ```
    """
    if not callable(target):
        raise ValueError("`explain()` expects a Keras layer or model, a tf.function or a "
                         f"function to call. Received: target={target!r}")
    explanation = Explanation(f"explain({describe_target(target)})")
    with _session(explanation, log_eager=True):
        target(*args, **kwargs)
    return explanation


@contextlib.contextmanager
def watch(trace_file: str | os.PathLike[str] | None = None,
          trace_file_label: str | None = None) -> Iterator[Explanation]:
    """Records every Keras layer's body runs while the block runs.

    Every Keras layer class (the subclasses of Keras's `Layer` that exist when
    the block starts, and those defined inside it) runs a recorded `call` for
    the duration of the block; on leaving it, even by an exception, each class
    gets its own `call` back. Eager runs of plain layers are counted, not
    logged, since a script may make millions. Runs made by other threads
    meanwhile are included.

    Args:
        trace_file: Path (str or path-like) of a trace file to write while the
            block runs: one JSON line per layer body run and per function
            trace, written and flushed as each happens, so a killed process
            keeps what it wrote; the eager run counts are written on leaving
            the block. `python -m traceguard report FILE` renders it, without
            TensorFlow. It may hold fields, filled when the file opens (at
            its first record), so that every worker of a multi-worker job
            runs the same code: `{worker}` (`"worker-1"`, `"chief-0"` from
            `TF_CONFIG`, `"process-1"` under `jax.distributed`, else
            `"<host>-<pid>"`), `{task_type}`, `{task_index}`,
            `{process_index}`, `{pid}`, `{host}`. An existing file is
            replaced; its directory must exist. Defaults to `None`, no file.
        trace_file_label: String, how reports name this process when they
            merge or compare several trace files. Defaults to `None`: the
            worker in a multi-worker job (`"worker-1"`), else
            `"<host>:<pid>"`.

    Returns:
        A context manager yielding a `traceguard.Explanation`, filled while the
        block runs.

    Raises:
        TypeError: If `trace_file` is not a str or path-like, or
            `trace_file_label` not a str.
        ValueError: If the directory of `trace_file` does not exist, or
            `trace_file` holds an unknown field.

    Example:

    ```python
    with traceguard.watch() as report:
        model.fit(x, y, batch_size=32)
        model.fit(x[:70], y[:70], batch_size=32)
    print(report)
    ```
    """
    explanation = Explanation("watch()")
    if trace_file is not None:
        path = check_trace_file_path(trace_file, trace_file_label, "watch")
        explanation._trace_file = TraceFileWriter(path, trace_file_label)
    try:
        with _session(explanation, log_eager=False):
            yield explanation
    finally:
        if explanation._trace_file is not None:
            explanation._trace_file.close(explanation.layers.values())
