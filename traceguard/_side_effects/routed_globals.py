"""Stand-ins for a user's function: a copy with another `print`, a wrapper with its signature.

The copy shares the original's code, closure and defaults; only its globals
differ: a `RoutedGlobals` holding `print` (and `__builtins__`) that reads every
other name from the module's own globals, live. Nothing global is patched, so
other functions, modules and threads keep the builtin `print`.
"""

from __future__ import annotations

import dis
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

# Bodies that cannot be copied this way: a generator or coroutine runs after the
# call that created it has returned, outside the routing.
_DEFERRED_BODY_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class RoutedGlobals(dict):
    """A function's globals: own entries first, then the module's globals, live.

    CPython reads the globals of a function with `__getitem__`, hence
    `__missing__`, when they are not an exact dict (`LOAD_GLOBAL`'s slow path);
    subclasses set `__missing__` to the module dict's own `__getitem__` so the
    lookup stays in C. Iteration, `keys()` and `items()` show the module's names
    too: AutoGraph reads a function's namespace with `dict(fn.__globals__)`.
    """

    __slots__ = ()
    module_globals: dict[str, Any]

    def _merged(self) -> dict[str, Any]:
        merged = dict(self.module_globals)
        merged.update(dict.items(self))
        return merged

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self.module_globals

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def keys(self) -> Any:
        return self._merged().keys()

    def items(self) -> Any:
        return self._merged().items()

    def values(self) -> Any:
        return self._merged().values()


def check_routable(function: Any, decorator: str) -> None:
    """Raises unless `copy_with_print` can copy `function` faithfully."""
    if not isinstance(function, types.FunctionType):
        raise TypeError(
            f"`{decorator}` expects a Python function (a `def`, such as a layer's `call`); "
            "apply it directly to the `def`, below `@tf.function`, `@staticmethod` or "
            f"`@classmethod`. Received: function={function!r}"
        )
    if function.__code__.co_flags & _DEFERRED_BODY_FLAGS:
        raise TypeError(
            f"`{decorator}` cannot route `print` in a generator or coroutine function: its body "
            f"runs after the call has returned. Received: function={function.__qualname__}"
        )
    assigned = sorted(set(_assigned_globals(function.__code__)))
    if assigned:
        raise ValueError(
            f"`{decorator}` cannot route `print` in `{function.__qualname__}`: it assigns the "
            f"module global{'s' if len(assigned) > 1 else ''} {', '.join(map(repr, assigned))} "
            "(a `global` statement), which the routing copy of its globals would keep from the "
            "module. Move the assignment into an undecorated helper. "
            f"Received: function={function.__qualname__}"
        )


def _assigned_globals(code: types.CodeType) -> list[str]:
    names = [instruction.argval for instruction in dis.get_instructions(code)
             if instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):  # Nested functions share the globals.
            names.extend(_assigned_globals(constant))
    return names


def copy_with_print(function: types.FunctionType, replacement: Callable[..., Any]) -> types.FunctionType:
    """`function` with the name `print` in its body (and nested bodies) bound to `replacement`."""
    module_globals = function.__globals__
    namespace_type = type("RoutedGlobals", (RoutedGlobals,), {
        "__slots__": (),
        "__missing__": staticmethod(module_globals.__getitem__),
        "module_globals": module_globals,
    })
    namespace = namespace_type(print=replacement, __builtins__=function.__builtins__)
    copy = types.FunctionType(function.__code__, namespace, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    copy.__doc__ = function.__doc__
    copy.__annotations__ = function.__annotations__
    copy.__dict__.update(function.__dict__)
    return copy


def with_signature_of(function: Callable[..., Any], wrapper: Callable[..., Any]) -> Any:
    """`wrapper` with `function`'s signature for every reader, not only `inspect.signature`.

    tf_keras reads `call`'s parameters with `inspect.getfullargspec`, which
    ignores `__wrapped__` but honours `__signature__`; a `(*args, **kwargs)`
    signature would make it pass `training` to a `call` without one.
    """
    try:
        wrapper.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # No signature to copy (some builtins).
        pass
    return wrapper
