"""The user's side of a traced call: which stack frame is the user's, and the call's arguments by name.

Every backend hook asks these when a trace starts: the first frame outside TensorFlow,
Keras, JAX and traceguard (the call site a report shows), the library function the
user's frame called (`TensorFlowTrainer.fit`), and the arguments bound to the traced
function's parameter names. Plain Python; each answer found once per file or function.
"""

from __future__ import annotations

import inspect
import os
import weakref
from typing import Any

from traceguard._compat._frames import _LIBRARY_DIRS
from traceguard._core.specs import ArgumentPath

# Each file's answer, found once: a dict lookup on the (cached) hash of a file name
# costs a fraction of `startswith` over every library directory, on each frame walked.
_library_files: dict[str, bool] = {}


def is_library(filename: str) -> bool:
    known = _library_files.get(filename)
    if known is None:
        # AutoGraph's converted copies (temporary files) belong to no file a user can open.
        known = filename.startswith(_LIBRARY_DIRS) or "__autograph_generated_file" in filename
        if len(_library_files) < 65536:
            _library_files[filename] = known
    return known


# traceguard's own hooks (`tensorflow.calls`' around `Function.__call__`) are no entry a user called.
OWN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def user_frame(frame: Any) -> tuple[Any, str | None]:
    """The first user frame from `frame` outward, and the library function it called.

    The second is the qualified name of the outermost library function before the
    user's frame that is no decorator's wrapper (`"TensorFlowTrainer.fit"`), or None.
    """
    entry = None
    while frame is not None and is_library(frame.f_code.co_filename):
        code = frame.f_code
        qualname = getattr(code, "co_qualname", code.co_name)  # Python 3.11+ has the qualified name.
        # Not a decorator's wrapper (Keras's `error_handler`), nor traceguard's hook.
        if "<locals>" not in qualname and not code.co_filename.startswith(OWN_DIR):
            entry = qualname
        frame = frame.f_back
    return frame, entry


# Each function's parameters, found once: `inspect.signature` of a TF-decorated
# function takes over 100 us; the traces of one function reuse it.
_parameters: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_NAMED = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _signature(function: Any) -> tuple[inspect.Signature, tuple[str, ...] | None] | None:
    """`function`'s signature, and its names when every parameter is positional."""
    try:
        found = _parameters.get(function)
    except TypeError:  # Unhashable.
        found = None
    if found is None:
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return None
        parameters = signature.parameters.values()
        names = tuple(p.name for p in parameters) if all(p.kind in _NAMED for p in parameters) else None
        found = (signature, names)
        try:
            _parameters[function] = found
        except TypeError:  # Not weakly referenceable: found again next time.
            pass
    return found


def bind_arguments(function: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    """A call's arguments by `function`'s parameter names (a bound method's `self` excluded).

    Variadic positionals are keyed by their `ArgumentPath` (`str()`: `name[i]`),
    variadic keywords by their own names;
    `arg0`, `arg1`, ... when the call does not bind.
    """
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    found = _signature(function)
    if found is not None and found[1] is not None and not kwargs and len(args) == len(found[1]):
        return dict(zip(found[1], args))  # Every argument given by position: the usual case.
    bound = None
    if found is not None:
        try:
            bound = found[0].bind(*args, **kwargs)
        except TypeError:
            bound = None
    if bound is None:
        named = {f"arg{i}": value for i, value in enumerate(args)}
        named.update(kwargs)
        return named
    result: dict[Any, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            result.update((ArgumentPath(name, (i,)), item) for i, item in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            result.update(value)
        else:
            result[name] = value
    return result


def function_text(function: Any) -> str | None:
    try:
        return repr(function)
    except Exception:  # A user's broken `__repr__` must not break tracing.
        return None


__all__ = ["OWN_DIR", "bind_arguments", "function_text", "is_library", "user_frame"]
