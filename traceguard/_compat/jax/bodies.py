"""The hook on every tracing-cache miss JAX explains below `jax.jit`: control-flow bodies and the like.

JAX keeps one tracing cache, `partial_eval.trace_to_jaxpr`'s (a C++
`weakref_lru_cache` keyed by the function object, the arguments' pytree and
abstract values, the debug info and the tracing context), for `jax.jit` and for
every function JAX traces below it: `lax.scan`, `lax.while_loop` (body and
condition), `lax.fori_loop`, `lax.cond` branches, `jax.checkpoint`, custom
derivative rules, run under `jax.jit` or eagerly. On a miss, the cache calls the
`explain` it was made with, before the body runs, when `explain()` (a lambda kept
by the cache) returns it: `partial_eval.explain` while `jax_explain_cache_misses`
is on (jax/_src/util.py `_weakref_lru_cache`; jax/_src/interpreters/partial_eval.py
`explain`, `trace_to_jaxpr`; jax 0.10.2). That one function writes every
"TRACING CACHE MISS" line, for the functions defined in files JAX calls the user's
(`source_info_util.is_user_filename`).

The hook sits there: while installed, the cache's lambda returns `_on_miss`
whatever the option, and `_on_miss` calls JAX's `explain` when the option is on,
so the user's explanations are unchanged. Every caller reads
`partial_eval.trace_to_jaxpr` from the module at each call, so a wrapper put there
sees the miss's end: the trace is a `_function_tracing.FunctionTracing` from the
miss to the wrapper's return, of origin `jax.body`, with JAX's `traced_for`
(`scan`, `while_body`, ...) and the function it is a body of: the enclosing
trace's, else the user's function that called the control flow. A `jax.jit`
miss (`pjit._trace_for_jit` calls the cache) is `jax.traces`' and is left to it.
Both are put back, the very objects, when the sink disconnects.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/config.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/pjit.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/source_info_util.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/interpreters/partial_eval.py
"""

from __future__ import annotations

import gc
import inspect
import logging
import sys
import threading
import weakref
from typing import Any

from jax._src import config as _config
from jax._src import pjit as _pjit
from jax._src import source_info_util as _source_info_util
from jax._src.interpreters import partial_eval as _partial_eval

from traceguard._compat import _function_tracing
from traceguard._compat._flavors import internal_missing
from traceguard._compat.jax import keys as _jax_keys

_log = logging.getLogger("traceguard")
_CACHED = _partial_eval.__dict__.get("trace_to_jaxpr")
_EXPLAIN = _partial_eval.__dict__.get("explain")
_CACHE_ATTRIBUTES = ("cache_clear", "cache_info", "cache_keys", "evict_weakref")


def _explain_lambda() -> Any:
    """The cache's `lambda: explain if config.explain_cache_misses.value else None`."""
    for referent in gc.get_referents(_CACHED):
        closure = getattr(referent, "__closure__", None)
        if getattr(referent, "__name__", None) == "<lambda>" and closure \
                and referent.__code__.co_freevars == ("explain",) and closure[0].cell_contents is _EXPLAIN:
            return referent
    return None


_FOUND = _explain_lambda() if _CACHED is not None and _EXPLAIN is not None else None
if _FOUND is None or not all(hasattr(_CACHED, name) for name in _CACHE_ATTRIBUTES) \
        or "explain_cache_misses" not in _FOUND.__code__.co_names:
    raise internal_missing("jax._src.interpreters.partial_eval.trace_to_jaxpr, a weakref_lru_cache whose "
                           "explain lambda returns partial_eval.explain while explain_cache_misses is on")
try:
    _EXPLAIN_PARAMETERS = tuple(inspect.signature(_EXPLAIN).parameters)
except (TypeError, ValueError):
    _EXPLAIN_PARAMETERS = ()
if _EXPLAIN_PARAMETERS[:4] != ("keys", "fun", "in_avals", "debug_info"):
    raise internal_missing(f"jax._src.interpreters.partial_eval.explain(keys, fun, in_avals, debug_info, "
                           f"...) (found {_EXPLAIN_PARAMETERS})")
_LAMBDA: Any = _FOUND
_LAMBDA_CODE = _LAMBDA.__code__
_CELL = _LAMBDA.__closure__[0]
_JIT_CALLER = getattr(_pjit.__dict__.get("_trace_for_jit"), "__code__", None)
if _JIT_CALLER is None:
    raise internal_missing("jax._src.pjit._trace_for_jit")
# JAX's explanation names the call site by the innermost frame outside the files it excludes: the
# hook's frames are excluded as JAX excludes its own (see `jax.traces`).
_source_info_util.register_exclusion(__file__)


def _always() -> Any:
    explain = None
    return lambda: explain  # Same free variable as the cache's lambda: its code can be swapped in.


_ALWAYS_CODE = _always().__code__
_local = threading.local()  # .calls: this thread's hooked cache calls in progress, innermost last.


def install() -> None:
    """Puts the hook in (idempotent)."""
    _partial_eval.trace_to_jaxpr = _hooked
    _CELL.cell_contents = _on_miss
    _LAMBDA.__code__ = _ALWAYS_CODE


def uninstall() -> None:
    """Puts JAX's own objects back."""
    _LAMBDA.__code__ = _LAMBDA_CODE
    _CELL.cell_contents = _EXPLAIN
    _partial_eval.trace_to_jaxpr = _CACHED


def is_installed() -> bool:
    return _partial_eval.__dict__.get("trace_to_jaxpr") is not _CACHED or _CELL.cell_contents is not _EXPLAIN


class _Entry:
    """One call of the cache: its function, and the trace its miss began (if any)."""

    __slots__ = ("fun", "tracing")

    def __init__(self, fun: Any) -> None:
        self.fun, self.tracing = fun, None


def _hooked(fun: Any, *args: Any, **kwargs: Any) -> Any:
    if sys._getframe(1).f_code is _JIT_CALLER:  # A `jax.jit` miss: `jax.traces` records it.
        return _CACHED(fun, *args, **kwargs)
    calls = _local.__dict__.setdefault("calls", [])
    entry = _Entry(fun)
    calls.append(entry)
    try:
        result = _CACHED(fun, *args, **kwargs)
    except BaseException:
        calls.pop()
        if entry.tracing is not None:
            entry.tracing.raised = True
            _function_tracing.end(entry.tracing)
        raise
    calls.pop()
    if entry.tracing is not None:
        _function_tracing.end(entry.tracing)
    return result


for _name in _CACHE_ATTRIBUTES:  # `pjit` evicts through `pe.trace_to_jaxpr.evict_weakref`.
    setattr(_hooked, _name, getattr(_CACHED, _name))


def _on_miss(keys: Any, fun: Any, in_avals: Any, debug_info: Any, *context: Any, **options: Any) -> None:
    """Called by the cache on each miss, before the body runs."""
    if _config.explain_cache_misses.value:
        _EXPLAIN(keys, fun, in_avals, debug_info, *context, **options)
    calls = getattr(_local, "calls", None)
    entry = calls[-1] if calls else None
    if entry is None or entry.fun is not fun:  # A `jax.jit` miss, or a caller that bypassed the wrapper.
        return
    filename = debug_info.func_filename
    if filename and not _source_info_util.is_user_filename(filename):  # JAX explains none of its own.
        return
    try:
        entry.tracing = _begin(fun, in_avals, debug_info)
    except Exception:  # Bookkeeping never breaks the user's trace.
        _log.exception("Reading the trace of %s failed", debug_info.func_name)


def _begin(fun: Any, in_avals: Any, debug_info: Any) -> _function_tracing.FunctionTracing:
    python_function = user_function(fun, debug_info)
    try:
        args, kwargs = in_avals.unflatten()
    except Exception:  # A flat argument list (`fun_takes_flat_tree_arg`).
        args, kwargs = tuple(in_avals.vals) if hasattr(in_avals, "vals") else (), {}
    name = debug_info.func_name or getattr(python_function, "__name__", type(python_function).__name__)
    tracing = _function_tracing.begin(_function_tracing.BODY_ORIGIN, name, fun, python_function, {},
                                      in_call=False)
    tracing.traced_for = debug_info.traced_for
    # The function that called the control flow: the first frame outside JAX (and traceguard), as
    # JAX's own explanation names the call site (`source_info_util.user_frames`).
    frame: Any = sys._getframe(3)
    while frame is not None and not _source_info_util.is_user_filename(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None:
        tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
        tracing.caller = frame.f_code.co_name
    parent = _function_tracing.innermost_tracing()
    tracing.body_of = tracing.caller if tracing.caller not in (None, "<module>") or parent is None \
        else parent.name
    try:
        signature = inspect.signature(python_function)
    except (TypeError, ValueError):
        signature = None
    try:
        tracing.signature = _jax_keys.jit_signature(signature, tuple(args), dict(kwargs or {}), (), ())
    except Exception:  # Not read: the record compares nothing.
        tracing.signature = {}
    tracing.context = _jax_keys.tracing_context()
    return tracing


def user_function(fun: Any, debug_info: Any) -> Any:
    """The function JAX's debug info names (`fun` itself, or the one a JAX wrapper such as
    `fori_loop`'s closes over), so that its code and `def` site are the user's."""
    filename, line = debug_info.func_filename, debug_info.func_lineno
    seen: set[int] = set()
    pending = [fun]
    while pending:
        candidate = pending.pop()
        if isinstance(candidate, weakref.ref):  # `fori_loop`'s wrapper holds the body weakly.
            candidate = candidate()
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        code = getattr(candidate, "__code__", None)
        if code is not None and code.co_filename == filename \
                and (line is None or code.co_firstlineno == line):
            return candidate
        pending += [cell.cell_contents for cell in getattr(candidate, "__closure__", None) or ()
                    if _has_contents(cell) and callable(cell.cell_contents)]
        wrapped = getattr(candidate, "__wrapped__", None) or getattr(candidate, "func", None)
        if callable(wrapped):
            pending.append(wrapped)
    return fun


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


__all__ = ["install", "is_installed", "uninstall", "user_function"]
