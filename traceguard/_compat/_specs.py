"""Specs read from live values: what a call's arguments are, without keeping them alive.

`spec_of` reads one value into a `_core.specs` value from public attributes only
(`shape`, `dtype`, Python values): a tensor or array by its dtype and dimensions
(a graph tensor's and a KerasTensor's through the backend's reader, a dozen Python
calls cheaper than the public `shape`), a list, tuple or mapping by its items, and
anything else by its repr. `signature_of` binds a layer's `call` arguments to its
parameter names. Both run on every traced layer run, so they stay lean.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from traceguard._compat._backend import IS_JAX, IS_TORCH
from traceguard._core.keras_names import DENSE_TENSOR_TYPES
from traceguard._core.specs import (
    MAX_REPR,
    ArgumentPath,
    Spec,
    TensorSpec,
    ValueSpec,
    mapping_spec,
    sequence_spec,
    value_spec,
)

if IS_JAX:
    from traceguard._compat.jax.backend import tensor_spec_reader
elif IS_TORCH:
    from traceguard._compat._flavors import keras_tensor_spec_reader as tensor_spec_reader
else:
    from traceguard._compat.tensorflow.backend import tensor_spec_reader

_MAX_TENSOR_TYPES = 64
_new_tuple = tuple.__new__  # A `TensorSpec` made in C: `TensorSpec(...)` is a Python call.


def _value_spec(value: Any) -> ValueSpec:
    text = repr(value)
    if len(text) <= MAX_REPR:
        return _new_tuple(ValueSpec, (text, None, False))  # Most values: short, made in C.
    return value_spec(value)


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
# tensor type for all its instances. Each maps to its spec's type label and the
# backend's reader of `(dtype name, dims)` for it, or None to read `dtype` and `shape`.
_tensor_types: dict[type, tuple[str, Callable[[Any], tuple[str, Any]] | None]] = {}


def _tensor_label(type_: type) -> str:
    name = type_.__name__
    return "" if name in DENSE_TENSOR_TYPES or "Variable" in name else name


def spec_of(value: Any, _enclosing: tuple[int, ...] = ()) -> Spec:
    """The spec of one argument value."""
    known = _tensor_types.get(type(value))
    if known is None and not (value is None or isinstance(value, (bool, int, float, str, bytes))) \
            and hasattr(value, "shape") and hasattr(value, "dtype"):
        type_ = type(value)
        known = (_tensor_label(type_), tensor_spec_reader(type_))
        if hasattr(type_, "shape") and hasattr(type_, "dtype") and len(_tensor_types) < _MAX_TENSOR_TYPES:
            _tensor_types[type_] = known
    if known is not None:  # Tensors are the usual argument.
        label, read = known
        if read is not None:
            return _new_tuple(TensorSpec, (*read(value), label, False, ""))
        return _new_tuple(TensorSpec, (_dtype_name(value.dtype), _dims(value.shape), label, False, ""))
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return _value_spec(value)
    is_sequence, is_mapping = isinstance(value, (list, tuple)), isinstance(value, Mapping)
    if (not is_sequence and not is_mapping) or id(value) in _enclosing:  # Or contains itself.
        return _value_spec(value)
    enclosing = (*_enclosing, id(value))
    if is_sequence:
        items = tuple(spec_of(item, enclosing) for item in value)
        return sequence_spec("list" if isinstance(value, list) else "tuple", items)
    return mapping_spec(tuple((repr(key), spec_of(item, enclosing)) for key, item in value.items()))


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


def signature_of(function: Callable[..., Any], args: tuple, kwargs: dict) -> dict[Any, Spec]:
    """Binds a call of `function` (`args` without `self`) to its parameter names.

    Variadic positionals are keyed by their `ArgumentPath` (`str()`: `name[i]`),
    variadic keywords by their own names;
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
                return {names[0]: _new_tuple(TensorSpec, (*known[1](args[0]), known[0], False, ""))}
        if not kwargs and len(args) == len(positional) == len(names):  # All given by position.
            return {name: spec_of(value) for name, value in zip(names, args)}
        if len(args) <= len(positional) and all(
                name in names and name not in positional[:len(args)] for name in kwargs):
            given = dict(zip(positional, args))
            given.update(kwargs)
            result: dict[Any, Spec] = {}
            for name in names:
                if name in given:
                    result[name] = spec_of(given[name])
                elif name == "training":
                    result[name] = spec_of(training)
            return result
    return _bound_signature(function, args, kwargs)


def _bound_signature(function: Callable[..., Any], args: tuple, kwargs: dict) -> dict[Any, Spec]:
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
    result: dict[Any, Spec] = {}
    names = iter(parameters.parameters.items())
    next(names)  # self
    for name, parameter in names:
        if name in bound.arguments:
            value = bound.arguments[name]
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                result.update((ArgumentPath(name, (i,)), spec_of(item)) for i, item in enumerate(value))
            elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
                result.update((key, spec_of(item)) for key, item in value.items())
            else:
                result[name] = spec_of(value)
        elif name == "training":
            result[name] = spec_of(parameter.default)
    return result


__all__ = ["signature_of", "spec_of"]
