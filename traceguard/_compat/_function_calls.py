"""The calls that miss: the whole of each, and the phases a backend reports after its trace.

A trace is the first part of a cache miss. The call that made it goes on to build
and optimise the graph, or to lower and compile it, and runs it once; the dispatcher
looked its cache up before. The backend's call-level hook (`tensorflow.calls`, `jax.calls`)
opens a `Call` when a traced function is called while the sink is connected, and closes it
when the call returns or raises. The traces made inside it (`_function_tracing.begin`)
belong to it; when it closes, the last of them gets the whole call less what its
earlier traces cost (their phases: TensorFlow's first trace that created variables)
as its `miss`, and the backend's phases measured since it ended (`add_phase`), so
each second of the call is counted once; and each is completed: handed to the
sink (`_function_tracing.complete`), which sees its phases final. A
trace of another function called inside one of these traces has a call of its own,
and its seconds are in the enclosing trace's too. A call that traced nothing closes at
the cost of a clock reading.

Phases, each in seconds (`PHASES`):

- `trace`: Python ran the body (the trace hook's own span).
- `lower`: TensorFlow built and optimised the new concrete function's graph, in its
  first call (which also ran it once); JAX converted the jaxpr to an MLIR module.
- `compile`: XLA compiled it (TensorFlow: the first call of a function that runs XLA,
  which also builds and runs it; JAX: backend compilation, or the persistent cache's
  read).
- `first_call`: the first execution, where the backend separates it (JAX: the
  dispatch after compilation, which returns before the device finishes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

PHASES = ("trace", "lower", "compile", "first_call")
# What a persistent compilation cache did for a compilation.
CACHE_OUTCOMES = ("hit", "miss")

_local = threading.local()  # .calls: this thread's open calls, innermost last.


def _no_completion(tracing: Any) -> None:
    raise RuntimeError("`_function_tracing` sets the completion of traces when it is imported.")


# `_function_tracing.complete`, set by that module (which imports this one) as it loads.
_complete: Callable[[Any], None] = _no_completion


def set_completion(complete: Callable[[Any], None]) -> None:
    """Makes `complete(tracing)` what a closing call does with each trace made in it."""
    global _complete
    _complete = complete


class Call:
    """One call of a traced function, open while it runs."""

    __slots__ = ("start", "eager", "function", "args", "kwargs", "tracings", "phases", "phase_end",
                 "cache", "cache_saved", "end")

    def __init__(self, start: float, eager: bool, function: Any, args: Any, kwargs: Any) -> None:
        self.start = start  # time.perf_counter() at the call's entry.
        self.eager = eager  # Called eagerly (else inside another trace: nothing runs yet).
        self.function = function  # The tf.function or jitted function called.
        self.args, self.kwargs = args, kwargs  # The call's arguments, while it runs.
        self.tracings: list[Any] = []  # The traces (and compilations) made in it, in order.
        self.phases: dict[str, float] | None = None  # Backend phases not yet given to a trace.
        self.phase_end: float | None = None  # When the last of those ended (perf_counter).
        self.cache: str | None = None  # One of CACHE_OUTCOMES, from the persistent cache.
        self.cache_saved: float | None = None  # Seconds the persistent cache saved.
        self.end: float | None = None


def open_call(function: Any, args: Any, kwargs: Any, eager: bool) -> Call:
    """A call starts on this thread; the hook closes it with `close_call`, however it ends."""
    call = Call(time.perf_counter(), eager, function, args, kwargs)
    calls = getattr(_local, "calls", None)
    if calls is None:
        calls = _local.calls = []
    calls.append(call)
    return call


def current_call() -> Call | None:
    """The innermost call open on this thread."""
    calls = getattr(_local, "calls", None)
    return calls[-1] if calls else None


def suspend_call(call: Call) -> None:
    """Takes `call` off this thread's open calls until `resume_call` (JAX: between the
    tracing-cache lookup and the compilation)."""
    calls = _local.calls
    if calls and calls[-1] is call:
        calls.pop()
    elif call in calls:
        calls.remove(call)


def resume_call(call: Call) -> None:
    """Makes `call` this thread's innermost open call again."""
    calls = getattr(_local, "calls", None)
    if calls is None:
        calls = _local.calls = []
    calls.append(call)


def add_phase(phase: str, seconds: float, call: Call | None = None) -> None:
    """Adds a backend's measured phase to `call` (this thread's innermost by default)."""
    call = current_call() if call is None else call
    if call is None:
        return
    if call.phases is None:
        call.phases = {}
    call.phases[phase] = call.phases.get(phase, 0.0) + seconds
    call.phase_end = time.perf_counter()


def close_call(call: Call) -> None:
    """The call returns (or raises): its traces get their costs and are completed."""
    end = time.perf_counter()
    calls = _local.calls
    if calls and calls[-1] is call:
        calls.pop()
    elif call in calls:
        calls.remove(call)
    call.args = call.kwargs = None
    if not call.tracings:
        return
    call.end = end
    # The call's own traces: those not made inside another of its traces (a concrete function
    # asked for while tracing). The last of them gets the miss, less what the others cost (each
    # its phases): TensorFlow's first trace that created variables, then the trace that call
    # repeats without them. Every second of the call is counted once.
    serials = {tracing.serial for tracing in call.tracings}
    own = [tracing for tracing in call.tracings if tracing.parent not in serials]
    last = own[-1] if own else call.tracings[-1]
    earlier = sum(_cost(tracing) for tracing in own if tracing is not last)
    if call.phases:
        for phase, seconds in call.phases.items():
            last.phases[phase] = last.phases.get(phase, 0.0) + seconds
        if call.eager and call.phase_end is not None and "first_call" not in last.phases \
                and "compile" in call.phases:
            last.phases["first_call"] = end - call.phase_end
    last.miss = max(end - call.start - earlier, sum(last.phases.values()))
    if call.cache is not None:
        last.persistent_cache, last.cache_saved = call.cache, call.cache_saved
    for tracing in call.tracings:
        tracing.call_start = call.start
        _complete(tracing)
    call.tracings = []


def _cost(tracing: Any) -> float:
    """What a trace that is not its call's last cost: its phases (its trace, at least)."""
    return sum(tracing.phases.values()) or tracing.duration
