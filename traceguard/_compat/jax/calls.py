"""JAX's calls of a `jax.jit` function that miss: the whole miss, its lowering and compilation.

When `jax.jit`'s C++ dispatch misses, it calls the Python `cache_miss` its
`_cpp_pjit` made, which calls `pjit._infer_params(fun, ji, args, kwargs)` (the
tracing cache's lookup, and on a miss `_trace_for_jit`, hooked by `jax.traces`),
then `pjit._run_python_pjit(p, args_flat, fun, args, kwargs)`, which lowers the
jaxpr to MLIR, compiles it (or reads it from the persistent compilation cache) and
runs it (jax/_src/pjit.py, jax 0.10). Both are looked up as module globals at each
call, so replacing them sees every miss. A `Call` opens when `_infer_params` starts
and closes when the `_run_python_pjit` of its parameters returns (when `jit(...).lower()`
or `.trace()` called it, when it returns).

The phases come from JAX's public monitoring events
(`jax.monitoring.register_event_duration_secs_listener`):
`/jax/core/compile/jaxpr_to_mlir_module_duration` (lowering) and
`/jax/core/compile/backend_compile_duration` (compilation), and from
`/jax/compilation_cache/cache_hits` and `cache_misses` with
`/jax/compilation_cache/compile_time_saved_sec` (the persistent cache). JAX records
them on the thread that lowers and compiles, inside the call: each goes to this
thread's innermost open call. Everything is removed when the sink disconnects.
Never imports TensorFlow.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/core.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/dispatch.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/pjit.py
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any

from jax import monitoring as _monitoring
from jax._src import core as _core
from jax._src import dispatch as _dispatch
from jax._src import pjit as _pjit

from traceguard._compat import _calling_code, _function_calls
from traceguard._compat._flavors import internal_missing
from traceguard._compat.jax import keys as _jax_keys

_INFER_PARAMS = _pjit.__dict__.get("_infer_params")
_RUN_PYTHON_PJIT = _pjit.__dict__.get("_run_python_pjit")


def _parameters(function: Any) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return ()


_CACHE_MISS_NAMES = ("_infer_params", "_run_python_pjit")
_cpp_pjit_code: Any = getattr(getattr(_pjit, "_cpp_pjit", None), "__code__", None)
_cache_miss_code = next((c for c in getattr(_cpp_pjit_code, "co_consts", ())
                         if getattr(c, "co_name", None) == "cache_miss"), None)
if _parameters(_INFER_PARAMS) != ("fun", "ji", "args", "kwargs") \
        or _parameters(_RUN_PYTHON_PJIT) != ("p", "args_flat", "fun", "args", "kwargs") \
        or _cache_miss_code is None or not set(_CACHE_MISS_NAMES) <= set(_cache_miss_code.co_names) \
        or not hasattr(_core, "trace_state_clean"):
    raise internal_missing("jax._src.pjit._infer_params(fun, ji, args, kwargs) and "
                           "_run_python_pjit(p, args_flat, fun, args, kwargs), called by _cpp_pjit's "
                           "cache_miss")
# The events, as `jax._src.dispatch` names them.
_PHASE_OF_EVENT = {_dispatch.JAXPR_TO_MLIR_MODULE_EVENT: "lower", _dispatch.BACKEND_COMPILE_EVENT: "compile"}
if set(_PHASE_OF_EVENT) != {"/jax/core/compile/jaxpr_to_mlir_module_duration",
                            "/jax/core/compile/backend_compile_duration"}:
    raise internal_missing("jax._src.dispatch.JAXPR_TO_MLIR_MODULE_EVENT, BACKEND_COMPILE_EVENT")
_CACHE_HIT, _CACHE_MISS = "/jax/compilation_cache/cache_hits", "/jax/compilation_cache/cache_misses"
_CACHE_SAVED = "/jax/compilation_cache/compile_time_saved_sec"

_local = threading.local()  # .pending: id(PjitParams) -> its Call, between the two functions.
_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _pjit._infer_params = _hooked_infer_params
    _pjit._run_python_pjit = _hooked_run_python_pjit
    _monitoring.register_event_duration_secs_listener(_on_duration)
    _monitoring.register_event_listener(_on_event)
    _installed = True


def uninstall() -> None:
    global _installed
    _pjit._infer_params = _INFER_PARAMS
    _pjit._run_python_pjit = _RUN_PYTHON_PJIT
    if _installed:
        _monitoring.unregister_event_duration_listener(_on_duration)
        _monitoring.unregister_event_listener(_on_event)
    _installed = False


def is_installed() -> bool:
    return _pjit.__dict__["_infer_params"] is not _INFER_PARAMS \
        or _pjit.__dict__["_run_python_pjit"] is not _RUN_PYTHON_PJIT or _installed


def _hooked_infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
    call = _function_calls.open_call(fun, args, kwargs, _core.trace_state_clean())
    # The jit's parameters, to read a compilation's key as a trace's (`_report_compilation`).
    _local.jit_info = (fun, ji)
    pending = False
    try:
        result = _INFER_PARAMS(fun, ji, args, kwargs)
        # `cache_miss` runs the parameters next; `.lower()`, `.trace()`: the call ends here.
        if call.tracings and sys._getframe(1).f_code is _cache_miss_code:
            table = getattr(_local, "pending", None)
            if table is None:
                table = _local.pending = {}
            table[id(result[0])] = call
            pending = True
        return result
    finally:
        if pending:
            _function_calls.suspend_call(call)
        else:
            _function_calls.close_call(call)


def _hooked_run_python_pjit(p: Any, args_flat: Any, fun: Any, args: Any, kwargs: Any) -> Any:
    table = getattr(_local, "pending", None)
    call = table.pop(id(p), None) if table else None
    if call is None:
        call = _function_calls.open_call(fun, args, kwargs, _core.trace_state_clean())
    else:
        _function_calls.resume_call(call)
    try:
        return _RUN_PYTHON_PJIT(p, args_flat, fun, args, kwargs)
    finally:
        try:  # A listener may stop the compilation's report (`stops_trace`): the call still closes.
            if not call.tracings and call.phases and "compile" in call.phases:
                _report_compilation(call, fun)
        finally:
            _local.jit_info = None
            _function_calls.close_call(call)


def _report_compilation(call: Any, fun: Any) -> None:
    """A compilation without a trace: the tracing cache hit, the executable's missed."""
    from traceguard._compat import _function_tracing

    name = getattr(fun, "__name__", None) or type(fun).__name__
    tracing = _function_tracing.begin("jax.jit", name, fun, fun, _calling_code.bind_arguments(
        fun, call.args, call.kwargs), compilation=True)
    try:  # The executable's key beside the trace's: committed devices and shardings.
        tracing.placements = _jax_keys.placements(tracing.arguments)
    except Exception:  # Not compared.
        tracing.placements = None
    fun_and_info, _local.jit_info = getattr(_local, "jit_info", None), None
    if fun_and_info is not None and fun_and_info[0] is fun:  # The key as the trace read it.
        info = fun_and_info[1]
        try:
            tracing.signature = _jax_keys.jit_signature(
                info.fun_signature, tuple(call.args or ()), dict(call.kwargs or {}),
                tuple(info.static_argnums), tuple(info.static_argnames))
        except Exception:  # Read by value, as without it.
            tracing.signature = None
    tracing.start = call.start
    frame, tracing.entry = _calling_code.user_frame(sys._getframe(2))
    if frame is not None:
        tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
        tracing.caller = frame.f_code.co_name
    tracing.function_text = _calling_code.function_text(fun)
    _function_tracing.end(tracing)


def _on_duration(event: str, duration: float, **kwargs: Any) -> None:
    phase = _PHASE_OF_EVENT.get(event)
    if phase is not None:
        _function_calls.add_phase(phase, duration)
    elif event == _CACHE_SAVED:
        call = _function_calls.current_call()
        if call is not None:
            call.cache_saved = (call.cache_saved or 0.0) + duration


def _on_event(event: str, **kwargs: Any) -> None:
    if event == _CACHE_HIT or event == _CACHE_MISS:
        call = _function_calls.current_call()
        if call is not None:
            call.cache = "hit" if event == _CACHE_HIT else "miss"
