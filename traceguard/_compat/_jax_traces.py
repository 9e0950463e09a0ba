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

from traceguard._compat import _function_tracing, _graph_fingerprint, _jax_calls
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
    """Patches the hook in (idempotent), and the call-level hooks (`_jax_calls`)."""
    _pjit._trace_for_jit = _hooked
    _jax_calls.install()


def uninstall() -> None:
    """Puts JAX's own functions back, the very objects that were there."""
    _pjit._trace_for_jit = _ORIGINAL
    _jax_calls.uninstall()
    _graph_fingerprint.forget()


def is_installed() -> bool:
    return _pjit.__dict__["_trace_for_jit"] is not _ORIGINAL or _jax_calls.is_installed()


def _hooked(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    tracing = _begin(fun, args, kwargs)
    try:
        result = _ORIGINAL(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except BaseException:
        tracing.raised = True
        _function_tracing.end(tracing)
        raise
    # `_trace_for_jit` returns a `PjitParams` whose `params["jaxpr"]` is the traced ClosedJaxpr.
    params = getattr(result, "params", None)
    jaxpr = params.get("jaxpr") if isinstance(params, dict) else None
    if jaxpr is not None and not tracing.library_function:  # Not Keras's steps (see `_tf_traces`).
        tracing.same_graph_as = _graph_fingerprint.same_graph_as(
            tracing.function, None, tracing.serial, jaxpr, jaxpr_fingerprint)
    _function_tracing.end(tracing)
    return result


def jaxpr_fingerprint(closed_jaxpr: Any) -> int | None:
    """A hash of a jaxpr's computation without variable names and shapes.

    Each equation counts by its primitive, the positions of the variables it
    reads (a literal by its value), and its parameters except those about
    shapes and sizes (`shape`, `new_sizes`, `slice_sizes`, ...); a nested jaxpr
    (a `cond` branch, a `scan` body, a nested `jit`) by its own fingerprint.
    """
    try:
        return hash(_jaxpr_key(getattr(closed_jaxpr, "jaxpr", closed_jaxpr), {}))
    except Exception:  # A jaxpr this reading does not understand: no claim about it.
        return None


def _jaxpr_key(jaxpr: Any, memo: dict[int, tuple]) -> tuple:
    """`memo`: the keys of the jaxprs met so far (a layer's activation's, met once per layer)."""
    known = memo.get(id(jaxpr))
    if known is not None:
        return known
    positions: dict[int, int] = {}
    for var in (*jaxpr.constvars, *jaxpr.invars):
        positions[id(var)] = len(positions)

    def read(atom: Any) -> Any:
        position = positions.get(id(atom))
        return ("var", position) if position is not None else _literal_key(getattr(atom, "val", atom))

    equations = []
    for equation in jaxpr.eqns:
        parameters = tuple(sorted((name, _parameter_key(value, memo))
                                  for name, value in equation.params.items()
                                  if "shape" not in name and "size" not in name))
        equations.append((equation.primitive.name, tuple(read(atom) for atom in equation.invars), parameters))
        for var in equation.outvars:
            positions[id(var)] = len(positions)
    key = memo[id(jaxpr)] = (tuple(equations), tuple(read(atom) for atom in jaxpr.outvars))
    return key


def _literal_key(value: Any) -> Any:
    # A scalar by its dtype and value: `repr` of a NumPy scalar formats it (slow).
    try:
        return ("literal", str(getattr(value, "dtype", type(value).__name__)),
                value.item() if hasattr(value, "item") else value)
    except (ValueError, TypeError):  # An array of more than one item.
        return ("literal", repr(value))


def _parameter_key(value: Any, memo: dict[int, tuple]) -> Any:
    if callable(value) or hasattr(value, "f"):
        # A function (`custom_jvp_call`'s `jvp_jaxpr_fun`, a `WrappedFun`) by its name: its
        # repr holds its address, which differs between traces of the same code.
        function = getattr(value, "f", value)
        return ("function", getattr(function, "__qualname__", type(function).__name__))
    if hasattr(value, "eqns"):  # A Jaxpr.
        return _jaxpr_key(value, memo)
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):  # A ClosedJaxpr.
        return _jaxpr_key(value.jaxpr, memo)
    if isinstance(value, (tuple, list)):
        return tuple(_parameter_key(item, memo) for item in value)
    return repr(value)


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
