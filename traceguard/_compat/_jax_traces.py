"""The hook that sees every `jax.jit` trace (a tracing-cache miss).

`jax.jit` looks its tracing cache up in `pjit._infer_params` on every call that
leaves the C++ fast path, and on a miss calls `pjit._trace_for_jit(fun, ji,
ctx_mesh, dbg, avals, args, kwargs)`, which traces `fun` to a jaxpr for the call's
`args` and `kwargs` (jax/_src/pjit.py; measured with jax 0.10.2 and Keras 3.15.1).
`jax.jit(...).lower()`, `.trace()` and `.eval_shape()` reach it the same way. The
hook replaces that function while `_function_tracing` has listeners and puts the
original back afterwards. JAX has no graph object and no variable-creation trace:
`graph` and `phase` stay None, and layer runs link to a trace by thread
(`_function_tracing.innermost_tracing()`). Never imports TensorFlow.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from jax._src import pjit as _pjit

from traceguard._compat import _function_tracing
from traceguard._compat._flavors import internal_missing

_PARAMETERS = ("fun", "ji", "ctx_mesh", "dbg", "avals", "args", "kwargs")
_ORIGINAL = _pjit.__dict__.get("_trace_for_jit")
try:
    _found = tuple(inspect.signature(_ORIGINAL).parameters) if _ORIGINAL is not None else ()
except (TypeError, ValueError):
    _found = ()
if _found != _PARAMETERS or "_trace_for_jit" not in _pjit._infer_params.__code__.co_names:
    raise internal_missing(f"jax._src.pjit._trace_for_jit{_PARAMETERS}, called by _infer_params "
                           f"(found {_found})")


def install() -> None:
    """Patches the hook in (idempotent)."""
    _pjit._trace_for_jit = _hooked


def uninstall() -> None:
    """Puts JAX's own function back, the very object that was there."""
    _pjit._trace_for_jit = _ORIGINAL


def is_installed() -> bool:
    return _pjit.__dict__["_trace_for_jit"] is not _ORIGINAL


def _hooked(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    tracing = _begin(fun, args, kwargs)
    try:
        result = _ORIGINAL(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except BaseException:
        tracing.raised = True
        _function_tracing.end(tracing)
        raise
    _function_tracing.end(tracing)
    return result


def _begin(fun: Any, args: Any, kwargs: Any) -> _function_tracing.FunctionTracing:
    name = getattr(fun, "__name__", None) or type(fun).__name__
    tracing = _function_tracing.begin("jax.jit", name, fun, fun,
                                      _function_tracing.bind_arguments(fun, args, kwargs))
    frame, tracing.entry = _function_tracing.user_frame(sys._getframe(2))
    if frame is not None:
        tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
        tracing.caller = frame.f_code.co_name
    tracing.function_text = _function_tracing.function_text(fun)
    return tracing
