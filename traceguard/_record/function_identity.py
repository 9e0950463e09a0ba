"""A traced function's identity: its code (the same `def`, the same closure functions) and its `def` site.

A function is known two ways: by its object (this `tf.function`), and by its code, so
that a `tf.function` made anew in a loop, or a Keras step of a model rebuilt per
iteration, is recognised as the same function in a new object. Reads live functions
(their code and closures); keeps none.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, NamedTuple

from traceguard._core.specs import Spec
from traceguard._record.compared import argument_spec

# How deep `code_key` follows functions in closures, and wrappers: Keras 3's
# `multi_step_on_iterator` holds a wrapper of the `tf.function` of a function that holds the step.
_CLOSURE_DEPTH = 4


def code_key(function: Any, _depth: int = 0) -> tuple:
    """A key equal for functions from the same code: the same `def` and closure functions.

    The closure's functions count by their own code (a `tf.function` or `jax.jit`
    in it by the key of the function it wraps), its numbers and strings by value,
    other objects not at all: Keras makes each model's train and test steps from
    one `def` whose closure holds the model and its `train_step` or `test_step`
    (Keras 3's `multi_step_on_iterator` holds the `tf.function` of that step), so
    the steps differ by the step's code, and a rebuilt model's steps equal the old
    model's.
    """
    function = _plain_function(function)
    code = getattr(function, "__code__", None)
    if code is None:  # A callable object, such as a layer: its class.
        cls = type(function)
        return ("object", cls.__module__, cls.__qualname__)
    closure: list[Any] = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # An empty cell.
            continue
        value = _unwrapped(value)
        if isinstance(value, types.FunctionType):
            # With its own closure, a few levels down (a closure may hold itself).
            closure.append(code_key(value, _depth + 1) if _depth < _CLOSURE_DEPTH else value.__code__)
        elif value is None or isinstance(value, (bool, int, float, str, bytes)):
            closure.append(value)
    return (code, tuple(closure))


def _unwrapped(value: Any) -> Any:
    """`value` without its wrappers: what a `tf.function` (`python_function`, public), a
    `jax.jit` or a `functools.wraps` decorator (`__wrapped__`) wraps, a few levels down."""
    for _ in range(_CLOSURE_DEPTH):
        value = _plain_function(value)
        wrapped = getattr(value, "python_function", None) or getattr(value, "__wrapped__", None)
        if not callable(wrapped):
            break
        value = wrapped
    return value


def _plain_function(function: Any) -> Any:
    function = getattr(function, "__func__", function)  # A bound method: its function.
    return getattr(function, "func", function) if hasattr(function, "keywords") else function  # partial


def definition_site(function: Any) -> tuple[str, str, int] | None:
    """(qualified name, file, first line) of the function's `def`, or of an object's class."""
    function = _plain_function(function)
    code = getattr(function, "__code__", None)
    if code is None:
        cls = type(function)
        call = getattr(cls, "call", None) or cls.__call__  # A layer: its `call`.
        # The layer's own `call`, not traceguard's recording wrapper around it.
        code = getattr(inspect.unwrap(call), "__code__", None)
        name = type(function).__qualname__
    else:
        name = getattr(function, "__qualname__", code.co_name)
    if code is None:
        return None
    return name, code.co_filename, code.co_firstlineno


__all__ = ["code_key", "definition_site"]


class TraceFacts(NamedTuple):
    """What the records key a trace by: its code (`code_key`), its `def` site, its signature
    (the key as the backend compared it, else each argument's spec), and its function object."""

    key: tuple
    site: tuple[str, str, int] | None
    signature: dict[str, Spec]
    object_key: Any


def trace_facts(tracing: Any) -> TraceFacts:
    """The `TraceFacts` of a `_compat._function_tracing.FunctionTracing`."""
    python_function = tracing.python_function
    # The key as the backend compared it when the hook read it; else each argument's value.
    signature = tracing.signature
    if signature is None:
        signature = {name: argument_spec(value) for name, value in (tracing.arguments or {}).items()}
    # A weak reference: equal to another only while both point at the same live
    # object, so a function object made where a dead one was is a new object.
    object_key = tracing.function if tracing.function is not None else tracing.function_id
    key = code_key(python_function)
    # torch: a frame compiled after a graph break has its own code and cache, but is a part of the
    # function it continues, and is reported at that function's `def`.
    part_of = getattr(tracing, "part_of", None)
    whole = part_of() if part_of is not None else None
    if getattr(tracing, "restored", False):
        # Every restored function runs TensorFlow's one dispatcher code; each is its own saved
        # function (its own tracing count), not an object made anew from shared code.
        key = (*key, tracing.function_id)
    return TraceFacts(key, definition_site(whole if whole is not None else python_function), signature,
                      object_key)
