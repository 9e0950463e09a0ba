"""`no_retrace()`: nothing traces after warm-up, or the trace fails with its explanation.

A `RetraceGuard` is an observer (`_record.observers`) with `record_function`:
while it is registered, the backend's hook reports every trace of a whole
function (`tf.function`, a Keras step, `jax.jit`) when it ends, still inside the
backend's tracing call. The guard raises `RetraceError` there (its `stops_trace`
lets it through the observers and the hook), so the error reaches the user's
call through `tf.function`, `fit` and `jax.jit` as itself, and the graph is not
cached: the next call traces, and fails, again. A layer's traces inside a
function's trace are named in that function's failure; a layer's retrace
outside any function trace fails on its own. `TraceMonitor(no_retrace_after=...)`
and `@pytest.mark.no_retrace` use the same guard, with the same defaults.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from traceguard import _compat
from traceguard._core.errors import retrace_error
from traceguard._core.events import GRAPH_TRACE_KINDS, TraceEvent, TraceKind
from traceguard._core.functions import FunctionTrace
from traceguard._core.guards import GUARDED_KINDS, GUARDED_REASONS, ON_RETRACE_MODES
from traceguard._core.verdicts import Reason
from traceguard._diagnosis.function_runs import function_event
from traceguard._diagnosis.reported import is_reported
from traceguard._record import observers as _observers
from traceguard._reports.guards import format_guard_failure, unrecorded_retrace_reason
from traceguard._reports.text import format_retracing_note

# The defaults of every form of the guard (`no_retrace()`, its pytest marker, `TraceMonitor`):
# a retrace raises, and each function's first trace is its warm-up. A test asking "fail me if
# this retraces" builds its functions and models itself, so their first traces are inevitable
# and are not retraces; a block after a warm-up of its own can ask for more with
# `allow_first_traces=False`.
ON_RETRACE = "raise"
ALLOW_FIRST_TRACES = True
_LAYERS_KEPT = 1000  # Function traces whose layers are remembered until the trace ends.
# The traces a guard failed, per `FunctionRecords`: record index -> the record as failed. The
# backend cached nothing, so the next call traces the same signature again; the records read
# that as a retrace with nothing changed, and the guard reads it as the failed trace once more.
_failed: weakref.WeakKeyDictionary[Any, dict[int, FunctionTrace]] = weakref.WeakKeyDictionary()
_FAILED_KEPT = 1000


def check_on_retrace(on_retrace: object, where: str) -> str:
    """`on_retrace`, checked; `where` names the argument in the error (`no_retrace(on_retrace=...)`)."""
    if on_retrace not in ON_RETRACE_MODES:
        raise ValueError(f"`{where}` expects one of {', '.join(map(repr, ON_RETRACE_MODES))}. "
                         f"Received: on_retrace={on_retrace!r}")
    return str(on_retrace)


def check_allow_first_traces(allow_first_traces: object, where: str) -> bool:
    if not isinstance(allow_first_traces, bool):
        raise ValueError(f"`{where}` expects a bool. Received: allow_first_traces={allow_first_traces!r}")
    return allow_first_traces


class RetraceGuard:
    """The observer that fails a trace made while it is armed.

    Args:
        on_retrace: One of `ON_RETRACE_MODES`.
        allow_first_traces: Whether a function's first trace seen (and the
            variable retrace TensorFlow follows it with) is its warm-up.
        where: The end of a failure's first line, or a function giving it then.
        baseline_recorded: Whether traceguard recorded the traces before the
            guard (an enclosing `watch()`), so a retrace can name what changed.
    """

    def __init__(self, on_retrace: str, allow_first_traces: bool, where: str | Callable[[], str],
                 baseline_recorded: bool = True) -> None:
        self.on_retrace = on_retrace
        self.allow_first_traces = allow_first_traces
        self.armed = True
        self._where = where
        self._baseline_recorded = baseline_recorded
        self._layers: dict[int, list[str]] = {}  # Function trace serial -> its layers' traces.

    # --- the observer ---
    retracing_note = staticmethod(format_retracing_note)

    def record_eager(self, layer: Any) -> None:
        pass

    def record_event(self, layer: Any, event: TraceEvent) -> None:
        if not self.armed or event.kind not in GRAPH_TRACE_KINDS or event.error is not None:
            return  # A body that raised: its own exception goes on.
        if event.function_trace is not None:  # The function's failure names it.
            if len(self._layers) < _LAYERS_KEPT or event.function_trace in self._layers:
                self._layers.setdefault(event.function_trace, []).append(
                    f"'{event.layer}' ({event.kind.value})")
            return
        if event.kind not in GUARDED_KINDS:
            return
        self._fail(format_guard_failure(
            f"Layer '{event.layer}'", None, self._place(), signature=event.signature,
            changes=event.changes, reason=event.reason, hint=event.hint, call_site=None),
            layer=event.layer, function=event.function, kind=event.kind.value, changes=event.changes,
            signature=event.signature, reason=event.reason, hint=event.hint)

    def record_function(self, record: FunctionTrace) -> None:
        layers = self._layers.pop(record.serial, ())
        record = _as_failed_before(record)
        if record.raised:  # The backend cached nothing: the next call repeats this trace.
            _remember_failed(record)
            return
        if not self.armed or record.saving or not is_reported(record):
            return
        # A first trace to traceguard may be a retrace of a warm-up it did not record.
        first = record.reason is Reason.FIRST_TRACE
        unrecorded = _unrecorded_traces(record) if first else None
        if self.allow_first_traces and record.reason not in GUARDED_REASONS and not unrecorded:
            return
        event = function_event(record)
        if self.on_retrace == "raise":  # Then the backend caches nothing (a warning lets it go on).
            _remember_failed(record)
        step = f" (the step of `{record.keras_call.method}`)" if record.keras_call is not None else ""
        why: Reason | None = record.reason
        kind, reason = record.kind.value, event.reason
        if unrecorded:
            why, kind = None, TraceKind.RETRACE.value
            reason = unrecorded_retrace_reason(record.origin, record.name, unrecorded)
        # Whether what changed is known: traceguard saw the earlier traces, or there was none.
        known = not first or (self._baseline_recorded if unrecorded is None else unrecorded == 0)
        self._fail(format_guard_failure(
            f"`{record.name}`{step}", why, self._place(), signature=event.signature,
            changes=event.changes, reason=reason, hint=event.hint, call_site=event.call_site,
            layers=layers, baseline_recorded=known),
            function=record.name, kind=kind, changes=event.changes, signature=event.signature,
            call_site=event.call_site, reason=reason, hint=event.hint)

    # --- failing ---
    def _place(self) -> str:
        return self._where() if callable(self._where) else self._where

    def _fail(self, message: str, **facts: Any) -> None:
        if self.on_retrace == "raise":
            raise retrace_error(message, **facts)
        warnings.warn(message, UserWarning, stacklevel=_compat.user_stacklevel())


def _as_failed_before(record: FunctionTrace) -> FunctionTrace:
    """`record`, or the trace a guard failed before if `record` repeats it (same signature)."""
    records = _observers.function_records
    failed = _failed.get(records, {}) if records is not None else {}
    earlier = failed.get(record.closest) if record.closest is not None and not record.changes else None
    if earlier is None or record.reason not in (Reason.SIGNATURE_CHANGED, Reason.SAME_ARGUMENTS):
        return record
    return dataclasses.replace(record, kind=earlier.kind, reason=earlier.reason, changes=earlier.changes,
                               closest=earlier.closest, verdict=earlier.verdict)


def _remember_failed(record: FunctionTrace) -> None:
    records = _observers.function_records
    if records is None:
        return
    failed = _failed.setdefault(records, {})
    if len(failed) >= _FAILED_KEPT:
        failed.pop(next(iter(failed)))
    failed[record.index] = record


def _unrecorded_traces(record: FunctionTrace) -> int | None:
    """How many times the function object of `record` traced before this trace, as its backend
    counts (a `tf.function`'s own count); None when not known (a `jax.jit` function)."""
    reference = _observers.traced_function(record)
    function = reference() if reference is not None else None
    return None if function is None else _compat.traces_before(function)


@contextlib.contextmanager
def no_retrace(on_retrace: str = ON_RETRACE, allow_first_traces: bool = ALLOW_FIRST_TRACES) -> Iterator[None]:
    """Fails any retrace made inside the block: the code in it must be warmed up.

    Every retrace of a whole function inside the block (a `tf.function`, a
    Keras `fit`/`evaluate`/`predict` step, a `jax.jit` function) is a
    tracing-cache miss the warm-up did not cover: a new signature, or a new
    function object of the same code (a model rebuilt per iteration). It fails
    during that trace, inside the call that made it, with the explanation: the
    function, the call site, its signature, what changed from the closest
    earlier signature, why it traced and the fix, and the layers that traced
    inside it. Each function's first trace is its warm-up, wherever it happens
    (with the variable retrace TensorFlow may follow it with), unless
    `allow_first_traces=False`: then any trace in the block fails, the first
    trace of a function the warm-up before the block did not run included
    (a first `evaluate` after `fit` traces Keras's test step).

    What changed is known when traceguard recorded the warm-up: run it inside
    `traceguard.watch()` (or with a `TraceMonitor`); otherwise a retrace reads
    as the first trace traceguard saw. Traces by every thread count; saving
    (SavedModel, `model.export`) and TensorFlow's and Keras's own helper
    functions (`tf.data` pipelines) do not. `@pytest.mark.no_retrace` is this
    guard around a test, with the same arguments and defaults.

    Args:
        on_retrace: What a retrace does. One of `{"raise", "warn"}`: raise
            `traceguard.RetraceError` from the call that traced, or issue a
            `UserWarning` and go on. Defaults to `"raise"`.
        allow_first_traces: Boolean, whether each function's first trace is
            its warm-up, so that only retraces fail. Defaults to `True`: a
            first trace is not a retrace, and code under test makes its
            functions' first traces itself. `False` also fails a function's
            first trace inside the block, for a block after a warm-up that
            must have covered everything.

    Raises:
        ValueError: If `on_retrace` or `allow_first_traces` is not one of the
            accepted values.
        RetraceError: Inside the block, from the call that traced. The error
            passes through `tf.function`, `fit` and `jax.jit` unchanged; its
            attributes hold the facts (`function`, `kind`, `changes`,
            `call_site`, ...).

    Example:

    ```python
    with traceguard.watch():
        model.fit(x, y, batch_size=32, epochs=1)  # Warm-up.
        with traceguard.no_retrace():
            model.fit(x, y, batch_size=32, epochs=5)
    ```
    """
    with guarding(on_retrace, allow_first_traces, "no_retrace",
                  "inside the `traceguard.no_retrace()` block"):
        yield


def guarding(on_retrace: object, allow_first_traces: object, form: str,
             where: str) -> contextlib.AbstractContextManager[None]:
    """The guard of `no_retrace()` and of its pytest marker, its arguments checked now: `form`
    names them in an error (`no_retrace`, `@pytest.mark.no_retrace`), `where` ends a failure's
    first line."""
    return _guarded(check_on_retrace(on_retrace, f"{form}(on_retrace=...)"),
                    check_allow_first_traces(allow_first_traces, f"{form}(allow_first_traces=...)"), where)


@contextlib.contextmanager
def _guarded(on_retrace: str, allow_first_traces: bool, where: str) -> Iterator[None]:
    guard = RetraceGuard(on_retrace, allow_first_traces, where,
                         baseline_recorded=_observers.function_records is not None)
    with _observers.observing(guard):
        yield
