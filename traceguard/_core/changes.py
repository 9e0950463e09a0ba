"""One difference between two signatures, as a value code can branch on.

A `Change` names the argument, the aspect that differs (a dimension, the dtype,
a Python value, ...) and the old and new values. It is a `str` whose text is what
reports show (`"inputs: dim 0 60 -> 32"`), so `TraceEvent.changes` reads as the
strings it always held while hints are chosen from the fields, never from the text.
"""

from __future__ import annotations

import enum
from typing import Any


class Aspect(str, enum.Enum):
    """What about an argument differs."""

    DIM = "dim"  # One dimension of a tensor; `axis` says which.
    RANK = "rank"  # A tensor's number of dimensions.
    DTYPE = "dtype"
    VALUE = "value"  # A Python value (int, float, str, None, ...).
    STRUCTURE = "structure"  # Nesting, length, tensor-or-value, or a tensor type.
    ITEMS_PAST_CUT = "items_past_cut"  # Items past those a spec keeps.
    ADDED = "added"  # An argument given only now.
    REMOVED = "removed"  # An argument given only before.
    FUNCTION_OBJECT = "function_object"  # A new function object wrapping the same code.

    def __str__(self) -> str:
        return self.value


class Change(str):
    """One difference; `str(change)` is its report text.

    Attributes:
        argument: The argument as named in the signature, with an index or key
            for a nested value (`"inputs[0]"`, `"features['ids']"`).
        aspect: The `Aspect` that differs.
        old: The value before: a dimension, dtype name, rank, or spec text.
        new: The value now, of the same sort as `old`.
        axis: The dimension's axis for `Aspect.DIM`, else None.
    """

    argument: str
    aspect: Aspect
    old: Any
    new: Any
    axis: int | None

    def __new__(cls, argument: str, aspect: Aspect, old: Any = None, new: Any = None,
                axis: int | None = None, text: str | None = None) -> Change:
        self = super().__new__(cls, text if text is not None else _text(argument, aspect, old, new, axis))
        self.argument, self.aspect, self.old, self.new, self.axis = argument, aspect, old, new, axis
        return self

    @property
    def parameter(self) -> str:
        """The top-level argument name, without an index or key (`"inputs"` for `"inputs[0]"`)."""
        return self.argument.split("[", 1)[0]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Change, (self.argument, self.aspect, self.old, self.new, self.axis, str(self)))

    def __repr__(self) -> str:
        return f"Change({str(self)!r})"


def _text(argument: str, aspect: Aspect, old: Any, new: Any, axis: int | None) -> str:
    if aspect is Aspect.DIM:
        return f"{argument}: dim {axis} {old} -> {new}"
    if aspect is Aspect.DTYPE:
        return f"{argument}: dtype {old} -> {new}"
    if aspect is Aspect.ADDED:
        return f"{argument}: added ({new})"
    if aspect is Aspect.REMOVED:
        return f"{argument}: removed"
    return f"{argument}: {old} -> {new}"
