"""The run of a `call` body in progress, on a stack per thread.

The recorder pushes a run when a body starts and pops it when the body ends;
side effects (print routing, `trace_once`) read the innermost run to know which
layer runs and whether it is being traced. A logged run keeps what its
`TraceEvent` needs; `log.event_of` makes the event when the log is first read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traceguard._compat import BACKEND, signature_of
from traceguard._core.classify import Observation, classify_run, verdict_of_place
from traceguard._core.kinds import TraceKind
from traceguard._core.signature import Signature
from traceguard._core.verdicts import RunContext, SymbolicPass, Verdict
from traceguard._record.internal_errors import log_internal_error

if TYPE_CHECKING:
    from traceguard._record.layer_state import LayerTraceState

_local = threading.local()
# A site's `keras_call` before a run needs it (`sites.RunSite`); never part of a run's record.
UNASKED = object()


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


def _symbolic_pass(run: BodyRun) -> SymbolicPass | None:
    name = getattr(run, "symbolic_pass", None)
    return None if name is None else SymbolicPass(name)


class BodyRun(EagerRun):
    """A run of a `call` body in progress on this thread that may become an event.

    It keeps what classification needs as the run starts (the place it runs in, a
    `Site` shared by the runs in one graph, and the layer's earlier traces then) and
    classifies the run when first asked: the verdict's changes and words are work
    for the log's reader, and most logs are never read while a model traces.
    """

    __slots__ = ("index", "site", "earlier", "same_origin", "symbolic_pass", "messages",
                 "started",
                 "variables_before", "deferred_mark", "created", "creation_watch", "_verdict",
                 # Filled in as the run finishes; `log.event_of` makes its TraceEvent from them.
                 "duration", "created_variables", "error", "owner", "_event")

    def __init__(self, layer: Any, state: LayerTraceState, original: Callable[..., Any],
                 args: tuple, kwargs: dict) -> None:
        # `EagerRun.__init__`'s assignments, written out: one call less on every logged run.
        self.layer, self.state, self.original, self.args, self.kwargs = layer, state, original, args, kwargs
        self.index: int | None = None  # None: the run is not logged.
        self.messages: list[str] = []
        self.created: list[Any] = []  # The TF variables created while the body runs.
        self.creation_watch: Any = None
        self.variables_before: list[Any] | None = None  # Walked when variable creation is not seen.
        self.deferred_mark: Any = None  # Where Keras 3's deferred variables stood (symbolic pass).

    # The place, from the run's site.
    @property
    def context(self) -> RunContext:
        return self.site.context  # type: ignore[no-any-return]

    @property
    def function(self) -> str | None:
        return self.site.function  # type: ignore[no-any-return]

    @property
    def function_trace(self) -> int | None:
        return self.site.function_trace  # type: ignore[no-any-return]

    @property
    def replica(self) -> int | None:
        return self.site.replica  # type: ignore[no-any-return]

    @property
    def thread(self) -> str:
        return self.site.thread  # type: ignore[no-any-return]

    @property
    def verdict(self) -> Verdict:
        """The run's classification, made on first use from what was seen as it started."""
        try:
            return self._verdict
        except AttributeError:
            pass
        site = self.site
        symbolic_pass = None
        try:
            if site.context is RunContext.SYMBOLIC:  # Named as the run started, by `_compat`.
                symbolic_pass = _symbolic_pass(self)
            verdict = classify_run(self.observation(symbolic_pass))
        except Exception:  # Reading the log must never fail for it.
            log_internal_error("classifying a run", "the run is shown by its place only")
            verdict = verdict_of_place(site.context, site.frame_name, BACKEND, symbolic_pass)
        self._verdict = verdict
        return verdict

    def observation(self, symbolic_pass: SymbolicPass | None = None) -> Observation:
        """What was seen around the run, as `classify_run` takes it."""
        site = self.site
        return Observation(
            site.context, self.signature, site.frame_name, site.in_creation_phase, self.earlier,
            self.same_origin, site.trace, BACKEND, site.keras_step,
            None if site.keras_call is UNASKED else site.keras_call, site.control_flow,
            site.enclosing, symbolic_pass)

    @property
    def kind(self) -> TraceKind:  # type: ignore[override]
        return self.verdict.kind
