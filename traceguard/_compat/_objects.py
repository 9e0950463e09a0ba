"""Python objects that a tracer keys by identity, as specs: what they are, never themselves.

Both backends key some arguments by identity: `tf.function` any object it can weakly
reference (a function, a bound method, a model), `jax.jit` a static argument whose
type has no `__eq__` of its own. A spec names the object for a person (its class, a
function's qualified name and `def` site) and tells two objects apart by `id()`
while they live; it keeps no reference to the object.
"""

from __future__ import annotations

from typing import Any

from traceguard._core.specs import ObjectSpec, Site


def object_spec(value: Any, static: bool = False) -> ObjectSpec:
    """An object keyed by identity: its class, its name (a function's qualified name), where a
    function was defined, and its `id()` to tell two apart while they live."""
    function = getattr(value, "__func__", value)  # A bound method: its function.
    code = getattr(function, "__code__", None)
    type_name = type(value).__name__
    name = getattr(function, "__qualname__", None) if code is not None else None
    site = Site(code.co_filename, code.co_firstlineno) if code is not None else None
    return ObjectSpec(type_name, name or type_name, id(value), site, static)


__all__ = ["object_spec"]
