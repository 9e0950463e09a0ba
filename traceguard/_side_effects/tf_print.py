"""`print` as a `tf.print` op: `traceguard.print` and the `"tf.print"` mode's translation.

A Python `print(*args, sep=..., end=..., file=...)` becomes `tf.print` with the
same separator, ending and stream. Under XLA, which has no kernel for
tf.print's `StringFormat` op, printing falls back to once per input
signature at trace time, with one warning.
"""

from __future__ import annotations

import builtins
import sys
import warnings
from collections.abc import Callable
from typing import Any

from traceguard import _compat
from traceguard._record.runs import active_runs
from traceguard._side_effects.first_runs import Memory, log_internal_error, memory_of_layer, signature_key

_PRINT_KEYWORDS = frozenset({"sep", "end", "file", "flush"})
_site_memory = Memory()  # `traceguard.print` under XLA, outside any layer.
_warned: set[tuple[str, Any]] = set()


def print_options(kwargs: dict[str, Any]) -> tuple[str, str, Any]:
    """(sep, end, file) as the builtin `print` reads them, raising its errors."""
    if not kwargs.keys() <= _PRINT_KEYWORDS:
        builtins.print(**kwargs)  # Raises the builtin's own TypeError, printing nothing.
    sep, end = kwargs.get("sep"), kwargs.get("end")
    for name, value in (("sep", sep), ("end", end)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be None or a string, not {type(value).__name__}")
    return (" " if sep is None else sep), ("\n" if end is None else end), kwargs.get("file")


def _holds_tensor(value: Any) -> bool:
    try:
        return _compat.holds_tensor(value)
    except Exception:  # A structure tf.nest cannot flatten (e.g. unsortable keys).
        return False


def print_each_execution(args: tuple[Any, ...], kwargs: dict[str, Any],
                         on_unsupported_file: Callable[[], None]) -> None:
    """`print(*args, **kwargs)` as a `tf.print` op in the graph being traced."""
    sep, end, file = print_options(kwargs)
    # tf.print writes from C++ to the process's stdout or stderr, whatever sys.stdout is now.
    if file is None or file is sys.stdout or file is sys.__stdout__:
        stream = sys.stdout
    elif file is sys.stderr or file is sys.__stderr__:
        stream = sys.stderr
    else:
        on_unsupported_file()
        return builtins.print(*args, **kwargs)
    # Python values print with `str()` as `print` does (tf.print would use their repr).
    inputs = [arg if _holds_tensor(arg) else str(arg) for arg in args]
    try:
        # `tf.print`; on JAX, `jax.debug.print` (see `_compat.print_at_each_execution`).
        _compat.print_at_each_execution(inputs, stream, sep, end)
    except Exception:  # Something tf.print cannot format: print it as Python would, now.
        log_internal_error("turning print into tf.print")
        builtins.print(*args, **kwargs)


def xla_fallback_message(what: str) -> str:
    return (f"{what} cannot become tf.print here: XLA (jit_compile=True) cannot compile tf.print "
            "(TensorFlow has no XLA kernel for its StringFormat op). It falls back to "
            "print=\"once\": it prints at trace time, once per input signature, not at every step. "
            "To print at every step, call this code outside the jit-compiled function, or use "
            "jit_compile=False while debugging. (Warned once.)")


def unsupported_file_message(what: str, kwargs: dict[str, Any]) -> str:
    return (f"{what} can become tf.print only for sys.stdout and sys.stderr: tf.print cannot "
            "write to a Python file object, so it printed at trace time instead. "
            f"Received: file={kwargs.get('file')!r}")


@_compat.run_unconverted
def print(*args: Any, **kwargs: Any) -> None:  # `traceguard.print`; builtins.print below.
    """Prints like Python's `print` when eager, and at every graph execution when traced.

    The `"tf.print"` routing of `side_effects` as a function, usable anywhere:
    eagerly it is the builtin `print`; while TensorFlow traces, it adds a
    `tf.print` to the graph, writing to stdout (or stderr with
    `file=sys.stderr`) with `sep` and `end`, and tensors show their runtime
    values. Under XLA (`jit_compile=True`) it warns once and prints at trace
    time instead, once per call site (and per input signature of the
    enclosing `TraceAwareLayer`).

    Args:
        *args: What to print, as for `print`.
        **kwargs: `sep`, `end`, `file` and `flush`, as for `print`.

    Example:

    ```python
    @tf.function
    def step(x):
        traceguard.print("x =", x)  # At every call: "x = [1 2]".
        return x + 1
    ```
    """
    if _compat.executing_eagerly():
        return builtins.print(*args, **kwargs)
    # Keras's symbolic pass builds a scratch graph that is never run or compiled.
    if _compat.in_symbolic_build() or not _compat.in_xla_context():
        return print_each_execution(args, kwargs, lambda: _warn_once_for(
            "file", _compat.calling_frame().f_code,
            unsupported_file_message("`traceguard.print`", kwargs)))
    frame = _compat.calling_frame()
    site = (frame.f_code, frame.f_lineno)
    _warn_once_for("xla", frame.f_code, xla_fallback_message("`traceguard.print`"))
    runs = active_runs()
    first = (memory_of_layer(runs[-1]).claim(("print", site, signature_key(runs[-1]))) if runs
             else _site_memory.claim(site))
    if first:
        builtins.print(*args, **kwargs)
    else:
        print_options(kwargs)


def _warn_once_for(topic: str, code: Any, message: str) -> None:
    """Warns about `topic` once per function (code object) that calls `traceguard.print`."""
    if (topic, code) not in _warned:
        _warned.add((topic, code))
        warnings.warn(message, UserWarning, stacklevel=_compat.user_stacklevel())
