"""A fix-it and its check, as plain values: what `_diagnosis` proposes and replays.

`_diagnosis.fixes.propose_fix` makes a `FixIt` from one function's recorded
signatures; `_diagnosis.fix_checks.verify_fix` replays it into a `FixCheck`;
`_reports.fixes` words both. The public types are `_diagnosis`'s subclasses of
these, whose `str()` is that report text (the core makes no sentences).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from traceguard._core.specs import Site, Spec

_Fix = TypeVar("_Fix", bound="FixIt")

# The fixes `propose_fix` proposes, most specific first.
FIX_KINDS = ("input_signature", "reduce_retracing", "tensor_argument")


@dataclasses.dataclass(frozen=True)
class ArgumentSpec:
    """One argument of a proposed `input_signature`: `tf.TensorSpec(shape=dims, dtype=dtype)`.

    `dims` is None for an unknown rank; `from_number` is True for a Python
    number the user is to pass as a tensor (its dims are then `()`).
    """

    name: str
    dtype: str
    dims: tuple[int | None, ...] | None
    from_number: bool = False


@dataclasses.dataclass(frozen=True)
class FixIt:
    """A proposed fix for one function's retraces, and the signatures it is checked with.

    Attributes:
        function: The backend's name for the function, e.g. `"f"`.
        qualname: Its qualified name.
        definition: The `Site` of its `def`, if found.
        kind: One of `FIX_KINDS`.
        arguments: For `"input_signature"`, one `ArgumentSpec` per argument, in
            order; else `()`.
        to_tensors: The arguments that were Python numbers and changed: pass
            each as a tensor (`tf.constant(...)`).
        reduce_retracing: Whether the fix includes `reduce_retracing=True`.
        traces: How many traces of the function were recorded.
        signatures: The distinct recorded signatures (specs), oldest first.
        examples: For each name in `to_tensors`, one value it was seen with.
        tensor_dtype: The dtype to give those tensors: `"int32"` (what
            `tf.constant` makes of an int) or `"float32"`.
        wrapped_object: For a `tf.function` of a callable object (a layer),
            what it is, e.g. `"Dense 'scripted'"`; None for a function.
    """

    function: str
    qualname: str
    definition: Site | None
    kind: str
    arguments: tuple[ArgumentSpec, ...]
    to_tensors: tuple[str, ...]
    reduce_retracing: bool
    traces: int
    signatures: tuple[Mapping[str, Spec], ...]
    examples: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    tensor_dtype: str = "int32"
    wrapped_object: str | None = None

    def with_float_tensors(self: _Fix) -> _Fix:
        """The same fix (of the same type) with the Python numbers passed as `float32` tensors."""
        arguments = tuple(dataclasses.replace(a, dtype="float32") if a.from_number else a
                          for a in self.arguments)
        return dataclasses.replace(self, arguments=arguments, tensor_dtype="float32")


@dataclasses.dataclass(frozen=True)
class FixCheck:
    """The outcome of replaying a fix-it's recorded signatures.

    Attributes:
        fix: The `FixIt` checked.
        replayed: How many distinct signatures were replayed (0 if none could be).
        before: Traces of a copy of the function as written, over the replay;
            None if it could not run.
        after: Traces of a copy with the fix applied; None if it could not run.
        problem: Why the fix could not be verified, or None.
    """

    fix: FixIt
    replayed: int
    before: int | None
    after: int | None
    problem: str | None = None

    @property
    def verified(self) -> bool:
        """Whether the replay ran, matched what was recorded, and the fix traced less."""
        return self.problem is None and self.before is not None and self.after is not None \
            and self.after < self.before


__all__ = ["FIX_KINDS", "ArgumentSpec", "FixCheck", "FixIt"]
