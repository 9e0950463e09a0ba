"""The hook that sees every Dynamo frame compile: `torch.compile`'s trace, and each recompile.

`torch.compile` keeps its compiled code per Python code object: a call whose guards
fail on every cache entry of the frame's code runs `convert_frame._compile(code,
globals, locals, ..., frame=..., compile_id=...)`, which asks
`get_and_maybe_log_recompilation_reasons(cache_entries, frame, backend)` why when the
code has entries already, then traces the frame (Dynamo), hands the graph to the
backend (AOTAutograd, Inductor) and returns a `ConvertFrameReturn` whose
`guarded_code` is the new cache entry, or None when the frame is skipped (nothing
to compile; torch's metrics still say `has_guarded_code`, with no `graph_op_count`);
it raises when Dynamo cannot compile the frame, which then runs eagerly, with no
entry. ConvertFrameAssert.__call__ calls `_compile` by its module name, and
`_compile` calls the reasons function by its module name (torch/_dynamo/convert_frame.py,
torch 2.14.1), so both are replaced in that module while the sink is connected, and put
back, the very objects, when it disconnects.

Each compile that made a cache entry is a `FunctionTracing` of origin
`torch.compile`, keyed by its code object (the cache's key): the first compile of a
code is a trace, the next ones recompiles. Its `backend_reasons` are torch's words,
verbatim, most recent cache entry first; its `backend_changes`, the first of them
in the user's terms (`guard_reasons`). A graph break makes Dynamo compile the rest of
the function as a new frame (`torch_dynamo_resume_in_<function>_at_<line>`, with a cache of
its own), seen here as a compile of that function (`resumed_after`: the break's file and line;
`part_of`: the function, see `resume`); the break itself is in the compile it ended,
`graph_breaks`: torch's kind of break and the file and line it happened at. Its `trace` phase
is the whole frame compile, Dynamo's tracing and the backend's compile together, as `_compile`
runs both.

Whether torch relaxed a Python value it recompiled for is read from the new cache entry
itself: its guards (`GuardedCode.guard_manager.check(f_locals)`, torch/_dynamo/guards.py)
are asked whether they would pass the same call with the value plus one. With automatic
dynamic shapes torch makes an int dynamic on its second value only where it can stay
symbolic; a Python `range` bound or an `if` on it keeps it guarded by value (measured
with torch 2.14.1: `n` in `x * n` passes, `start` in `range(start + 1, end)` fails, with
`dynamic=True` as well). `relaxed` is True or False accordingly, None when not asked.

Upstream, the files whose internals this module follows:

- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/config.py
- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/convert_frame.py
- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/guards.py
- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/symbolic_convert.py
- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/utils.py
"""

from __future__ import annotations

import inspect
import sys
import threading
import weakref
from typing import Any

from torch._dynamo import config as _dynamo_config
from torch._dynamo import convert_frame as _convert_frame
from torch._dynamo import guards as _guards
from torch._dynamo import symbolic_convert as _symbolic_convert
from torch._dynamo import utils as _dynamo_utils

from traceguard._compat import _calling_code, _function_tracing
from traceguard._compat._flavors import internal_missing
from traceguard._compat.torch import guard_reasons as _guard_reasons
from traceguard._compat.torch import layers as _layers
from traceguard._compat.torch import resume as _resume
from traceguard._core.changes import Aspect

ORIGIN = "torch.compile"
_COMPILE_PARAMETERS = ("code", "globals", "locals", "builtins", "closure")
_ORIGINAL_COMPILE = _convert_frame.__dict__.get("_compile")
_ORIGINAL_REASONS = _convert_frame.__dict__.get("get_and_maybe_log_recompilation_reasons")
# Dynamo logs each graph break once, from the translator of the frame (or inlined function) it
# happened in, as `log_graph_break(code_options, reason, exc)` (torch/_dynamo/symbolic_convert.py).
_TRANSLATOR = _symbolic_convert.InstructionTranslatorBase
_ORIGINAL_LOG_BREAK = _TRANSLATOR.__dict__.get("log_graph_break")
_LOG_BREAK_PARAMETERS = ("self", "code_options", "reason", "exc")


def _check() -> None:
    """Fails loudly at import when torch moved what the hook relies on."""
    try:
        found = tuple(inspect.signature(_ORIGINAL_COMPILE).parameters)
    except (TypeError, ValueError):
        found = ()
    if found[:5] != _COMPILE_PARAMETERS or "frame" not in found or "compile_id" not in found:
        raise internal_missing(f"torch._dynamo.convert_frame._compile{_COMPILE_PARAMETERS + ('frame',)} "
                               f"(found {found})")
    if "_compile" not in _convert_frame.ConvertFrameAssert.__call__.__code__.co_names:
        raise internal_missing("torch._dynamo.convert_frame.ConvertFrameAssert.__call__ calling `_compile`")
    if not callable(_ORIGINAL_REASONS) or \
            "get_and_maybe_log_recompilation_reasons" not in _ORIGINAL_COMPILE.__code__.co_names:
        raise internal_missing("torch._dynamo.convert_frame.get_and_maybe_log_recompilation_reasons, "
                               "called by _compile")
    if "guarded_code" not in getattr(_convert_frame.ConvertFrameReturn, "__dataclass_fields__", {}):
        raise internal_missing("torch._dynamo.types.ConvertFrameReturn.guarded_code")
    try:
        found = tuple(inspect.signature(_ORIGINAL_LOG_BREAK).parameters)
    except (TypeError, ValueError):
        found = ()
    if found != _LOG_BREAK_PARAMETERS:
        raise internal_missing(f"torch._dynamo.symbolic_convert.InstructionTranslatorBase.log_graph_break"
                               f"{_LOG_BREAK_PARAMETERS} (found {found})")
    if "guard_manager" not in getattr(_convert_frame.GuardedCode, "__dataclass_fields__", {}) or \
            not callable(getattr(_guards.GuardManagerWrapper, "check", None)):
        raise internal_missing("torch._dynamo.types.GuardedCode.guard_manager, a "
                               "torch._dynamo.guards.GuardManagerWrapper with check(f_locals)")
    if not isinstance(getattr(_dynamo_config, "automatic_dynamic_shapes", None), bool):
        raise internal_missing("torch._dynamo.config.automatic_dynamic_shapes")
    fields = getattr(getattr(_dynamo_utils, "CompilationMetrics", None), "__dataclass_fields__", {})
    if not callable(getattr(_dynamo_utils, "get_compilation_metrics", None)) or \
            not set(_METRICS) <= set(fields):
        raise internal_missing(f"torch._dynamo.utils.get_compilation_metrics() of "
                               f"CompilationMetrics{_METRICS}")


# Each `_compile` records one `CompilationMetrics` as it exits (torch/_dynamo/utils.py): the frame's
# whole compile and the backend's part (AOTAutograd, Inductor) of it, in seconds.
_METRICS = ("compile_id", "entire_frame_compile_time_s", "backend_compile_time_s")


_check()

_local = threading.local()  # .calls: this thread's compiles in progress, innermost last.


class _CompiledCode:
    """What a record keys a compiled code object by: torch keeps one cache per code object.

    Stands for the Python function (`__code__`, names) in the records; one per code, kept
    while the code lives, so that every compile of one code is one function object's."""

    __slots__ = ("__code__", "__name__", "__qualname__", "__weakref__")

    def __init__(self, code: Any) -> None:
        self.__code__ = code
        self.__name__ = code.co_name
        self.__qualname__ = getattr(code, "co_qualname", code.co_name)

    def __repr__(self) -> str:
        code = self.__code__
        return f"<torch.compile of {self.__qualname__} at {code.co_filename}:{code.co_firstlineno}>"


_compiled_codes: weakref.WeakKeyDictionary[Any, _CompiledCode] = weakref.WeakKeyDictionary()


def install() -> None:
    """Patches the hooks in (idempotent)."""
    _convert_frame._compile = _hooked_compile
    _convert_frame.get_and_maybe_log_recompilation_reasons = _hooked_reasons
    _TRANSLATOR.log_graph_break = _hooked_log_break


def uninstall() -> None:
    """Puts torch's own functions back, the very objects that were there."""
    _convert_frame._compile = _ORIGINAL_COMPILE
    _convert_frame.get_and_maybe_log_recompilation_reasons = _ORIGINAL_REASONS
    _TRANSLATOR.log_graph_break = _ORIGINAL_LOG_BREAK


def is_installed() -> bool:
    return _convert_frame.__dict__.get("_compile") is not _ORIGINAL_COMPILE or \
        _convert_frame.__dict__.get("get_and_maybe_log_recompilation_reasons") is not _ORIGINAL_REASONS \
        or _TRANSLATOR.__dict__.get("log_graph_break") is not _ORIGINAL_LOG_BREAK


def _hooked_reasons(*args: Any, **kwargs: Any) -> Any:
    reasons = _ORIGINAL_REASONS(*args, **kwargs)
    calls = getattr(_local, "calls", None)
    if calls and isinstance(reasons, list):
        calls[-1].backend_reasons = tuple(str(reason) for reason in reasons)
    return reasons


def _hooked_log_break(self: Any, code_options: Any, reason: Any, exc: Any) -> Any:
    calls = getattr(_local, "calls", None)
    if calls and not getattr(exc, "logged", True):
        try:  # Torch's kind of break (its first line) and where it happened: the translated code's line.
            what = getattr(exc, "gb_type", None) or str(reason).strip().splitlines()[0]
            calls[-1].graph_breaks += ((what, self.f_code.co_filename, self.lineno),)
        except Exception:  # Not named: the break is still seen as the frame it makes.
            pass
    return _ORIGINAL_LOG_BREAK(self, code_options, reason, exc)


def _hooked_compile(code: Any, globals: Any, locals: Any, *args: Any, **kwargs: Any) -> Any:
    tracing = _begin(code, locals)
    calls = _local.__dict__.setdefault("calls", [])
    calls.append(tracing)
    try:
        result = _ORIGINAL_COMPILE(code, globals, locals, *args, **kwargs)
    except BaseException:
        # Dynamo could not compile the frame (an unsupported construct in a loop, ...): torch runs it
        # eagerly and keeps no cache entry, so no compile is recorded.
        calls.pop()
        _layers.discard(tracing)
        _function_tracing.discard(tracing)
        raise
    calls.pop()
    if getattr(result, "guarded_code", None) is None:  # Skipped: no cache entry, nothing compiled.
        _layers.discard(tracing)
        _function_tracing.discard(tracing)
        return result
    _finish(tracing, kwargs.get("compile_id"), result.guarded_code, locals)
    return result


def _read_phases(tracing: _function_tracing.FunctionTracing, compile_id: Any) -> None:
    """Dynamo's tracing (`trace`) and the backend's compile (`compile`), as torch measured them."""
    try:
        metrics = _dynamo_utils.get_compilation_metrics()
        last = metrics[-1] if metrics else None
        if last is None or compile_id is None or str(last.compile_id) != str(compile_id):
            return
        whole, backend = last.entire_frame_compile_time_s, last.backend_compile_time_s or 0.0
        if whole is not None:
            tracing.phases["trace"] = max(whole - backend, 0.0)
            tracing.phases["compile"] = backend
    except Exception:  # Costs unread: the whole compile is the trace's, as measured here.
        return


def _finish(tracing: _function_tracing.FunctionTracing, compile_id: Any, guarded_code: Any,
            frame_locals: Any) -> None:
    _read_phases(tracing, compile_id)
    if tracing.backend_reasons:
        tracing.backend_changes = _guard_reasons.changes_of(tracing.backend_reasons[0], tracing.arguments)
        tracing.relaxed = _relaxed(tracing.backend_changes, guarded_code, frame_locals)
    _layers.flush(tracing)  # The layer runs of its last attempt, while it is still the innermost.
    _function_tracing.end(tracing)


def _relaxed(changes: Any, guarded_code: Any, frame_locals: Any) -> bool | None:
    """Whether the new compile passes another value of the Python number whose value guard failed:
    True when torch made it dynamic, False when it is still guarded by value; None when no such
    number argument (a bool has no third value: it is guarded by value, one compile each)."""
    change = changes[0] if changes else None
    if change is None or change.aspect is not Aspect.VALUE or not isinstance(frame_locals, dict):
        return None
    # `torch.compile(dynamic=False)` patches automatic dynamic shapes off while it compiles
    # (measured, torch 2.14.1): then the setting, not the code, keeps the value static.
    if not _dynamo_config.automatic_dynamic_shapes:
        return None
    name = str(change.argument)
    value = frame_locals.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        check = guarded_code.guard_manager.check
        if not check(dict(frame_locals)):  # Its own call fails: nothing to tell.
            return None
        return bool(check(dict(frame_locals, **{name: value + 1})))
    except Exception:  # A guard that cannot run on a copy of the frame's locals.
        return None


def _compiled(code: Any) -> _CompiledCode:
    compiled = _compiled_codes.get(code)
    if compiled is None:
        compiled = _compiled_codes[code] = _CompiledCode(code)
    return compiled


def _begin(code: Any, frame_locals: Any) -> _function_tracing.FunctionTracing:
    compiled = _compiled(code)
    # The parameters, `*args` and `**kwargs` included: a decorator's wrapper (Keras's `error_handler`
    # around `Layer.__call__`) takes its arguments that way, and torch's guards name them (`args[1]`).
    count = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    names = code.co_varnames[:count]
    # A resume frame keeps its own cache (its code), but is a part of the function it continues.
    resumed = _resume.original_code(code)
    arguments = {name: frame_locals[name] for name in names
                 if name != "self" and name in (frame_locals or {})
                 and not (resumed is not None and _resume.is_torch_argument(name))}
    name = code.co_name if resumed is None else resumed[0].co_name
    tracing = _function_tracing.begin(ORIGIN, name, compiled, compiled, arguments)
    if resumed is not None:
        tracing.resumed_after = (code.co_filename, resumed[1])
        tracing.part_of = weakref.ref(_compiled(resumed[0]))
    frame, tracing.entry = _calling_code.user_frame(sys._getframe(2))
    # A frame after a graph break is called by its function's compiled code: the call site is
    # where the function was called.
    while resumed is not None and frame is not None and _resume.runs_part_of(frame.f_code, resumed[0]):
        frame, entry = _calling_code.user_frame(frame.f_back)
        tracing.entry = entry or tracing.entry
    if frame is not None:
        tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
        tracing.caller = frame.f_code.co_name
    tracing.function_text = repr(compiled)
    return tracing
