"""Python objects that a tracer keys by identity, as specs: what they are, never themselves.

Both backends key some arguments by identity: `tf.function` any object it can weakly
reference (a function, a bound method, a model), `jax.jit` a static argument whose
type has no `__eq__` of its own. A spec names the object for a person (its class, a
function's qualified name and `def` site) and tells two objects apart by a number
given to each object the first time one is read (an `id()` is reused once its object
dies, and a tracer's weak reference to a dead object matches no new one); it keeps
no reference to the object.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from typing import Any

from traceguard._core.specs import ObjectSpec, Site

_numbers = itertools.count(1)
_lock = threading.Lock()
# id() of a live object read -> (a weak reference to it, its number); dropped as it dies.
_tokens: dict[int, tuple[Any, int]] = {}


def _forget(key: int, _: Any) -> None:
    _tokens.pop(key, None)  # The object died: its id() may be given to another.


def object_token(value: Any) -> int:
    """A number for `value`, the same while it lives and never given to another object; its
    `id()` for an object that cannot be weakly referenced."""
    key = id(value)
    with _lock:
        known = _tokens.get(key)
        if known is not None and known[0]() is value:
            return known[1]
        try:
            reference = weakref.ref(value, functools.partial(_forget, key))
        except TypeError:
            return key
        number = next(_numbers)
        _tokens[key] = (reference, number)
        return number


def object_spec(value: Any, static: bool = False) -> ObjectSpec:
    """An object keyed by identity: its class, its name (a function's qualified name), where a
    function was defined, and its `id()` to tell two apart while they live."""
    function = getattr(value, "__func__", value)  # A bound method: its function.
    code = getattr(function, "__code__", None)
    type_name = type(value).__name__
    name = getattr(function, "__qualname__", None) if code is not None else None
    site = Site(code.co_filename, code.co_firstlineno) if code is not None else None
    return ObjectSpec(type_name, name or type_name, object_token(value), site, static)


__all__ = ["object_spec", "object_token"]
