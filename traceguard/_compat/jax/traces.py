"""The hook that sees every `jax.jit` trace (a tracing-cache miss); `jax.bodies` sees the rest.

`jax.jit` looks its caches up in `pjit._infer_params` on every call that leaves the
C++ fast path, and on a miss of the first calls `pjit._trace_for_jit(fun, ji,
ctx_mesh, dbg, avals, args, kwargs)`. That calls `partial_eval.trace_to_jaxpr`,
whose own cache (the one `jax_explain_cache_misses` explains) is keyed by the
function, the arguments' pytree and abstract values and the static arguments: only
when that misses does the Python body run (jax/_src/pjit.py, interpreters/
partial_eval.py; measured with jax 0.10.2 and Keras 3.15.1). A Python int and the
weakly typed int32 a step returns share one entry, so a call can miss the first
cache and hit the second: no trace. `trace_to_jaxpr`'s body announces each run
with `util.test_event("trace_to_jaxpr")`; the hook listens to it, and a call whose
body did not run is dropped (`_function_tracing.discard`), never recorded.

`jax.jit(...).lower()`, `.trace()` and `.eval_shape()` reach the hook the same way.
It replaces `_trace_for_jit` (and sets the test-event listener, after any other)
while `_function_tracing`'s sink is connected, and puts both back afterwards. JAX has no
graph object and no variable-creation trace: `graph` and `phase` stay None, and
layer runs link to a trace by thread (`_function_tracing.innermost_tracing()`).
The call's cache key is read as JAX compares it (`jax.keys`). Never imports
TensorFlow.

JAX's own `jax_explain_cache_misses` names each miss's call site by the innermost
frame outside JAX and the standard library (`source_info_util.user_frames`), and
guesses "maybe the function is being re-defined repeatedly" when a call site missed
before. The hooks' frames would be that site for every miss: this module and
`jax.calls` are registered as JAX's exclusions, as JAX registers its own modules
(`source_info_util.register_exclusion`), so JAX names the user's line while watched.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/pjit.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/source_info_util.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/util.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/linear_util.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/interpreters/partial_eval.py
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any

from jax._src import linear_util as _linear_util
from jax._src import pjit as _pjit
from jax._src import source_info_util as _source_info_util
from jax._src import util as _util
from jax._src.interpreters import partial_eval as _partial_eval

from traceguard._compat import _calling_code, _function_tracing, _graph_fingerprint
from traceguard._compat._flavors import internal_missing
from traceguard._compat.jax import bodies as _jax_bodies
from traceguard._compat.jax import calls as _jax_calls
from traceguard._compat.jax import keys as _jax_keys

_PARAMETERS = ("fun", "ji", "ctx_mesh", "dbg", "avals", "args", "kwargs")
_ORIGINAL = _pjit.__dict__.get("_trace_for_jit")
try:
    _found = tuple(inspect.signature(_ORIGINAL).parameters) if _ORIGINAL is not None else ()
except (TypeError, ValueError):
    _found = ()
if _found != _PARAMETERS or "_trace_for_jit" not in _pjit._infer_params.__code__.co_names:
    raise internal_missing(f"jax._src.pjit._trace_for_jit{_PARAMETERS}, called by _infer_params "
                           f"(found {_found})")
# `trace_to_jaxpr`'s body calls `test_event("trace_to_jaxpr")`, which calls `util.test_event_listener`
# when one is set (jax/_src/util.py); `_trace_for_jit` reaches it through `partial_eval`.
if "test_event_listener" not in _util.__dict__ or _partial_eval.__dict__.get("test_event") is not \
        _util.__dict__.get("test_event") or "trace_to_jaxpr" not in _partial_eval.__dict__ \
        or "trace_to_jaxpr" not in _ORIGINAL.__code__.co_names:
    raise internal_missing("jax._src.util.test_event_listener, announced by partial_eval.trace_to_jaxpr")
if not callable(getattr(_source_info_util, "register_exclusion", None)):
    raise internal_missing("jax._src.source_info_util.register_exclusion(path)")
for _module in (__file__, _jax_calls.__file__):  # Frames JAX's explanations skip (see above).
    _source_info_util.register_exclusion(_module)
# The function a jitted call traces is named by its debug info (`DebugInfo.func_filename`,
# `func_lineno`), which follows `__wrapped__` and `functools.partial` (`api_util.fun_sourceinfo`).
if not all(isinstance(getattr(getattr(_linear_util, "DebugInfo", None), name, None), property)
           for name in ("func_name", "func_filename", "func_lineno")):
    raise internal_missing("jax._src.linear_util.DebugInfo.func_name/func_filename/func_lineno")
_PI_INFO_FIELDS = ("fun_signature", "static_argnums", "static_argnames")
if not set(_PI_INFO_FIELDS) <= set(getattr(_pjit.PjitInfo, "_fields", ())):
    raise internal_missing(f"jax._src.pjit.PjitInfo{_PI_INFO_FIELDS}")

# This thread's `_trace_for_jit` calls in progress, innermost last: [tracing, body ran?].
_local = threading.local()
_previous_listener: Any = None


def install() -> None:
    """Patches the hook in (idempotent), and the call-level hooks (`jax.calls`)."""
    global _previous_listener
    _pjit._trace_for_jit = _hooked
    _jax_calls.install()
    _jax_bodies.install()
    if _util.test_event_listener is not _on_test_event:
        _previous_listener = _util.test_event_listener
        _util.test_event_listener = _on_test_event


def uninstall() -> None:
    """Puts JAX's own functions back, the very objects that were there, and the listener there was."""
    global _previous_listener
    _pjit._trace_for_jit = _ORIGINAL
    _jax_calls.uninstall()
    _jax_bodies.uninstall()
    if _util.test_event_listener is _on_test_event:
        _util.test_event_listener = _previous_listener
    _previous_listener = None
    _graph_fingerprint.forget()


def _on_test_event(name: str, *args: Any) -> None:
    previous = _previous_listener
    if previous is not None:
        previous(name, *args)
    if name == "trace_to_jaxpr":
        calls = getattr(_local, "calls", None)
        if calls:  # The innermost `_trace_for_jit` of this thread: its body runs.
            calls[-1][1] = True


def is_installed() -> bool:
    return _pjit.__dict__["_trace_for_jit"] is not _ORIGINAL or _jax_calls.is_installed() \
        or _jax_bodies.is_installed()


def _hooked(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    tracing = _begin(fun, args, kwargs, dbg)
    calls = _local.__dict__.setdefault("calls", [])
    call = [tracing, False]
    calls.append(call)
    try:
        result = _ORIGINAL(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except BaseException:
        calls.pop()
        if not call[1]:  # Failed before the body ran: no trace.
            _function_tracing.discard(tracing)
            raise
        tracing.raised = True
        _read_key(tracing, ji, args, kwargs)
        _function_tracing.end(tracing)
        raise
    calls.pop()
    if not call[1]:  # `trace_to_jaxpr`'s cache had it: the body did not run.
        _function_tracing.discard(tracing)
        return result
    _read_key(tracing, ji, args, kwargs)
    # `_trace_for_jit` returns a `PjitParams` whose `params["jaxpr"]` is the traced ClosedJaxpr.
    params = getattr(result, "params", None)
    jaxpr = params.get("jaxpr") if isinstance(params, dict) else None
    if jaxpr is not None and not tracing.library_function:  # Not Keras's steps (see `tensorflow.traces`).
        # The same jaxpr under another tracing context (a matmul precision, a mesh) can lower to
        # another program: only traces of the same context are compared.
        try:
            context = hash(tracing.context)
        except TypeError:  # An unhashable context value: no claim.
            context = None
        if context is not None:
            tracing.same_graph_as = _graph_fingerprint.same_graph_as(
                tracing.function, context, tracing.serial, jaxpr, jaxpr_fingerprint)
    _function_tracing.end(tracing)
    return result


def _read_key(tracing: _function_tracing.FunctionTracing, ji: Any, args: Any, kwargs: Any) -> None:
    try:
        tracing.signature = _jax_keys.jit_signature(ji.fun_signature, tuple(args), dict(kwargs or {}),
                                                    tuple(ji.static_argnums), tuple(ji.static_argnames))
        tracing.keywords = _jax_keys.keywords_of(dict(kwargs or {}))
    except Exception:  # Read by value, as the records do without it.
        tracing.signature = None
    try:  # What the executable is keyed by besides the trace: committed devices, shardings.
        tracing.placements = _jax_keys.placements(tracing.arguments)
    except Exception:  # Not compared.
        tracing.placements = None
    try:
        tracing.context = _jax_keys.tracing_context()
    except Exception:  # Not compared, as on TensorFlow.
        tracing.context = None


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


def _begin(fun: Any, args: Any, kwargs: Any, dbg: Any = None) -> _function_tracing.FunctionTracing:
    # The function is the one JAX's debug info names: through `functools.partial` and
    # `__wrapped__` (`api_util.fun_sourceinfo`), so `jit(grad(f))` is `f`'s, defined where `f` is,
    # while the cache (and the object compared) stays the wrapper `jit` was given.
    python_function = fun
    if getattr(dbg, "func_filename", None):
        python_function = _jax_bodies.user_function(fun, dbg)
    name = getattr(python_function, "__name__", None) or getattr(fun, "__name__", None) or type(fun).__name__
    tracing = _function_tracing.begin("jax.jit", name, fun, python_function,
                                      _calling_code.bind_arguments(fun, args, kwargs))
    frame, tracing.entry = _calling_code.user_frame(sys._getframe(2))
    if frame is not None:
        tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
        tracing.caller = frame.f_code.co_name
    tracing.function_text = _calling_code.function_text(fun)
    return tracing
