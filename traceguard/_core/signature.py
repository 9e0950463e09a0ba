"""A call's signature (argument specs by name) and what changed between two signatures.

Pure rules over `_core.specs` values: the specs themselves are read from live
values by `_compat` (`_compat.signature_of`, `_compat.spec_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Aspect, Change
from traceguard._core.specs import (
    ArgumentPath,
    MappingSpec,
    NodeSpec,
    ObjectSpec,
    SequenceSpec,
    Spec,
    TensorSpec,
    ValueSpec,
)

# Argument specs by parameter name; an item of a `*args` parameter by its `ArgumentPath`.
Signature = Mapping[Any, Spec]


def diff_specs(path: ArgumentPath, old: Spec, new: Spec, accepts_unknown: bool = False) -> list[Change]:
    """The differences between two specs of the argument at `path`.

    With `accepts_unknown`, an unknown rank or dimension of `old` holds any value of `new`
    (TensorFlow's `TraceType.is_subtype_of`: a concrete function traced for `float32[None]`
    serves every length), so it is no difference.
    """
    if old == new:
        return []
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec) and old.type_name == new.type_name:
        return _tensor_changes(path, old, new, accepts_unknown)
    if isinstance(old, SequenceSpec) and isinstance(new, SequenceSpec) and old.kind == new.kind \
            and old.length == new.length:
        changes = [change for index, (a, b) in enumerate(zip(old.items, new.items))
                   for change in diff_specs(path.child(index), a, b, accepts_unknown)]
        return changes + _cut_changed(path, old, new)
    if isinstance(old, MappingSpec) and isinstance(new, MappingSpec) and old.rest is new.rest is None:
        return _mapping_changes(path, old, new, accepts_unknown)
    if isinstance(old, MappingSpec) and isinstance(new, MappingSpec) and old.length == new.length \
            and [key for key, _ in old.items] == [key for key, _ in new.items]:
        changes = [change for (key, a), (_, b) in zip(old.items, new.items)
                   for change in diff_specs(path.child(key), a, b, accepts_unknown)]
        return changes + _cut_changed(path, old, new)
    if isinstance(old, NodeSpec) and isinstance(new, NodeSpec) and old.type_name == new.type_name \
            and [key for key, _ in old.children] == [key for key, _ in new.children] \
            and [key for key, _ in old.static] == [key for key, _ in new.static]:
        return _node_changes(path, old, new, accepts_unknown)
    if isinstance(old, ObjectSpec) and isinstance(new, ObjectSpec):
        return [Change(path, Aspect.IDENTITY, old, new)]
    aspect = Aspect.VALUE if isinstance(old, ValueSpec) and isinstance(new, ValueSpec) else Aspect.STRUCTURE
    return [Change(path, aspect, old, new)]


def _mapping_changes(path: ArgumentPath, old: MappingSpec, new: MappingSpec,
                     accepts_unknown: bool) -> list[Change]:
    """A mapping's changes key by key: each key added or removed, each kept key's own changes
    (JAX and TensorFlow key a dict by its keys and each value)."""
    before, now = dict(old.items), dict(new.items)
    changes = []
    for key, spec in new.items:
        if key in before:
            changes.extend(diff_specs(path.child(key), before[key], spec, accepts_unknown))
        else:
            changes.append(Change(path.child(key), Aspect.ADDED, None, spec))
    changes.extend(Change(path.child(key), Aspect.REMOVED, spec, None) for key, spec in old.items
                   if key not in now)
    return changes


def _node_changes(path: ArgumentPath, old: NodeSpec, new: NodeSpec, accepts_unknown: bool) -> list[Change]:
    """A pytree node's changes of one type and fields: each static field JAX compares with `==`,
    then each child's."""
    changes = [Change(path.child(key) if key else path, Aspect.STATIC_FIELD, a, b)
               for (key, a), (_, b) in zip(old.static, new.static) if a != b]
    changes += [change for (key, a), (_, b) in zip(old.children, new.children)
                for change in diff_specs(path.child(key), a, b, accepts_unknown)]
    if old.rest != new.rest:
        changes.append(Change(path, Aspect.ITEMS_PAST_CUT, old.rest, new.rest))
    return changes


def diff_passing(old_keywords: tuple[str, ...] | None, new_keywords: tuple[str, ...] | None,
                 old: Signature, new: Signature) -> list[Change]:
    """The arguments of both signatures passed by keyword at one call and positionally at the
    other (JAX keys a call's `(args, kwargs)`: `f(1, 2)` and `f(1, y=2)` are two keys); nothing
    when either call's keywords were not read."""
    if old_keywords is None or new_keywords is None or old_keywords == new_keywords:
        return []
    changes = []
    for name in new:
        if name in old and isinstance(name, str) and (name in old_keywords) != (name in new_keywords):
            before, now = ("keyword", "positional") if name in old_keywords else ("positional", "keyword")
            changes.append(Change(ArgumentPath(name), Aspect.CALL_STRUCTURE, before, now))
    return changes


def diff_placements(old: Mapping[Any, str] | None, new: Mapping[Any, str] | None) -> list[Change]:
    """The arguments whose arrays are placed otherwise (JAX: committed to a device or sharding, or
    not), which a compiled executable is keyed by; nothing when either call's was not read."""
    if old is None or new is None:
        return []
    return [Change(argument_path(name), Aspect.SHARDING, old[name], place)
            for name, place in new.items() if name in old and old[name] != place]


def _tensor_changes(path: ArgumentPath, old: TensorSpec, new: TensorSpec,
                    accepts_unknown: bool) -> list[Change]:
    changes = []
    if old.dtype != new.dtype:
        changes.append(Change(path, Aspect.DTYPE, old.dtype, new.dtype))
    elif old.weak_type != new.weak_type:  # JAX: a Python scalar's weak type, or a typed value.
        changes.append(Change(path, Aspect.WEAK_TYPE, old, new))
    if old.sharding != new.sharding:  # JAX: an abstract value's mesh and partitioning.
        changes.append(Change(path, Aspect.SHARDING, old.sharding or "unsharded",
                              new.sharding or "unsharded"))
    old_dims, new_dims = old.dims, new.dims
    if accepts_unknown and old_dims is None:
        return changes
    if old_dims is None or new_dims is None or len(old_dims) != len(new_dims):
        if old_dims != new_dims:
            changes.append(Change(path, Aspect.RANK, old, new))
    else:
        changes.extend(Change(path, Aspect.DIM, a, b, axis=axis)
                       for axis, (a, b) in enumerate(zip(old_dims, new_dims))
                       if a != b and not (accepts_unknown and a is None))
    return changes


def _cut_changed(path: ArgumentPath, old: SequenceSpec | MappingSpec,
                 new: SequenceSpec | MappingSpec) -> list[Change]:
    if old.rest == new.rest:
        return []
    return [Change(path, Aspect.ITEMS_PAST_CUT, old.rest, new.rest)]


def diff_signatures(old: Signature, new: Signature, accepts_unknown: bool = False) -> list[Change]:
    """What changed from `old` to `new`, one `Change` per difference, in argument order;
    `accepts_unknown` as in `diff_specs`."""
    changes = []
    for name, spec in new.items():
        if name not in old:
            changes.append(Change(argument_path(name), Aspect.ADDED, None, spec))
        else:
            changes.extend(diff_specs(argument_path(name), old[name], spec, accepts_unknown))
    changes.extend(Change(argument_path(name), Aspect.REMOVED, spec, None)
                   for name, spec in old.items() if name not in new)
    return changes


def diff_contexts(earlier: tuple[tuple[tuple[str, Any], ...], ...],
                  new: tuple[tuple[str, Any], ...] | None) -> list[Change]:
    """What differs between a trace's tracing context (JAX: `(name, value)` pairs) and the closest of
    `earlier`, the contexts of its closest signature (the fewest values differing, as JAX's own
    explanation picks); nothing when `new` was not read or one of `earlier` is the same."""
    if new is None or not earlier or any(_same(old, new) for old in earlier):
        return []
    return min((_context_diff(old, new) for old in reversed(earlier)), key=len)


def add_context(contexts: tuple[tuple[tuple[str, Any], ...], ...], context: tuple[tuple[str, Any], ...],
                limit: int) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """`contexts` with `context` last (moved there if one of them is the same), the oldest
    dropped past `limit`."""
    return (*(old for old in contexts if not _same(old, context)), context)[-limit:]


def _context_diff(old: tuple[tuple[str, Any], ...], new: tuple[tuple[str, Any], ...]) -> list[Change]:
    if len(old) != len(new):  # Not the same JAX: unnamed.
        return [Change(ArgumentPath("tracing context"), Aspect.CONTEXT, f"{len(old)} values",
                       f"{len(new)} values")]
    changes = []
    for (name, before), (_, now) in zip(old, new):
        if not _same(before, now):
            changes.append(Change(ArgumentPath(name), Aspect.CONTEXT, _short(before), _short(now)))
    return changes


def _same(old: Any, new: Any) -> bool:
    """`==`, as JAX compares its cache keys; an `==` that raises is a difference."""
    try:
        return bool(old == new)
    except Exception:
        return False


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def argument_path(name: str | ArgumentPath) -> ArgumentPath:
    """The path of a signature's argument: a parameter's name, or an item of `*args` (already
    an `ArgumentPath`)."""
    return name if isinstance(name, ArgumentPath) else ArgumentPath(name)


__all__ = ["Signature", "add_context", "argument_path", "diff_contexts", "diff_passing", "diff_placements",
           "diff_signatures", "diff_specs"]
