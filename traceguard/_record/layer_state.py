"""What traceguard keeps on one layer: its settings, its log, and the traces it remembers."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

from traceguard._core.verdicts import EarlierTrace
from traceguard._record.log import TraceLog, appender, eager_counter, index_reserver
from traceguard._record.settings import STATE_ATTRIBUTE, TraceSettings
from traceguard._record.variables import VariableLedger

# Per layer, how many tf.functions and how many traces of each classification remembers.
REMEMBERED_FUNCTIONS = 64
REMEMBERED_TRACES = 64


class LayerTraceState:
    """Everything traceguard keeps on one layer; never Keras-tracked, never saved."""

    def __init__(self, settings: TraceSettings, owner: str, sees_build: bool = True) -> None:
        self.settings = settings
        # The variables its `build` and runs created that a later run has to claim.
        self.variables = VariableLedger(sees_build)
        self.log = TraceLog(settings.trace_log_size, owner=owner)
        # Called at every eager step: a bound C method, looked up once.
        self.count_eager_call = eager_counter(self.log)
        # Called at every logged run: the log's index counter (C) and its `_append`, bound once.
        self.reserve_index = index_reserver(self.log)
        self.append = appender(self.log)
        self.lock = threading.Lock()
        self.graph_traces = 0
        # The traces of each function, oldest first. A run takes the tuple as it starts, with
        # no copy and no lock: `remember` replaces tuples whole.
        self.traces_by_function: collections.OrderedDict[Any, tuple[EarlierTrace, ...]] = \
            collections.OrderedDict()
        # The same traces by what their tf.function wraps, to recognise a tf.function made anew.
        self.traces_by_origin: collections.OrderedDict[Any, tuple[EarlierTrace, ...]] = \
            collections.OrderedDict()

    # Copies (deepcopy, pickle, clone) start with an empty log of their own.
    def __deepcopy__(self, memo: dict) -> LayerTraceState:
        return LayerTraceState(self.settings, self.log.owner, self.variables.sees_build)

    def __reduce__(self) -> tuple:
        return (LayerTraceState, (self.settings, self.log.owner, self.variables.sees_build))

    def remember(self, key: Any, trace: EarlierTrace, origin: Any = None) -> int:
        """Remembers a trace of the function `key`, and of `origin` when given, and counts it
        in `graph_traces`: the count with it, or 0 when its trace was already seen.

        Under each, the newest `REMEMBERED_TRACES` of the `REMEMBERED_FUNCTIONS` used last,
        a trace not added again with a signature it has. One frame and one lock for both
        memories and the count: every traced run of every layer comes here.
        """
        token, new_trace = trace.trace, True
        with self.lock:
            for memory, at in ((self.traces_by_function, key), (self.traces_by_origin, origin)):
                if at is None and memory is self.traces_by_origin:
                    break
                traces = memory.get(at)
                if traces is None:
                    traces = ()
                    if len(memory) >= REMEMBERED_FUNCTIONS:
                        memory.popitem(last=False)
                else:
                    memory.move_to_end(at)
                # Runs of this very trace (`same_trace`, written out).
                seen = [past for past in traces if past.trace == token] if token is not None else ()
                if not seen or not any(past.signature == trace.signature for past in seen):
                    memory[at] = (*traces[1 - REMEMBERED_TRACES:], trace) if traces else (trace,)
                if memory is self.traces_by_function:
                    new_trace = not seen
            if not new_trace:
                return 0
            self.graph_traces += 1
            return self.graph_traces


# Set while `watch()` or `explain()` instruments plain Keras layer classes: returns the
# state that records a layer without traceguard state of its own (or None).
plain_layer_state: Callable[[Any], LayerTraceState | None] | None = None


def set_plain_layer_state(provider: Callable[[Any], LayerTraceState | None] | None) -> None:
    """Records plain layers through `provider` from now on; None stops."""
    global plain_layer_state
    plain_layer_state = provider


def state_of(layer: Any) -> LayerTraceState | None:
    """The layer's state: its own (a trace-aware layer), or the one `watch()` gives it."""
    state = layer.__dict__.get(STATE_ATTRIBUTE)
    if state is None and plain_layer_state is not None:
        state = plain_layer_state(layer)
    return state
