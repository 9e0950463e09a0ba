"""A layer's traceguard settings: its constructor arguments, checked where they are given."""

from __future__ import annotations

import dataclasses
from typing import Any

from traceguard._core.guards import ON_RETRACE_MODES

# The attribute, in a layer's `__dict__`, of the state of a layer that keeps its own
# (a `TraceAwareLayer`); a watched plain layer has none. Named here, where reading it imports no
# backend (`report` rebuilds an `Explanation` without one).
STATE_ATTRIBUTE = "_traceguard_state"


@dataclasses.dataclass(frozen=True)
class TraceSettings:
    """A layer's traceguard constructor arguments, checked where they are given."""

    trace_log_size: int = 1000
    log_eager: bool = False
    max_traces: int | None = None
    # A layer's budget warns by default: it lives in the model, which must not fail a long run
    # for a trace; the test forms of the budget fail the test.
    on_retrace: str = "warn"

    def __post_init__(self) -> None:
        if isinstance(self.trace_log_size, bool) or not isinstance(self.trace_log_size, int) \
                or self.trace_log_size < 1:
            raise ValueError("`trace_log_size` expects a positive integer. "
                             f"Received: trace_log_size={self.trace_log_size!r}")
        if not isinstance(self.log_eager, bool):
            raise ValueError(f"`log_eager` expects a bool. Received: log_eager={self.log_eager!r}")
        if self.max_traces is not None and (
            isinstance(self.max_traces, bool) or not isinstance(self.max_traces, int)
            or self.max_traces < 0
        ):
            raise ValueError("`max_traces` expects None or a non-negative integer. "
                             f"Received: max_traces={self.max_traces!r}")
        if self.on_retrace not in ON_RETRACE_MODES:
            raise ValueError(f"`on_retrace` expects one of {', '.join(map(repr, ON_RETRACE_MODES))}. "
                             f"Received: on_retrace={self.on_retrace!r}")

    def as_config(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SETTING_NAMES = tuple(field.name for field in dataclasses.fields(TraceSettings))
# Former names of settings, still taken (with a `DeprecationWarning`) and still read from
# saved configs: old name -> new name.
RENAMED_SETTINGS = {"on_excess": "on_retrace"}
