"""The run of a `call` body in progress, on a stack per thread.

The recorder pushes a run when a body starts and pops it when the body ends;
side effects (print routing, `trace_once`) read the innermost run to know which
layer runs and whether it is being traced. A logged run keeps what its
`TraceEvent` needs, and makes the event when the log is first read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traceguard._core.events import TraceEvent, TraceKind
from traceguard._core.signature import Signature, format_signature, signature_of
from traceguard._reports.messages import hint_text, reason_text

if TYPE_CHECKING:
    from traceguard._record.layer_state import LayerTraceState

_local = threading.local()


def active_runs() -> list[EagerRun]:
    """This thread's body runs in progress, innermost last."""
    try:
        return _local.runs
    except AttributeError:
        _local.runs = []
        return _local.runs


class EagerRun:
    """An eager run of a `call` body in progress on this thread, counted and not logged.

    Every eager step of a layer makes one, so it holds only what the code running
    inside the body may ask: which layer runs, and its input signature.
    """

    __slots__ = ("layer", "state", "original", "args", "kwargs", "signature")
    index: int | None = None  # Never logged.
    kind = TraceKind.EAGER

    def __init__(self, layer: Any, state: LayerTraceState, original: Callable[..., Any],
                 args: tuple, kwargs: dict) -> None:
        self.layer = layer
        self.state = state
        self.original = original
        self.args = args
        self.kwargs = kwargs

    def input_signature(self) -> Signature:
        """The run's signature; computed on first use when the run is not logged."""
        try:
            return self.signature
        except AttributeError:
            self.signature = signature_of(self.original, self.args, self.kwargs)
            return self.signature


class BodyRun(EagerRun):
    """A run of a `call` body in progress on this thread that may become an event."""

    __slots__ = ("index", "kind", "context", "function", "function_key", "origin",
                 "in_creation_phase", "trace", "messages", "started",
                 "variables_before", "created", "creation_watch", "verdict",
                 # Filled in as the run finishes; `event()` makes its TraceEvent from them.
                 "duration", "created_variables", "thread", "replica", "error", "function_trace",
                 "owner", "_event")

    def __init__(self, layer: Any, state: LayerTraceState, original: Callable[..., Any],
                 args: tuple, kwargs: dict) -> None:
        # `EagerRun.__init__`'s assignments, written out: one call less on every logged run.
        self.layer, self.state, self.original, self.args, self.kwargs = layer, state, original, args, kwargs
        self.index: int | None = None  # None: the run is not logged.
        self.kind = TraceKind.EAGER
        self.messages: list[str] = []
        self.created: list[Any] = []  # The TF variables created while the body runs.
        self.creation_watch: Any = None

    def event(self) -> TraceEvent:
        """The finished run's `TraceEvent`, made on first use (the log is read rarely)."""
        try:
            return self._event
        except AttributeError:
            verdict = self.verdict
            self._event = TraceEvent(
                index=self.index, kind=verdict.kind, layer=self.owner,
                function=self.function, signature=format_signature(self.signature),
                changes=verdict.changes, created_variables=self.created_variables,
                reason=reason_text(verdict), hint=hint_text(verdict), timestamp=self.started,
                duration_s=self.duration, thread=self.thread, replica=self.replica,
                messages=tuple(self.messages), error=self.error, function_trace=self.function_trace,
            )
            return self._event
