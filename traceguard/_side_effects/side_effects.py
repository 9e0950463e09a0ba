"""`side_effects(print=...)`: the builtin `print` inside one function's body, routed.

The decorated function's body runs as a copy whose `print` is a router
(`_routed_globals.copy_with_print`); eager runs call the original, so they pay
nothing. Each other run opens an `_Invocation` on a thread-local stack that
decides once for the whole run what its `print` calls do, from the innermost
`BodyRun` of a trace-aware layer (its kind, index and signature).
"""

from __future__ import annotations

import builtins
import functools
import itertools
import logging
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from traceguard import _compat
from traceguard._record.runs import BodyRun, active_runs
from traceguard._side_effects.first_runs import (
    Memory,
    arguments_key,
    log_internal_error,
    memory_of_layer,
    signature_key,
)
from traceguard._side_effects.routed_globals import check_routable, copy_with_print, with_signature_of
from traceguard._side_effects.tf_print import (
    print_each_execution,
    print_options,
    unsupported_file_message,
    xla_fallback_message,
)

logger = logging.getLogger("traceguard")

PRINT_MODES = ("tf.print", "once", "each_trace", "log", "python")
_Function = TypeVar("_Function", bound=Callable[..., Any])

_local = threading.local()


def _invocations() -> list[_Invocation]:
    try:
        invocations: list[_Invocation] = _local.invocations
    except AttributeError:
        invocations = _local.invocations = []
    return invocations


# --- print, routed --------------------------------------------------------------------
class _PrintRoute:
    """One decorated function: its mode and what it remembers outside layers."""

    def __init__(self, function: Callable[..., Any], mode: str) -> None:
        self.mode = mode
        self.name = function.__qualname__
        self.short_name = function.__name__
        self.module_globals = function.__globals__
        self.memory = Memory()
        self.graph_runs = itertools.count(1)
        self.warned: set[str] = set()

    def warn_once(self, topic: str, message: str) -> None:
        if topic not in self.warned:
            self.warned.add(topic)
            warnings.warn(message, UserWarning, stacklevel=_compat.user_stacklevel())


class _Invocation:
    """One run of a decorated body on this thread: what its `print` calls do."""

    __slots__ = ("route", "run", "action", "prefix")

    def __init__(self, route: _PrintRoute, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.route = route
        runs = active_runs()
        self.run = runs[-1] if runs else None
        self.prefix: str | None = None
        under_xla = False
        try:
            # Keras's symbolic pass builds a scratch graph nobody runs or compiles, and
            # swallows any exception raised in it (a warning made an error included).
            under_xla = route.mode == "tf.print" and not _compat.executing_eagerly() \
                and not _compat.in_symbolic_build() and _compat.in_xla_context()
            self.action = self._decide("once" if under_xla else route.mode, args, kwargs)
        except Exception:
            log_internal_error("routing print")
            self.action = "python"
        if under_xla:  # Outside the `try`: a warning turned into an error must reach the user.
            route.warn_once("xla", xla_fallback_message(f"`print` in `{route.name}`"))

    def _decide(self, mode: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        route, run = self.route, self.run
        if _compat.executing_eagerly():
            return "log" if mode == "log" else "python"
        if mode == "tf.print":
            return "tf.print"
        if mode == "once":
            first = (memory_of_layer(run).claim((route, signature_key(run))) if run is not None
                     else route.memory.claim(arguments_key(args, kwargs)))
            return "python" if first else "skip"
        if mode == "each_trace":
            self.prefix = (f"[#{run.index} {run.kind.value}]" if run is not None and run.index is not None
                           else f"[#{next(route.graph_runs)} {route.short_name}]")
        return "python" if mode == "each_trace" else mode

    def __enter__(self) -> _Invocation:
        _invocations().append(self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _invocations().pop()

    def print(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        sep, _, _ = print_options(kwargs)
        if self.action == "tf.print":
            print_each_execution(args, kwargs, lambda: self.route.warn_once(
                "file", unsupported_file_message(f"`print` in `{self.route.name}`", kwargs)))
        elif self.action == "log":
            text = sep.join(map(str, args))
            if isinstance(self.run, BodyRun) and self.run.index is not None:  # A logged run.
                self.run.messages.append(text)
            else:
                logger.debug("%s: %s", self.route.name, text)
        elif self.action == "python" and self.prefix is None:
            builtins.print(*args, **kwargs)
        elif self.action == "python":
            builtins.print(self.prefix, *args, **kwargs)


def _router(route: _PrintRoute) -> Callable[..., Any]:
    @_compat.run_unconverted
    def print(*args: Any, **kwargs: Any) -> Any:
        shadowing = route.module_globals.get("print")
        if shadowing is not None:  # The module's own `print`: not the builtin, not ours to route.
            return shadowing(*args, **kwargs)
        for invocation in reversed(_invocations()):
            if invocation.route is route:
                return invocation.print(args, kwargs)
        return builtins.print(*args, **kwargs)  # Run later by a function the body created.

    router: Callable[..., Any] = print
    return router


# --- public API -----------------------------------------------------------------------
def side_effects(function: _Function | None = None, /, *, print: str = "tf.print") -> Any:
    """Routes the builtin `print` inside a function's own body so it behaves under tracing.

    Decorate a layer's `call` (or any function run under `tf.function`). Only
    the name `print` in the decorated body, and in functions defined inside
    it, is routed: helpers it calls, other modules and other threads keep the
    builtin. Eager runs print as plain Python in every mode but `"log"`. The
    decorated function keeps its signature, so Keras still sees `training` and
    `mask`.

    Modes, while TensorFlow or Keras traces the body:

    - `"tf.print"`: becomes `tf.print`, so it prints at every execution of
      the graph, to stdout (or stderr with `file=sys.stderr`), honouring
      `sep` and `end`; tensors show their runtime values. tf.print writes to
      the process's stdout from C++, not to Python's `sys.stdout`. Under XLA
      (`jit_compile=True`), which cannot compile tf.print, it warns once and
      falls back to `"once"`. On Keras 3's JAX backend it becomes
      `jax.debug.print`: at every execution of the jitted function.
    - `"once"`: prints on the first run for each input signature of the layer
      (the Keras symbolic pass, the first trace and the variable retrace of
      one signature print once in total); a new signature prints again.
      Outside a `TraceAwareLayer`, the signature is that of the function's
      own arguments.
    - `"each_trace"`: prints on every run, prefixed with the event's index and
      kind, e.g. `[#3 variable_retrace]` (outside a `TraceAwareLayer`, the
      function's count of traced runs and its name, e.g. `[#2 step]`).
    - `"log"`: prints nothing; the text goes to the current event's
      `messages`, or, with no current event (an eager run without
      `log_eager=True`, or no `TraceAwareLayer` around), to the `traceguard`
      logger at DEBUG.
    - `"python"`: Python's `print` at trace time, also where AutoGraph would
      have turned it into a `py_function`.

    Args:
        function: The function, when used without parentheses.
        print: One of `{"tf.print", "once", "each_trace", "log", "python"}`.
            Defaults to `"tf.print"`.

    Returns:
        The decorated function, or a decorator when `function` is omitted.

    Raises:
        ValueError: At decoration, for an unknown mode, or a function that
            assigns module globals (`global name`).
        TypeError: At decoration, for anything but a plain Python function.

    Example:

    ```python
    class Seed(traceguard.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @traceguard.side_effects(print="once")
        def call(self, inputs):
            print("Tracing")  # Once per input signature, however many passes.
            return self.dense(inputs)
    ```
    """
    mode = print
    if mode not in PRINT_MODES:
        raise ValueError(f"`side_effects(print=...)` expects one of {', '.join(PRINT_MODES)}. "
                         f"Received: print={mode!r}")
    if function is None:
        return functools.partial(_route_prints, mode=mode)
    return _route_prints(function, mode)


def _route_prints(function: _Function, mode: str) -> _Function:
    check_routable(function, "side_effects")
    route = _PrintRoute(function, mode)
    # check_routable() made sure that it is a plain Python function.
    routed = copy_with_print(cast(types.FunctionType, function), _router(route))
    plain_when_eager, executing_eagerly = mode != "log", _compat.executing_eagerly

    # Only a `with`, an `if` on Python values and the call: AutoGraph, when it
    # converts this wrapper (tf_keras's `call`, `tf.function(autograph=True)`),
    # converts the user's body too, as it would have without it. Eager runs,
    # every step, pay one call of executing_eagerly() and run the original.
    @functools.wraps(function)
    def print_routed(*args: Any, **kwargs: Any) -> Any:
        if plain_when_eager and executing_eagerly():
            return function(*args, **kwargs)
        with _Invocation(route, args, kwargs):
            return routed(*args, **kwargs)

    wrapper: _Function = with_signature_of(function, print_routed)
    return wrapper
