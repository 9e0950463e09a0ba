"""A `jax.jit` call's tracing-cache key, read as JAX compares it.

`jax.jit` traces a function once per key (jax/_src/pjit.py, `_infer_params`, and
the cache of `partial_eval.trace_to_jaxpr`): the pytree structure of the call's
`(args, kwargs)` (so an argument passed by keyword is keyed apart from the same
argument passed positionally), each pytree node's type and auxiliary data (a
registered dataclass's static fields, compared with `==`), each array argument's
abstract value (shape, dtype and whether it is *weakly typed*: a Python scalar is
traced as a weakly typed array, jax/_src/dtypes.py), and each static argument
(`static_argnums`/`static_argnames`) by its hash and `==`: by value for a type
that defines `__eq__`, by identity otherwise. Here each argument becomes a
`_core.specs` value, read with public JAX API (`jax.api_util.shaped_abstractify`,
`jax.tree_util`: key paths and `PyTreeDef.node_data()`), and the names passed by
keyword a sorted tuple. Only traces read it: it costs nothing on a cache hit.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/config.py
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from jax import api_util as _api_util
from jax import core as _core
from jax import tree_util as _tree_util

from traceguard._compat._objects import object_spec
from traceguard._core.specs import (
    ArgumentPath,
    Spec,
    TensorSpec,
    ValueSpec,
    mapping_spec,
    node_spec,
    sequence_spec,
    value_spec,
)

try:  # JAX's tracing context (`tracing_context`); None where a release moved it.
    from jax._src import config as _config
except ImportError:  # pragma: no cover (tests/compat/jax/test_jax_compat.py checks it is there)
    _config = None


_MISSING = object()


def keywords_of(kwargs: dict) -> tuple[str, ...]:
    """The names a call passed by keyword, sorted: `jax.jit` keys a call's `(args, kwargs)`
    pytree, so `f(1, 2)`, `f(1, y=2)` and `f(x=1, y=2)` are three keys (jax/_src/pjit.py,
    `_infer_params`; its explanation names "the lengths do not match" at `[0]`)."""
    return tuple(sorted(kwargs))


def jit_signature(signature: inspect.Signature | None, args: tuple, kwargs: dict,
                  static_argnums: tuple[int, ...], static_argnames: tuple[str, ...]) -> dict[Any, Spec]:
    """The specs of a call's arguments by parameter name, static ones as JAX keys them.

    `signature` is the jitted function's (`None`: the arguments are named `arg0`,
    `arg1`, ... and keywords by their names).
    """
    static_positions, static_names = set(static_argnums), set(static_argnames)
    named: list[tuple[str, Any, bool]] = []
    bound = None
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            bound = None
    if bound is None:
        named = [(f"arg{i}", value, i in static_positions) for i, value in enumerate(args)]
        named += [(name, value, name in static_names) for name, value in kwargs.items()]
    else:
        position = 0
        for name, value in bound.arguments.items():
            kind = bound.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                for item in value:
                    named.append((ArgumentPath(name, (position - _first_variadic(bound),)), item,  # type: ignore[arg-type]
                                  position in static_positions))
                    position += 1
            elif kind is inspect.Parameter.VAR_KEYWORD:
                named += [(key, item, key in static_names) for key, item in value.items()]
            else:
                is_positional = name in _positional_names(bound) and position < len(args)
                static = name in static_names or (is_positional and position in static_positions)
                named.append((name, value, static))
                if is_positional:
                    position += 1
    return {name: static_spec(value) if static else array_spec(value) for name, value, static in named}


def _positional_names(bound: inspect.BoundArguments) -> tuple[str, ...]:
    return tuple(name for name, parameter in bound.signature.parameters.items()
                 if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD))


def _first_variadic(bound: inspect.BoundArguments) -> int:
    return len(_positional_names(bound))


def tracing_context() -> tuple[tuple[str, Any], ...]:
    """The tracing context `jax.jit` keys each trace by, before the arguments: the values of the
    `jax.config` options and context managers that change tracing (`jax_enable_x64`,
    `jax_default_matmul_precision`, the mesh, ...), by name (jax/_src/config.py; JAX's own cache-miss
    explanation names them so, `partial_eval.diff_tracing_ctx`). Unnamed on a jaxlib without
    `trace_context_names`."""
    if _config is None:
        return ()
    values = _config.trace_context()
    try:
        names = tuple(_config.trace_context_names())
    except NotImplementedError:
        names = ()
    if len(names) != len(values):
        names = tuple(f"tracing context value {index}" for index in range(len(values)))
    return tuple(zip(names, values))


def static_spec(value: Any) -> Spec:
    """A static argument: by value when its type defines `==` (JAX keys it by hash and `==`), else
    by identity (the default `==` of `object`)."""
    if type(value).__eq__ is object.__eq__:
        return object_spec(value, static=True)
    try:
        fingerprint: int | None = hash(value)
    except TypeError:  # JAX raises for an unhashable static argument; the call fails anyway.
        fingerprint = None
    return value_spec(value, static=True, fingerprint=fingerprint)


def array_spec(value: Any) -> Spec:
    """A traced argument: a pytree of arrays, each by its abstract value."""
    if value is None:  # An empty pytree node.
        return ValueSpec("None")
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return sequence_spec("list" if isinstance(value, list) else "tuple",
                             tuple(array_spec(item) for item in value))
    if isinstance(value, Mapping):
        return mapping_spec(tuple((repr(key), array_spec(item)) for key, item in value.items()))
    try:
        aval = _api_util.shaped_abstractify(value)
    except TypeError:
        aval = None
    if aval is not None:
        return TensorSpec(str(aval.dtype), tuple(_dim(d) for d in aval.shape), "", bool(aval.weak_type),
                          _sharding(aval))
    return _node_spec(value)


def _node_spec(value: Any) -> Spec:
    """A pytree node of another type (a named tuple, a registered dataclass): its type, its
    children by key, and its auxiliary data, which JAX compares with `==`
    (`PyTreeDef.node_data()`, jaxlib's pytree.cc; `tree_util._equality_errors` words a
    difference of it as "the pytree node metadata does not match")."""
    def is_child(node: Any) -> bool:
        return node is not value

    children = _tree_util.tree_flatten_with_path(value, is_leaf=is_child)[0]
    if len(children) == 1 and children[0][1] is value:  # A leaf JAX cannot trace: the call raises.
        return value_spec(value)
    keyed = tuple((_child_key(path[0]), array_spec(child)) for path, child in children)
    node_data = _tree_util.tree_structure(value, is_leaf=is_child).node_data()
    aux = None if node_data is None else node_data[1]
    return node_spec(type(value).__name__, keyed, () if aux is None else _static_fields(value, aux, keyed))


def _child_key(key: Any) -> int | str:
    """A child's `ArgumentPath` key: `.name` for a field, its index, or a mapping key's repr."""
    if isinstance(key, _tree_util.GetAttrKey):
        return f".{key.name}"
    if isinstance(key, _tree_util.SequenceKey):
        return key.idx
    if isinstance(key, _tree_util.FlattenedIndexKey):
        return key.key
    if isinstance(key, _tree_util.DictKey):
        return repr(key.key)
    return str(key)


def _static_fields(value: Any, aux: Any, children: tuple) -> tuple[tuple[str, Spec], ...]:
    """The auxiliary data by field: a dataclass's fields that are no child, each holding one item
    of a tuple `aux` (`register_dataclass`'s `meta_fields`, flax's `pytree_node=False`); else
    the whole auxiliary data, unnamed."""
    if dataclasses.is_dataclass(value) and isinstance(aux, tuple):
        child_names = {key[1:] for key, _ in children if isinstance(key, str) and key.startswith(".")}
        remaining = [field.name for field in dataclasses.fields(value) if field.name not in child_names]
        named = []
        for item in aux:
            owners = [name for name in remaining if getattr(value, name, _MISSING) is item]
            if len(owners) != 1:
                break
            remaining.remove(owners[0])
            named.append((f".{owners[0]}", static_spec(item)))
        else:
            return tuple(named)
    return (("", static_spec(aux)),)


def placements(arguments: Mapping[Any, Any] | None) -> dict[Any, str] | None:
    """Where each argument's arrays are placed, which a compiled executable is keyed by and a trace
    is not (jax/_src/pjit.py: an uncommitted array follows the computation; a committed one,
    `jax.device_put` to a device or any array with a sharding, fixes the executable's input
    sharding; `jax.Array.committed`, `.sharding`): `"uncommitted"`, `"committed to cpu:0"`,
    one text per argument (per leaf when its leaves differ). None when not read."""
    if arguments is None:
        return None
    found: dict[Any, str] = {}
    for name, value in arguments.items():
        leaves = [text for text in map(_placement, _tree_util.tree_leaves(value)) if text is not None]
        if leaves:
            found[name] = leaves[0] if len(set(leaves)) == 1 else ", ".join(leaves[:MAX_LEAVES])
    return found


MAX_LEAVES = 8  # Leaves whose placement an argument's text lists when they differ.


def _placement(leaf: Any) -> str | None:
    if isinstance(leaf, _core.Tracer):  # Traced inside another trace: no executable of its own.
        return None
    committed = getattr(leaf, "committed", None)
    if committed is None:  # A NumPy array or Python scalar: placed as an uncommitted array.
        return "uncommitted" if hasattr(leaf, "shape") or isinstance(leaf, (int, float, complex)) else None
    if not committed:
        return "uncommitted"
    sharding = leaf.sharding
    devices = sorted(sharding.device_set, key=lambda device: device.id)
    if len(devices) == 1:
        return f"committed to {devices[0].platform}:{devices[0].id}"
    spec = getattr(sharding, "spec", None)
    return f"committed to {type(sharding).__name__}{'' if spec is None else f' {spec}'} " \
           f"over {len(devices)} devices"


def _sharding(aval: Any) -> str:
    """The sharding an abstract value carries, which JAX keys a trace by (`ShapedArray.sharding`: a
    `NamedSharding` over an `AbstractMesh`, empty for an array on one device; JAX's explanation
    shows it as `f32[4@i]({Explicit: ('i',)})`): `"P('i',) over i=2 (Explicit)"`, or `""`."""
    sharding = getattr(aval, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or getattr(mesh, "empty", True):
        return ""
    axes = ", ".join(f"{name}={size}" for name, size in zip(mesh.axis_names, mesh.axis_sizes))
    types = ", ".join(getattr(kind, "name", str(kind)) for kind in mesh.axis_types)
    memory_kind = getattr(sharding, "memory_kind", None)
    memory = f" in {memory_kind}" if memory_kind else ""
    return f"{getattr(sharding, 'spec', None)} over {axes} ({types}){memory}"


def _dim(dim: Any) -> int | None:
    try:
        return int(dim)
    except Exception:  # A symbolic dimension (shape polymorphism).
        return None


__all__ = ["array_spec", "jit_signature", "keywords_of", "placements", "static_spec", "tracing_context"]
