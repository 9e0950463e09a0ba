"""The signature of a call (argument specs, not tensors) and what changed between two.

A spec is a small hashable tuple built from public attributes only (`shape`,
`dtype`, Python values), so it never keeps a tensor alive:

- `("tensor", type_label, dtype, dims)` for anything with `shape` and `dtype`
  (`dims` is None for an unknown rank);
- `("seq", "list" | "tuple", children, length, rest)` and
  `("map", ((key, child), ...), length, rest)`;
- `("value", repr, rest)` for Python values and other objects.

Specs stay small: a long repr keeps its first characters, a long sequence or
mapping its first items. `rest` is then a fingerprint (a hash) of what was cut,
else None, so two calls that differ only past the cut still differ.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from traceguard._compat import tensor_spec_reader
from traceguard._compat._keras_names import DENSE_TENSOR_TYPES
from traceguard._core.changes import Aspect, Change

Spec = tuple
Signature = Mapping[str, Spec]

_MAX_REPR = 40
_MAX_ITEMS = 16
_MAX_TENSOR_TYPES = 64


def _value_spec(value: Any) -> Spec:
    text = repr(value)
    if len(text) <= _MAX_REPR:
        return ("value", text, None)
    return ("value", text[: _MAX_REPR - 3] + "...", hash(text))


def _dims(shape: Any) -> tuple[int | None, ...] | None:
    try:
        if hasattr(shape, "as_list"):  # A `tf.TensorShape`: ints and None already.
            return tuple(shape.as_list())
        dims = list(shape)
    except (TypeError, ValueError):  # Unknown rank.
        return None
    return tuple([dim if dim is None or type(dim) is int else _dim(dim) for dim in dims])


def _dim(dim: Any) -> int | None:
    if dim is None:
        return None
    try:
        return int(dim)
    except Exception:  # A symbolic dimension, such as Keras's `dynamic_dimension` on JAX.
        return None


def _dtype_name(dtype: Any) -> str:
    return str(getattr(dtype, "name", dtype))


# Tensor types seen so far: a type whose class has `shape` and `dtype` attributes is a
# tensor type for all its instances. Each maps to its spec's head, `("tensor", label)`,
# and the backend's reader of `(dtype name, dims)` for it (a graph tensor's public
# `shape` costs a dozen Python calls), or None to read `dtype` and `shape`.
_tensor_types: dict[type, tuple[Spec, Callable[[Any], tuple[str, Any]] | None]] = {}


def _tensor_label(type_: type) -> str:
    name = type_.__name__
    return "" if name in DENSE_TENSOR_TYPES or "Variable" in name else name


def spec_of(value: Any, _enclosing: tuple[int, ...] = ()) -> Spec:
    """The spec of one argument value."""
    known = _tensor_types.get(type(value))
    if known is None and not (value is None or isinstance(value, (bool, int, float, str, bytes))) \
            and hasattr(value, "shape") and hasattr(value, "dtype"):
        type_ = type(value)
        known = (("tensor", _tensor_label(type_)), tensor_spec_reader(type_))
        if hasattr(type_, "shape") and hasattr(type_, "dtype") and len(_tensor_types) < _MAX_TENSOR_TYPES:
            _tensor_types[type_] = known
    if known is not None:  # Tensors are the usual argument.
        head, read = known
        if read is not None:
            return head + read(value)
        return (*head, _dtype_name(value.dtype), _dims(value.shape))
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return _value_spec(value)
    is_sequence, is_mapping = isinstance(value, (list, tuple)), isinstance(value, Mapping)
    if (not is_sequence and not is_mapping) or id(value) in _enclosing:  # Or contains itself.
        return _value_spec(value)
    enclosing = (*_enclosing, id(value))
    if is_sequence:
        children = tuple(spec_of(item, enclosing) for item in value)
        kind = "list" if isinstance(value, list) else "tuple"
        return ("seq", kind, children[:_MAX_ITEMS], len(children), _fingerprint(children[_MAX_ITEMS:]))
    items = tuple((repr(key), spec_of(item, enclosing))
                  for key, item in sorted(value.items(), key=lambda item: repr(item[0])))
    return ("map", items[:_MAX_ITEMS], len(items), _fingerprint(items[_MAX_ITEMS:]))


def _fingerprint(cut: tuple) -> int | None:
    return hash(cut) if cut else None


def format_spec(spec: Spec) -> str:
    """`float32[60,28,28]`, `RaggedTensor int32[2,None]`, `[float32[2], None]`, `True`."""
    tag = spec[0]
    if tag == "tensor":
        _, label, dtype, dims = spec
        shape = "[?]" if dims is None else "[" + ",".join("None" if d is None else str(d) for d in dims) + "]"
        return f"{label + ' ' if label else ''}{dtype}{shape}"
    if tag == "seq":
        _, kind, children, length, _ = spec
        inner = ", ".join(format_spec(child) for child in children)
        if length > len(children):
            inner += f", ... {length} items"
        return f"[{inner}]" if kind == "list" else f"({inner}{',' if length == 1 else ''})"
    if tag == "map":
        _, items, length, _ = spec
        more = f", ... {length} items" if length > len(items) else ""
        return "{" + ", ".join(f"{key}: {format_spec(child)}" for key, child in items) + more + "}"
    return spec[1]


@functools.lru_cache(maxsize=1024)
def _parameters(function: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=1024)
def _named_layout(function: Callable[..., Any]) -> tuple[tuple[str, ...], tuple[str, ...], Any] | None:
    """For a `call` whose parameters after `self` are all named, none variadic: its names.

    The names in order, the positional ones in order, and the default of the
    `training` parameter (None if there is none); None for other signatures.
    """
    parameters = _parameters(function)
    if parameters is None or not parameters.parameters:
        return None
    first, *named = parameters.parameters.values()  # self, then the arguments
    if first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD) \
            or any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in named):
        return None
    training = next((p.default for p in named if p.name == "training"), None)
    return (tuple(p.name for p in named),
            tuple(p.name for p in named if p.kind is p.POSITIONAL_OR_KEYWORD), training)


def signature_of(function: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Spec]:
    """Binds a call of `function` (`args` without `self`) to its parameter names.

    Variadic positionals become `name[i]`, variadic keywords their own names;
    `training` is included with its default when `call` accepts it.
    """
    layout = _named_layout(function)
    if layout is not None:
        # The usual `call(self, inputs, training=None, mask=None)`, bound by hand: the
        # result of `_bound_signature` in a fraction of `bind_partial`'s time.
        names, positional, training = layout
        if not kwargs and len(args) == len(names) == 1:  # `call(self, inputs)` given a tensor.
            known = _tensor_types.get(type(args[0]))
            if known is not None and known[1] is not None:
                return {names[0]: known[0] + known[1](args[0])}
        if not kwargs and len(args) == len(positional) == len(names):  # All given by position.
            return {name: spec_of(value) for name, value in zip(names, args)}
        if len(args) <= len(positional) and all(
                name in names and name not in positional[:len(args)] for name in kwargs):
            given = dict(zip(positional, args))
            given.update(kwargs)
            result: dict[str, Spec] = {}
            for name in names:
                if name in given:
                    result[name] = spec_of(given[name])
                elif name == "training":
                    result[name] = spec_of(training)
            return result
    return _bound_signature(function, args, kwargs)


def _bound_signature(function: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Spec]:
    parameters = _parameters(function)
    bound = None
    if parameters is not None:
        try:
            bound = parameters.bind_partial(None, *args, **kwargs)
        except TypeError:
            bound = None
    if bound is None or parameters is None:  # The call itself will raise; name what we can.
        named = {f"arg{i}": value for i, value in enumerate(args)}
        named.update(kwargs)
        return {name: spec_of(value) for name, value in named.items()}
    result: dict[str, Spec] = {}
    names = iter(parameters.parameters.items())
    next(names)  # self
    for name, parameter in names:
        if name in bound.arguments:
            value = bound.arguments[name]
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                result.update((f"{name}[{i}]", spec_of(item)) for i, item in enumerate(value))
            elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
                result.update((key, spec_of(item)) for key, item in value.items())
            else:
                result[name] = spec_of(value)
        elif name == "training":
            result[name] = spec_of(parameter.default)
    return result


def format_signature(signature: Signature) -> dict[str, str]:
    return {name: format_spec(spec) for name, spec in signature.items()}


def diff_specs(name: str, old: Spec, new: Spec) -> list[Change]:
    """The differences between two specs of the argument `name`."""
    if old == new:
        return []
    if old[0] == new[0] == "tensor" and old[1] == new[1]:
        changes = []
        if old[2] != new[2]:
            changes.append(Change(name, Aspect.DTYPE, old[2], new[2]))
        old_dims, new_dims = old[3], new[3]
        if old_dims is None or new_dims is None or len(old_dims) != len(new_dims):
            if old_dims != new_dims:
                old_rank = "?" if old_dims is None else len(old_dims)
                new_rank = "?" if new_dims is None else len(new_dims)
                changes.append(Change(name, Aspect.RANK, old_rank, new_rank, text=(
                    f"{name}: rank {old_rank} -> {new_rank} ({format_spec(old)} -> {format_spec(new)})")))
        else:
            changes.extend(
                Change(name, Aspect.DIM, a, b, axis=axis)
                for axis, (a, b) in enumerate(zip(old_dims, new_dims))
                if a != b
            )
        return changes
    if old[0] == new[0] == "seq" and old[1] == new[1] and old[3] == new[3]:
        changes = [c for i, (a, b) in enumerate(zip(old[2], new[2]))
                   for c in diff_specs(f"{name}[{i}]", a, b)]
        return changes + _cut_changed(name, old[4], new[4])
    if old[0] == new[0] == "map" and old[2] == new[2] and [k for k, _ in old[1]] == [k for k, _ in new[1]]:
        changes = [c for (key, a), (_, b) in zip(old[1], new[1]) for c in diff_specs(f"{name}[{key}]", a, b)]
        return changes + _cut_changed(name, old[3], new[3])
    old_text, new_text = format_spec(old), format_spec(new)
    aspect = Aspect.VALUE if old[0] == new[0] == "value" else Aspect.STRUCTURE
    text = f"{name}: {old_text} -> {new_text}"
    if old_text == new_text:  # Values that differ past their shortened repr.
        text += " (they differ past the part shown)"
    return [Change(name, aspect, old_text, new_text, text=text)]


def _cut_changed(name: str, old_rest: int | None, new_rest: int | None) -> list[Change]:
    if old_rest == new_rest:
        return []
    return [Change(name, Aspect.ITEMS_PAST_CUT, old_rest, new_rest,
                   text=f"{name}[{_MAX_ITEMS}:]: the items past the first {_MAX_ITEMS} changed")]


def diff_signatures(old: Signature, new: Signature) -> list[Change]:
    """What changed from `old` to `new`, one `Change` per difference, in argument order."""
    changes = []
    for name, spec in new.items():
        if name not in old:
            changes.append(Change(name, Aspect.ADDED, None, format_spec(spec)))
        else:
            changes.extend(diff_specs(name, old[name], spec))
    changes.extend(Change(name, Aspect.REMOVED, format_spec(spec), None)
                   for name, spec in old.items() if name not in new)
    return changes
