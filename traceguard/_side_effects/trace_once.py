"""`trace_once`: a function that runs at most once per layer and input signature."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from traceguard._record.runs import active_runs
from traceguard._side_effects.first_runs import Memory, memory_of_layer, signature_key
from traceguard._side_effects.routed_globals import with_signature_of

_MISSING = object()
_Function = TypeVar("_Function", bound=Callable[..., Any])


def trace_once(function: _Function) -> _Function:
    """Runs the decorated function at most once per layer and input signature.

    Inside a `TraceAwareLayer`'s `call` (directly or through helpers), the
    function runs on the first call for each input signature of that layer,
    however many times Keras and TensorFlow run the body (eagerly too); later
    calls return the first result. Outside any such layer, it runs once per
    decorated function. A call that raises is not remembered.

    Args:
        function: The function or method to run once.

    Returns:
        The decorated function, with the same signature.

    Example:

    ```python
    class Seed(traceguard.TraceAwareLayer):
        @traceguard.trace_once
        def describe(self, inputs):
            print("building for", inputs.shape)

        def call(self, inputs):
            self.describe(inputs)
            return inputs
    ```
    """
    if not callable(function):
        raise TypeError(f"`trace_once` expects a callable. Received: function={function!r}")
    memory = Memory()

    # Only a `with`, an `if` on a Python value and the call: AutoGraph, when it
    # converts this wrapper, converts `function` as it would have without it.
    @functools.wraps(function)
    def run_once(*args: Any, **kwargs: Any) -> Any:
        with _OnceClaim(function, memory) as claim:
            if claim.first:
                claim.result = function(*args, **kwargs)
        return claim.result

    wrapper: _Function = with_signature_of(function, run_once)
    return wrapper


class _OnceClaim:
    """One call of a `trace_once` function: whether it runs, and the result to return."""

    __slots__ = ("memory", "key", "first", "result")

    def __init__(self, function: Callable[..., Any], memory: Memory) -> None:
        self.key: Hashable
        runs = active_runs()
        if runs:
            self.memory, self.key = memory_of_layer(runs[-1]), (function, signature_key(runs[-1]))
        else:
            self.memory, self.key = memory, function

    def __enter__(self) -> _OnceClaim:
        # Held while the function runs, so a concurrent trace waits for its result.
        self.memory.lock.acquire()
        found = self.memory.entries.get(self.key, _MISSING)
        self.first = found is _MISSING
        self.result = None if self.first else found
        return self

    def __exit__(self, error_type: Any, *exc_info: Any) -> None:
        try:
            if self.first and error_type is None:
                self.memory.store(self.key, self.result)
        finally:
            self.memory.lock.release()
