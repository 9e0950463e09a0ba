"""The backends traceguard records, as one value: `Backend.TENSORFLOW`, `Backend.JAX`, `Backend.TORCH`.

Chosen once, in `_compat._backend` (`_compat.BACKEND`), and carried by each trace's verdict;
every rule and renderer compares with these members instead of spelling the name. A member is
also its name as text (`str(Backend.JAX) == "jax"`, and equal to it), so trace files, JSON and
messages say what they said when the backend was a string.
"""

from __future__ import annotations

import enum


class Backend(str, enum.Enum):
    """A backend traceguard records: its value is the name Keras and the trace files use."""

    TENSORFLOW = "tensorflow"
    JAX = "jax"
    TORCH = "torch"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    # Equal to its text (the `str` base), so hashed as its text: a dict keyed by `"jax"` finds
    # `Backend.JAX` (Enum's own hash is of the member's name).
    def __hash__(self) -> int:
        return hash(self.value)
