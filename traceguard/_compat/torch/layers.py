"""A layer's body run while Dynamo traces a frame, told to the recorder at trace time.

Under `torch.compile` (Keras's `jit_compile=True` steps) Dynamo runs the recorded `call`
symbolically: the recorder's own bookkeeping there (stack frames, locks) would become
graph breaks and frames of their own. So the recorded `call` calls `note_trace_run()`,
which is `torch._dynamo.comptime.comptime(fn)`: Dynamo calls `fn(ctx)` once, while it
traces, in plain Python, and puts nothing in the graph; outside Dynamo it does nothing
(torch/_dynamo/comptime.py). `fn` reads the recorded `call`'s locals (`layer`, `args`,
`kwargs`; `ctx.get_local(name, stacklevel=1)`) as Dynamo holds them: the real layer object
(`ComptimeVar._i_will_not_complain_if_bc_breaks_VariableTracker().value`), each tensor as
the fake tensor Dynamo traces it with (`ComptimeVar.as_fake()`: its shape and dtype), and
constants as their values, then hands them to the recorder's callback. Measured with torch
2.14.1 and Keras 3.15.1 (a 2-layer model, `fit` with `jit_compile=True`): `fn` ran once per
layer per frame trace, and `torch._dynamo.utils.counters` and `get_compilation_metrics()`
were the same with and without it (no graph break, no frame added).

Dynamo may trace a frame more than once in one compile: after a graph break it restarts
the frame's analysis (a new `OutputGraph`, `InstructionTranslator.output`) and traces it
again up to the break; only the attempt that compiled its graph (`OutputGraph.compile_subgraph`
sets its `compile_subgraph_reason`, torch/_dynamo/output_graph.py) made the compile. While
a frame compile is recorded (`traces`), the runs wait here per compile and attempt, and
`flush` gives the compiled attempt's to the recorder as the compile ends (`discard` when it
fails or is skipped). With no compile recorded (no `watch()`), each run is told at once.
Measured on a Keras `fit` with `jit_compile=True` (torch 2.14.1): `one_step_on_data`'s first
attempt inlines `train_step` up to `loss.backward()` and restarts; its compiled graph has no
op (`graph_op_count` 0), so no layer ran in it.

Upstream, the files whose internals this module follows:

- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/comptime.py
- https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/output_graph.py
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch._dynamo import comptime as _comptime
from torch._dynamo import output_graph as _output_graph

from traceguard._compat._flavors import internal_missing
from traceguard._compat._function_tracing import FunctionTracing, innermost_tracing

_log = logging.getLogger("traceguard")


def _check() -> None:
    """Fails loudly at import when torch moved what `note_trace_run` relies on."""
    comptime = getattr(_comptime, "comptime", None)
    variable, context = getattr(_comptime, "ComptimeVar", None), getattr(_comptime, "ComptimeContext", None)
    try:
        parameters = tuple(inspect.signature(type(comptime).__call__).parameters)
        get_local = tuple(inspect.signature(context.get_local).parameters)  # type: ignore[union-attr]
    except (TypeError, ValueError, AttributeError):
        parameters = get_local = ()
    if parameters[:1] != ("fn",) or get_local[:2] != ("self", "name") or "stacklevel" not in get_local:
        raise internal_missing(f"torch._dynamo.comptime.comptime(fn) and ComptimeContext.get_local(name, "
                               f"stacklevel=) (found {parameters}, {get_local})")
    for name in ("_i_will_not_complain_if_bc_breaks_VariableTracker", "as_fake", "is_proxy",
                 "is_python_constant", "as_python_constant"):
        if not callable(getattr(variable, name, None)):
            raise internal_missing(f"torch._dynamo.comptime.ComptimeVar.{name}")
    compile_subgraph = getattr(_output_graph.OutputGraph, "compile_subgraph", None)
    if "compile_subgraph_reason" not in getattr(getattr(compile_subgraph, "__code__", None), "co_names", ()):
        raise internal_missing("torch._dynamo.output_graph.OutputGraph.compile_subgraph setting "
                               "compile_subgraph_reason")
    if not callable(getattr(context, "_i_will_not_complain_if_bc_breaks_InstructionTranslator", None)):
        raise internal_missing("torch._dynamo.comptime.ComptimeContext."
                               "_i_will_not_complain_if_bc_breaks_InstructionTranslator")


_check()

# The recorder's callback: `record(layer, args, kwargs, tracing)`, set once by the recorder.
_record: Callable[[Any, tuple, dict, FunctionTracing | None], None] | None = None
# This thread's runs waiting for their frame compile to end: by the compile's `FunctionTracing`
# (its id), each attempt's `OutputGraph` (held until then) and the runs of that attempt, in order.
_local = threading.local()


def set_recorder(record: Callable[[Any, tuple, dict, FunctionTracing | None], None]) -> None:
    global _record
    _record = record


def note_trace_run() -> None:
    """Called by the recorded `call` while Dynamo traces it: the recorder is told of the run once,
    at trace time, with the frame compile it belongs to; nothing enters the graph."""
    _comptime.comptime(_at_trace_time)


def flush(tracing: FunctionTracing) -> None:
    """The frame compile `tracing` ends with a cache entry: the runs of the attempt that compiled
    its graph (the last one that did) are recorded."""
    attempts = _waiting().pop(id(tracing), None)
    compiled = [runs for output, runs in attempts or () if hasattr(output, "compile_subgraph_reason")]
    if not compiled or _record is None:
        return
    for layer, args, kwargs in compiled[-1]:
        _tell(layer, args, kwargs, tracing)


def discard(tracing: FunctionTracing) -> None:
    """The frame compile `tracing` failed or was skipped: its runs made no compile."""
    _waiting().pop(id(tracing), None)


def _waiting() -> dict[int, list[tuple[Any, list[tuple[Any, tuple, dict]]]]]:
    try:
        return _local.waiting
    except AttributeError:
        _local.waiting = {}
        return _local.waiting


def _at_trace_time(ctx: Any) -> None:
    if _record is None:
        return
    try:
        layer = ctx.get_local("layer", stacklevel=1)._i_will_not_complain_if_bc_breaks_VariableTracker().value
        args = _value(ctx.get_local("args", stacklevel=1))
        kwargs = _value(ctx.get_local("kwargs", stacklevel=1))
        output = ctx._i_will_not_complain_if_bc_breaks_InstructionTranslator().output
    except Exception:  # Not the recorded `call`'s frame, or a value Dynamo holds another way.
        return
    run = (layer, tuple(args) if isinstance(args, (list, tuple)) else (),
           kwargs if isinstance(kwargs, dict) else {})
    tracing = innermost_tracing()
    if tracing is None:  # No frame compile recorded: told now.
        _tell(*run, None)
        return
    attempts = _waiting().setdefault(id(tracing), [])
    if not attempts or attempts[-1][0] is not output:  # The compile's first attempt, or a restart.
        attempts.append((output, []))
    attempts[-1][1].append(run)


def _tell(layer: Any, args: tuple, kwargs: dict, tracing: FunctionTracing | None) -> None:
    try:
        _record(layer, args, kwargs, tracing)  # type: ignore[misc]
    except Exception:  # Bookkeeping must never break Dynamo's trace.
        _log.exception("traceguard failed recording a layer run that Dynamo traced")


class Tensor:
    """A tensor argument as Dynamo traced it: its dtype, and its shape with a symbolic (dynamic)
    size as None. Named as torch's, so that a signature reads `torch.float32[16,3]`; made from the
    fake tensor without reading a symbolic size's value, which would add a guard."""

    __slots__ = ("dtype", "shape")

    def __init__(self, fake: Any) -> None:
        self.dtype = fake.dtype
        self.shape = tuple(size if type(size) is int else None for size in fake.shape)


def _value(variable: Any) -> Any:
    """What Dynamo holds for a local, as values a signature reads: the items of a tuple, list or
    dict, the value of a constant, the fake tensor of a tensor; None for anything else."""
    tracker = variable._i_will_not_complain_if_bc_breaks_VariableTracker()
    items = getattr(tracker, "items", None)
    wrap = type(variable)
    if isinstance(items, (list, tuple)):
        return [_value(wrap(item)) for item in items]
    if isinstance(items, dict):
        values = {}
        for key, item in items.items():
            name = getattr(getattr(key, "vt", None), "value", None)
            if isinstance(name, str):
                values[name] = _value(wrap(item))
        return values
    if variable.is_python_constant():
        return variable.as_python_constant()
    if variable.is_proxy() and hasattr(tracker.as_proxy(), "node"):
        fake = variable.as_fake()
        return Tensor(fake) if isinstance(fake, torch.Tensor) else None
    return None


__all__ = ["Tensor", "discard", "flush", "note_trace_run", "set_recorder"]
