"""A `tf.function` call's cache key, read as TensorFlow compares it: each argument's `TraceType`.

`tf.function` looks its cache up with the call's `FunctionType`, whose parameters
each carry a `TraceType` (tensorflow/core/function/trace_type/trace_type_builder.py,
`from_value`): a tensor by its `TensorSpec` (a `RaggedTensor`, a `SparseTensor` by
their specs, which keep the static shape), a Python value that cannot be weakly
referenced (numbers, strings, None, tuples of them) by value (`Literal`), any object
that can (a function, a bound method, a model, `self`) by identity (`Weakref`), a
list, tuple, named tuple, attrs class or mapping by its items, and a type of the
user's by its own `__tf_tracing_type__`. Here each becomes a `_core.specs` value,
so what differs between two keys is what TensorFlow compared. The classes and
attributes read are TensorFlow's (default_types.py, TF 2.12 to 2.21), checked below.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/data/ops/iterator_ops.py
"""

from __future__ import annotations

import inspect
from typing import Any

from tensorflow.core.function.trace_type import default_types as _default_types
from tensorflow.python.data.ops import iterator_ops as _iterator_ops

from traceguard._compat._flavors import internal_missing
from traceguard._compat._objects import object_spec
from traceguard._core.specs import (
    ArgumentPath,
    SequenceSpec,
    Spec,
    TensorSpec,
    mapping_spec,
    sequence_spec,
    value_spec,
)

# Each class, with the instance attributes its `__init__` sets that are read here.
_READ = {"Literal": ("value",), "Weakref": ("_ref",), "Tuple": ("components",),
         "List": ("components_tuple",), "NamedTuple": ("type_name", "attribute_names", "attributes"),
         "Attrs": ("named_attributes",), "Dict": ("mapping",)}
for _name, _attributes in _READ.items():
    _class = getattr(_default_types, _name, None)
    _init = vars(_class).get("__init__") if isinstance(_class, type) else None
    if _init is None or not set(_attributes) <= set(_init.__code__.co_names):
        raise internal_missing(f"tensorflow.core.function.trace_type.default_types.{_name} "
                               f"setting {', '.join(_attributes)}")
_Literal, _Weakref, _Tuple, _List = (_default_types.Literal, _default_types.Weakref, _default_types.Tuple,
                                     _default_types.List)
_NamedTuple, _Attrs, _Dict = _default_types.NamedTuple, _default_types.Attrs, _default_types.Dict
# A `tf.data` iterator's trace type keeps its elements' specs as `_element_spec` (iterator_ops.py);
# a dataset's, as the public `element_spec`.
if "_element_spec" not in _iterator_ops.IteratorSpec.__init__.__code__.co_names:
    raise internal_missing("tensorflow.python.data.ops.iterator_ops.IteratorSpec._element_spec")

def function_type_signature(function_type: Any, python_function: Any = None) -> dict[Any, Spec] | None:
    """The specs of a `FunctionType`'s parameters, by name; None when it cannot be read.

    TensorFlow names the items of `*args` `args_0`, `args_1`, ...: given the Python
    function, they become the `ArgumentPath`s `args[0]`, `args[1]`, as
    `_compat.signature_of` names them.
    """
    parameters = getattr(function_type, "parameters", None)
    if parameters is None:
        return None
    variadic = _variadic_name(python_function)
    signature: dict[Any, Spec] = {}
    for name, parameter in parameters.items():
        base, _, index = name.rpartition("_")
        key = ArgumentPath(base, (int(index),)) if variadic and base == variadic and index.isdigit() else name
        signature[key] = trace_type_spec(parameter.type_constraint)
    return signature


def _variadic_name(python_function: Any) -> str | None:
    if python_function is None:
        return None
    try:
        parameters = inspect.signature(python_function).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL), None)


def trace_type_spec(trace_type: Any) -> Spec:
    """The spec of one `TraceType` (or of the Python structure of specs a `tf.data` element has)."""
    if isinstance(trace_type, _Literal):
        return value_spec(trace_type.value)
    if isinstance(trace_type, _Weakref):
        return object_spec(trace_type._ref())
    container = _container(trace_type)
    if container is not None:
        return container
    element_spec = getattr(trace_type, "element_spec", None)
    if element_spec is None and isinstance(trace_type, _iterator_ops.IteratorSpec):
        element_spec = trace_type._element_spec
    if element_spec is not None:  # A `tf.data` iterator or dataset: keyed by its elements' specs.
        return trace_type_spec(element_spec)
    shape, dtype = getattr(trace_type, "shape", None), getattr(trace_type, "dtype", None)
    if shape is not None and dtype is not None:  # `tf.TensorSpec` and the composite tensors' specs.
        name = type(trace_type).__name__
        # A variable is keyed apart from a tensor of its shape (its resource handle): labelled.
        label = "" if name == "TensorSpec" else name.removesuffix("Spec")
        try:
            dims = tuple(shape.as_list())
        except ValueError:  # Unknown rank.
            dims = None
        return TensorSpec(getattr(dtype, "name", str(dtype)), dims, label)
    return value_spec(trace_type)  # A `__tf_tracing_type__` of the user's: compared as itself.


def _container(trace_type: Any) -> Spec | None:
    """The spec of a sequence, named tuple, attrs class or mapping, as a `TraceType` or as Python."""
    if isinstance(trace_type, _Tuple):
        return _sequence("tuple", trace_type.components)
    if isinstance(trace_type, _List):
        return _sequence("list", trace_type.components_tuple.components)
    if isinstance(trace_type, _NamedTuple):
        return _sequence(trace_type.type_name, trace_type.attributes.components)
    if isinstance(trace_type, _Attrs):
        named = trace_type.named_attributes
        return _sequence(named.type_name, named.attributes.components)
    if isinstance(trace_type, (tuple, list)):  # Inside an iterator's or dataset's element spec.
        return _sequence("list" if isinstance(trace_type, list) else "tuple", trace_type)
    items = trace_type.mapping if isinstance(trace_type, _Dict) else trace_type \
        if isinstance(trace_type, dict) else None
    if items is not None:
        return mapping_spec(tuple((repr(key), trace_type_spec(item)) for key, item in items.items()))
    return None


def _sequence(kind: str, components: Any) -> SequenceSpec:
    return sequence_spec(kind, tuple(trace_type_spec(item) for item in components))


__all__ = ["function_type_signature", "trace_type_spec"]
