"""The exceptions traceguard raises at its public boundary."""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any


class RetraceError(Exception):
    """Raised when something traces that should not: over a layer's `max_traces`
    budget, or inside a `traceguard.no_retrace()` block.

    `str()` is the full explanation. The facts it is made of are attributes, so
    code can branch on them; each is `None` (or empty) when it does not apply,
    as for a budget's error, which names a layer only.

    A direct `Exception` subclass on purpose: TensorFlow re-raises those through
    `tf.function` as they are, while it wraps some other classes (such as
    `RuntimeError` subclasses) in a `StagingError`.

    Attributes:
        function: The backend's name of the function that traced
            (`"one_step_on_data"`, `"train_step"`), else `None`.
        layer: The layer's name, for a layer's trace, else `None`.
        kind: The trace's `TraceKind` value: `"trace"`, `"retrace"` or
            `"variable_retrace"` (a new function object's first trace is a
            `"retrace"`; `reason` says so).
        changes: What differs from the closest earlier signature, as `Change`
            values (`str()` reads `"x: dim 0 32 -> 6"`); empty if none was
            recorded.
        signature: The new trace's argument specs, by argument name.
        call_site: The `Site` of the user's code that made the trace (`str()`
            reads `"file:line"`).
        reason: One sentence: why it traced.
        hint: How to avoid it, or `None`.
    """

    # Raised by an observer of a trace, it fails that trace (see `_compat.stops_trace`).
    stops_trace = True
    # The facts, set by `retrace_error`. No `__init__` of its own on purpose: AutoGraph
    # re-creates an error raised in converted code as `type(error)(message)` only when
    # the class keeps `Exception.__init__` (tensorflow/python/autograph/pyct/
    # error_utils.py, `ErrorMetadataBase.create_exception`); else it raises a
    # `StagingError`. Pickling keeps them (`BaseException.__reduce__` carries `__dict__`).
    function: str | None = None
    layer: str | None = None
    kind: str | None = None
    changes: tuple[Any, ...] = ()
    signature: Mapping[Any, Any] = types.MappingProxyType({})
    call_site: Any = None
    reason: str | None = None
    hint: str | None = None


def retrace_error(message: str, *, function: str | None = None, layer: str | None = None,
                  kind: str | None = None, changes: Sequence[Any] = (),
                  signature: Mapping[Any, Any] | None = None, call_site: Any = None,
                  reason: str | None = None, hint: str | None = None) -> RetraceError:
    """A `RetraceError` with `message` and the facts it is made of."""
    error = RetraceError(message)
    error.function, error.layer, error.kind = function, layer, kind
    error.changes = tuple(changes)
    error.signature = dict(signature or {})
    error.call_site, error.reason, error.hint = call_site, reason, hint
    return error


RetraceError.__module__ = "traceguard"
