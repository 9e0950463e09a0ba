"""The backend's own record of tracing, taken without traceguard: one entry per function object.

- TensorFlow: every `tf.function` object made while observing (its class's `__init__` is
  wrapped, so Keras's steps, made with `tf.function(...)` at call time, and a library's are
  seen too) is held, and its own `experimental_get_tracing_count()` read at the end: the
  number of concrete functions in that object's cache, one per trace that completed
  (tensorflow/python/eager/polymorphic_function/polymorphic_function.py,
  `Function.experimental_get_tracing_count`).
- JAX: with `jax_explain_cache_misses` on, `partial_eval.trace_to_jaxpr`'s cache logs one
  "TRACING CACHE MISS" message per miss of a function defined in a user file (Keras's
  included) on the `jax._src.interpreters.partial_eval` logger (jax/_src/interpreters/
  partial_eval.py, `explain`). Each message is held with the function object JAX keyed the
  miss on (`explain`'s `fun`), read from the logging call's frames: one entry per object.
- torch: `torch.compile` keeps its compiled code per Python code object, and records every frame
  compile in its compilation metrics (torch/_dynamo/utils.py, `record_compilation_metrics`, one
  `CompilationMetrics` per `convert_frame._compile`): a compile that made a cache entry built
  its guards (`guard_count` set) and has no `fail_type`. `has_guarded_code` does not tell:
  it is true for a frame Dynamo skipped ("No ops traced for the FX graph", no cache entry, the
  frame runs eagerly; measured on torch 2.14.1: `guard_count` and `graph_op_count` None).
  One entry per code object (`co_name`, `co_filename`, `co_firstlineno`); torch keeps the
  last 64 metrics by default, so the limit is raised while observing.

The objects are held until `stop()`, so that an object's count can be read at the end and an
object's `id` is never reused by a later one. Nothing here imports traceguard.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
import sysconfig
import weakref
from typing import Any

JAX_EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
# `trace_to_jaxpr`'s callers and the transformation they stand for (jax 0.10): how the
# checker names a miss. A caller not listed is named by its own function name.
JIT_CALLER = "_trace_for_jit"

_LIBRARY_DIRS = tuple(os.path.join(os.path.realpath(sysconfig.get_paths()[key]), "")
                      for key in ("purelib", "platlib", "stdlib"))


def is_library_file(path: str | None) -> bool:
    """Whether `path` is installed (site-packages) or the standard library's, not the user's."""
    return bool(path) and os.path.realpath(path).startswith(_LIBRARY_DIRS)


def _definition(function: Any) -> tuple[str, str | None, int | None]:
    """(qualified name, file, first line) of the Python function a callable runs."""
    for _ in range(8):
        function = getattr(function, "__func__", function)
        if isinstance(function, functools.partial):
            function = function.func
            continue
        wrapped = getattr(function, "__wrapped__", None)
        if wrapped is None or wrapped is function:
            break
        function = wrapped
    code = getattr(function, "__code__", None)
    if code is None:
        cls = type(function)
        call = getattr(cls, "call", None) or cls.__call__
        code = getattr(inspect.unwrap(call), "__code__", None) if call is not None else None
        name = cls.__qualname__
    else:
        name = getattr(function, "__qualname__", code.co_name)
    if code is None:
        return name, None, None
    return name, code.co_filename, code.co_firstlineno


class _TensorFlowObjects:
    def __init__(self) -> None:
        import tensorflow as tf

        self.function_class = type(tf.function(lambda: None))
        self.original_init = self.function_class.__init__
        self.objects: list[Any] = []
        objects, original = self.objects, self.original_init

        @functools.wraps(original)
        def __init__(function_object: Any, *args: Any, **kwargs: Any) -> None:
            original(function_object, *args, **kwargs)
            objects.append(function_object)

        self.function_class.__init__ = __init__

    def stop(self) -> list[dict[str, Any]]:
        self.function_class.__init__ = self.original_init
        entries = []
        for number, function_object in enumerate(self.objects):
            count = function_object.experimental_get_tracing_count()
            if not count:
                continue
            name, path, line = _definition(function_object.python_function)
            entries.append({"object": number, "name": name.rsplit(".", 1)[-1], "qualname": name,
                            "path": path, "line": line, "traces": count, "library": is_library_file(path),
                            "misses": []})
        self.objects.clear()
        return entries


class _JaxMisses(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        import jax

        self.jax = jax
        self.previous = jax.config.jax_explain_cache_misses
        jax.config.update("jax_explain_cache_misses", True)
        self.logger = logging.getLogger(JAX_EXPLAIN_LOGGER)
        self.propagate = self.logger.propagate
        self.logger.propagate = False  # The messages are the record here, not output.
        self.logger.addHandler(self)
        self.functions: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(fun): (a weak reference, facts)
        self.entries: list[dict[str, Any]] = []  # Every function's facts: an id outlives its function.
        self.order = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith("TRACING CACHE MISS"):
            return
        frame = sys._getframe()
        while frame is not None and not (frame.f_code.co_name == "explain"
                                         and frame.f_code.co_filename.endswith("partial_eval.py")):
            frame = frame.f_back
        if frame is None:
            return
        function = frame.f_locals.get("fun")
        debug_info = frame.f_locals.get("debug_info")
        # The frame below `explain` called `trace_to_jaxpr`; from `pjit._trace_for_jit` (a
        # `jax.jit` miss) its `ji.fun_signature` names the parameters as JAX bound them.
        caller = frame.f_back
        # A recorder hooked on the tracing cache (traceguard's) calls `explain` itself, with JAX's
        # cache wrapper and its own frames between: the jit miss is a few frames further.
        while caller is not None and "/traceguard/" in caller.f_code.co_filename:
            caller = caller.f_back
        jit_frame, depth = caller, 0
        while jit_frame is not None and depth < 8 and jit_frame.f_code.co_name != JIT_CALLER:
            jit_frame, depth = jit_frame.f_back, depth + 1
        if jit_frame is not None:
            caller = jit_frame
        via = caller.f_code.co_name if caller is not None else None
        signature = getattr(caller.f_locals.get("ji"), "fun_signature", None) if via == JIT_CALLER else None
        parameters = None if signature is None else [[name, parameter.kind.name]
                                                     for name, parameter in signature.parameters.items()]
        # Held weakly: a strong reference would keep a function alive that the program let go, and
        # JAX's tracing cache, which compares functions by `==` (two bound methods of one method on
        # one object are equal), would then serve a stale trace to its successor (measured: Keras's
        # `trainer_test.test_recompile` on JAX kept the first `compile()`'s metrics).
        target = getattr(function, "f", function)  # A `WrappedFun` is not weakly referenceable.
        try:
            reference: Any = weakref.ref(target)
        except TypeError:
            reference = None
        entry = self.functions.get(id(function))
        if entry is None or (entry[0] is not None and entry[0]() is not target):
            path = getattr(debug_info, "func_filename", None)
            name = getattr(debug_info, "func_name", None) or _definition(function)[0]
            entry = (reference, {"object": len(self.entries), "name": name.rsplit(".", 1)[-1],
                                "qualname": name, "path": path,
                                "line": getattr(debug_info, "func_lineno", None), "traces": 0,
                                "library": is_library_file(path), "misses": []})
            self.functions[id(function)] = entry
            self.entries.append(entry[1])
        entry[1]["traces"] += 1
        entry[1]["misses"].append({"message": message, "via": via, "parameters": parameters,
                                   "order": self.order})
        self.order += 1

    def stop(self) -> list[dict[str, Any]]:
        self.logger.removeHandler(self)
        self.logger.propagate = self.propagate
        self.jax.config.update("jax_explain_cache_misses", self.previous)
        entries, self.entries = self.entries, []
        self.functions.clear()
        return entries


class _TorchCompiles:
    def __init__(self) -> None:
        from torch._dynamo import utils

        self.utils = utils
        self.limit = utils._compilation_metrics.maxlen
        utils.set_compilation_metrics_limit(1_000_000)
        self.before = len(utils.get_compilation_metrics())

    def stop(self) -> list[dict[str, Any]]:
        metrics = self.utils.get_compilation_metrics()[self.before:]
        self.utils.set_compilation_metrics_limit(self.limit)
        entries: dict[tuple, dict[str, Any]] = {}
        for metric in metrics:
            if metric.guard_count is None or metric.fail_type:
                continue
            key = (metric.co_name, metric.co_filename, metric.co_firstlineno)
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = {"object": len(entries), "name": metric.co_name,
                                        "qualname": metric.co_name, "path": metric.co_filename,
                                        "line": metric.co_firstlineno, "traces": 0,
                                        "library": is_library_file(metric.co_filename), "misses": []}
            entry["traces"] += 1
        return list(entries.values())


class BackendRecord:
    """Observes the backend's tracing until `stop()`, which returns one dict per function object.

    Each dict: `object` (its number in order of creation or first miss), `name`, `qualname`,
    `path` and `line` of the Python function, `traces` (the backend's count), `library`
    (defined in an installed package), and on JAX `misses`: JAX's messages (`message`, and
    `via`, the function that called `trace_to_jaxpr`).

    Args:
        backend: One of `{"tensorflow", "jax", "torch"}`.
    """

    def __init__(self, backend: str) -> None:
        observers = {"tensorflow": _TensorFlowObjects, "jax": _JaxMisses, "torch": _TorchCompiles}
        if backend not in observers:
            raise ValueError(f"`BackendRecord` expects backend 'tensorflow', 'jax' or 'torch'. "
                             f"Received: {backend!r}")
        self.backend = backend
        self._observer = observers[backend]()

    def stop(self) -> list[dict[str, Any]]:
        return self._observer.stop()
