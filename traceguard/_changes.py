"""A difference between two signatures as a value: `Change(argument, aspect, old, new)`.

Code branches on the fields; `str()` of a change is the text a report shows, the
same as `_signature.diff_specs` gives (`"inputs: dim 0 60 -> 32"`, `"step: 0 -> 1"`),
so the string diff can be replaced by this one. Pure Python.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from traceguard._signature import _MAX_ITEMS, Signature, Spec, format_spec

# What one `Change` is about.
CHANGE_ASPECTS = ("dim", "rank", "dtype", "value", "structure", "added", "removed",
                  "function-object")


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between two signatures: `argument`, which `aspect`, `old` and `new`.

    `aspect` is one of `CHANGE_ASPECTS`. `old` and `new` are the dimensions for
    `"dim"` (`axis` says which), the ranks (None if unknown) for `"rank"` (with
    `old_spec`/`new_spec`, the formatted specs), dtype names for `"dtype"`,
    formatted specs for `"value"`, `"structure"`, `"added"` (`new`) and
    `"removed"` (`old`), and for `"function-object"` the numbers (1, 2, ...) of
    the earlier and the new function object of the same code. A `"structure"`
    change with `old` and `new` None says the items past the first
    `_signature._MAX_ITEMS` of a long sequence or mapping changed.
    """

    argument: str
    aspect: str
    old: Any
    new: Any
    axis: int | None = None
    old_spec: str | None = None
    new_spec: str | None = None

    def __str__(self) -> str:
        name, aspect = self.argument, self.aspect
        if aspect == "dim":
            return f"{name}: dim {self.axis} {self.old} -> {self.new}"
        if aspect == "dtype":
            return f"{name}: dtype {self.old} -> {self.new}"
        if aspect == "rank":
            return (f"{name}: rank {'?' if self.old is None else self.old} -> "
                    f"{'?' if self.new is None else self.new} ({self.old_spec} -> {self.new_spec})")
        if aspect == "added":
            return f"{name}: added ({self.new})"
        if aspect == "removed":
            return f"{name}: removed"
        if aspect == "function-object":
            return (f"{name}: function object #{self.old} -> #{self.new} "
                    "(a new function object from the same code)")
        if aspect == "structure" and self.old is None and self.new is None:
            return f"{name}: the items past the first {_MAX_ITEMS} changed"
        text = f"{name}: {self.old} -> {self.new}"
        if self.old == self.new:  # Values that differ past their shortened repr.
            text += " (they differ past the part shown)"
        return text


def diff_specs_structured(name: str, old: Spec, new: Spec) -> list[Change]:
    """The differences between two specs of the argument `name`, as `Change`s.

    `str()` of each is the text `_signature.diff_specs` gives for it.
    """
    if old == new:
        return []
    if old[0] == new[0] == "tensor" and old[1] == new[1]:
        changes = []
        if old[2] != new[2]:
            changes.append(Change(name, "dtype", old[2], new[2]))
        old_dims, new_dims = old[3], new[3]
        if old_dims is None or new_dims is None or len(old_dims) != len(new_dims):
            if old_dims != new_dims:
                changes.append(Change(
                    name, "rank", None if old_dims is None else len(old_dims),
                    None if new_dims is None else len(new_dims),
                    old_spec=format_spec(old), new_spec=format_spec(new)))
        else:
            changes.extend(Change(name, "dim", a, b, axis=axis)
                           for axis, (a, b) in enumerate(zip(old_dims, new_dims)) if a != b)
        return changes
    if old[0] == new[0] == "seq" and old[1] == new[1] and old[3] == new[3]:
        changes = [c for i, (a, b) in enumerate(zip(old[2], new[2]))
                   for c in diff_specs_structured(f"{name}[{i}]", a, b)]
        return changes + _cut_changed(name, old[4], new[4])
    if old[0] == new[0] == "map" and old[2] == new[2] and [k for k, _ in old[1]] == [k for k, _ in new[1]]:
        changes = [c for (key, a), (_, b) in zip(old[1], new[1])
                   for c in diff_specs_structured(f"{name}[{key}]", a, b)]
        return changes + _cut_changed(name, old[3], new[3])
    aspect = "value" if old[0] == new[0] == "value" else "structure"
    return [Change(name, aspect, format_spec(old), format_spec(new))]


def _cut_changed(name: str, old_rest: int | None, new_rest: int | None) -> list[Change]:
    return [] if old_rest == new_rest else [Change(f"{name}[{_MAX_ITEMS}:]", "structure", None, None)]


def diff_signatures_structured(old: Signature, new: Signature) -> list[Change]:
    """What changed from `old` to `new`, in argument order (`_signature.diff_signatures`)."""
    changes = []
    for name, spec in new.items():
        if name not in old:
            changes.append(Change(name, "added", None, format_spec(spec)))
        else:
            changes.extend(diff_specs_structured(name, old[name], spec))
    changes.extend(Change(name, "removed", format_spec(old[name]), None)
                   for name in old if name not in new)
    return changes
