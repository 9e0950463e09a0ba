"""One difference between two signatures, as a value code can branch on.

A `Change` names the argument (an `ArgumentPath`), the aspect that differs (a
dimension, the dtype, a Python value, ...) and the old and new values: a dimension,
a dtype name, a rank, or the specs themselves. `str(change)` is what reports show
(`"inputs: dim 0 60 -> 32"`); hints are chosen from the fields, never from the text.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from traceguard._core.specs import MAX_ITEMS, SPEC_TYPES, ArgumentPath, spec_from_json


class Aspect(str, enum.Enum):
    """What about an argument differs."""

    DIM = "dim"  # One dimension of a tensor; `axis` says which.
    RANK = "rank"  # A tensor's number of dimensions.
    DTYPE = "dtype"
    WEAK_TYPE = "weak_type"  # JAX: weakly typed (a Python scalar's type) or not, same dtype.
    VALUE = "value"  # A Python value compared by value (int, float, str, None, a static argument).
    IDENTITY = "identity"  # An object compared by identity: another object, however alike.
    STRUCTURE = "structure"  # Nesting, length, tensor-or-value, or a tensor type.
    ITEMS_PAST_CUT = "items_past_cut"  # Items past those a spec keeps.
    ADDED = "added"  # An argument given only now.
    REMOVED = "removed"  # An argument given only before.
    FUNCTION_OBJECT = "function_object"  # A new function object wrapping the same code.
    # A value of the context the backend keyed the trace by besides the arguments (JAX: a
    # `jax.config` option or a context manager such as `jax.default_matmul_precision`;
    # TensorFlow: a field of the call's function context); `argument` is its name.
    CONTEXT = "context"
    # JAX: an argument passed positionally at one call and by keyword at the other (`jax.jit`
    # keys the call's `(args, kwargs)`); old and new are "positional" or "keyword".
    CALL_STRUCTURE = "call_structure"
    # JAX: a pytree node's auxiliary data (a static field: `argument` ends in `.field`, or the
    # node's whole auxiliary data), keyed by `==`; old and new are its specs.
    STATIC_FIELD = "static_field"
    # JAX: an array's sharding, as texts: the one its abstract value carries (a mesh's axes and a
    # `PartitionSpec`, "unsharded" for none), which a trace is keyed by; or, for a compilation
    # without a trace, where it is placed ("uncommitted", "committed to cpu:0"), which a compiled
    # executable is keyed by.
    SHARDING = "sharding"
    # torch: a tensor property `torch.compile` guards besides size, rank and dtype
    # (torch/csrc/dynamo/guards.cpp): whether it requires grad (old and new are bools), one
    # stride (`axis` says which), the device it is on (old and new name it).
    REQUIRES_GRAD = "requires_grad"
    STRIDE = "stride"
    DEVICE = "device"
    # torch: an inference tensor (made under `torch.inference_mode()`, without autograd dispatch
    # keys) against a normal one, same device; old and new say which.
    INFERENCE = "inference"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference; `str(change)` is its report text.

    Attributes:
        argument: Where the difference is, an `ArgumentPath` (`str()` reads
            `"inputs"`, `"inputs[0]"`, `"features['ids']"`).
        aspect: The `Aspect` that differs.
        old: The value before: a dimension or a dtype name; for a rank, a
            Python value, a structure, an added or removed argument, the spec.
        new: The value now, of the same sort as `old`.
        axis: The dimension's axis for `Aspect.DIM`, else None.
    """

    argument: ArgumentPath
    aspect: Aspect
    old: Any = None
    new: Any = None
    axis: int | None = None

    @property
    def parameter(self) -> str:
        """The argument's name in the signature, without an index or key into it."""
        return self.argument.parameter

    def __str__(self) -> str:
        return change_text(self)

    def __repr__(self) -> str:
        return f"Change({str(self)!r})"

    def to_json(self) -> dict[str, Any]:
        """The change as JSON, with its report text as `text` for readers that only show it."""
        return {"argument": self.argument.to_json(), "aspect": self.aspect.value, "old": _part_json(self.old),
                "new": _part_json(self.new), "axis": self.axis, "text": str(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        return cls(ArgumentPath.from_json(data["argument"]), Aspect(data["aspect"]),
                   _part_from_json(data["old"]), _part_from_json(data["new"]), data["axis"])


def _part_json(value: Any) -> Any:
    # A change's old or new value: a spec (a Python value, a structure), or a plain number or name.
    return value.to_json() if type(value) in SPEC_TYPES else value


def _part_from_json(value: Any) -> Any:
    return spec_from_json(value) if isinstance(value, dict) and "spec" in value else value


_TEXTS = {
    Aspect.DIM: "{argument}: dim {axis} {old} -> {new}",
    Aspect.DTYPE: "{argument}: dtype {old} -> {new}",
    Aspect.ADDED: "{argument}: added ({new})",
    Aspect.REMOVED: "{argument}: removed",
    Aspect.CONTEXT: "{argument}: {old} -> {new} (tracing context)",
    Aspect.SHARDING: "{argument}: sharding {old} -> {new}",
    Aspect.REQUIRES_GRAD: "{argument}: requires_grad {old} -> {new}",
    Aspect.STRIDE: "{argument}: stride {axis} {old} -> {new}",
    Aspect.DEVICE: "{argument}: device {old} -> {new}",
    Aspect.INFERENCE: "{argument}: {old} -> {new}",
}


def change_text(change: Change) -> str:
    """The report text of one change, e.g. `"inputs: dim 0 60 -> 32"`."""
    argument, aspect, old, new = str(change.argument), change.aspect, change.old, change.new
    text = _TEXTS.get(aspect)
    if text is not None:
        return text.format(argument=argument, axis=change.axis, old=old, new=new)
    keyed = _pytree_text(change, argument)
    if keyed is not None:
        return keyed
    if aspect is Aspect.RANK:
        return f"{argument}: rank {_rank(old)} -> {_rank(new)} ({old} -> {new})"
    if aspect is Aspect.ITEMS_PAST_CUT:
        return f"{argument}[{MAX_ITEMS}:]: the items past the first {MAX_ITEMS} changed"
    if aspect is Aspect.IDENTITY:
        if str(old) == str(new):
            return f"{argument}: a different {new} (compared by identity)"
        return f"{argument}: {old} -> {new} (compared by identity)"
    if aspect is Aspect.FUNCTION_OBJECT:
        if old is None:  # A layer saw it: the objects' numbers are the function's records'.
            return f"{argument}: new object, same Python function"
        return f"{argument}: function object #{old} -> #{new} (a new function object from the same code)"
    old_text, new_text = str(old), str(new)
    if old_text == new_text:  # Values that differ past their shortened repr.
        return f"{argument}: {old_text} -> {new_text} (they differ past the part shown)"
    return f"{argument}: {old_text} -> {new_text}"


def _pytree_text(change: Change, argument: str) -> str | None:
    """The text of what JAX keys in a call's pytree: how an argument was passed, a node's static
    field or auxiliary data, a node's type; None for another change."""
    aspect, old, new = change.aspect, change.old, change.new
    if aspect is Aspect.CALL_STRUCTURE:
        words = {"keyword": "by keyword", "positional": "positionally"}
        return f"{argument}: passed {words.get(old, old)} -> {words.get(new, new)}"
    if aspect is Aspect.STATIC_FIELD:
        field = change.argument.keys[-1] if change.argument.keys else None
        if isinstance(field, str) and field.startswith("."):
            return f"{argument}: static field {old} -> {new}"
        return f"{argument}: pytree auxiliary data {old} -> {new}"
    if aspect is Aspect.STRUCTURE and _node_type(old) != _node_type(new) \
            and "NodeSpec" in (type(old).__name__, type(new).__name__):
        return f"{argument}: pytree node {_node_type(old)} -> {_node_type(new)} ({old} -> {new})"
    return None


def _node_type(spec: Any) -> str:
    """The pytree node type of a spec, as JAX names it: `Cfg`, `tuple`, `dict`, a leaf."""
    name = type(spec).__name__
    if name == "NodeSpec":
        return str(spec.type_name)
    return {"SequenceSpec": getattr(spec, "kind", ""), "MappingSpec": "dict"}.get(name, "leaf")


def _rank(spec: Any) -> str:
    rank = getattr(spec, "rank", None)
    return "?" if rank is None else str(rank)


__all__ = ["Aspect", "Change", "change_text"]
