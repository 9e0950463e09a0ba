"""TensorFlow's calls of a `tf.function`: the whole miss, each new concrete function's
first call, and XLA's compilations that are no trace.

- Every call of a `tf.function` (`polymorphic_function.Function.__call__`, TF 2.12 to
  2.21) opens a `_function_calls.Call` while listeners listen: the trace hook
  (`tensorflow.traces`) finds it, and when it returns the whole miss is known. A call made
  while tracing another function (graph mode) of a `jit_compile=True` function marks
  the enclosing trace as running XLA.
- Each concrete function a watched trace makes (`tracing_compilation.
  _create_concrete_function` returns it) gets its first call timed: TensorFlow
  instantiates and optimises its graph there, and XLA compiles it when it runs XLA
  (`ConcreteFunction._call_flat(tensor_inputs, captured_inputs)`, which every call of a
  concrete function goes through, shadowed on that one object until its first eager call).
- A concrete function that runs XLA keeps the shadow while listeners listen: XLA
  compiles it once per new input shape (its cache is keyed by the function and the
  shapes and dtypes of its inputs; tensorflow/compiler/jit/device_compiler.h), even when
  TensorFlow reused the trace (a relaxed signature, `reduce_retracing=True`). Each eager
  call with input shapes it has not run is one compilation, reported as a
  `FunctionTracing` whose `compilation` is true. A Keras step fed a `tf.data` iterator
  takes its batches inside the graph: the batch sizes come from Keras (`_keras_batches`),
  or from the dataset's `batch()`.

Removed, every shadow included, when the sink disconnects (`uninstall`). Part of
the TensorFlow backend.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/polymorphic_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/dtypes.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/tensor_shape.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/tensor_spec.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/tensor_util.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/util/nest.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/concrete_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.12.0/tensorflow/python/eager/polymorphic_function/monomorphic_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/data/ops/batch_op.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/data/ops/dataset_ops.py
"""

from __future__ import annotations

import inspect
import logging
import sys
import time
import weakref
from typing import Any

from tensorflow.python.eager.polymorphic_function import polymorphic_function as _polymorphic_function
from tensorflow.python.framework import dtypes as _dtypes
from tensorflow.python.framework import tensor_shape as _tensor_shape
from tensorflow.python.framework import tensor_spec as _tensor_spec
from tensorflow.python.framework import tensor_util as _tensor_util
from tensorflow.python.util import nest as _nest

from traceguard._compat import _calling_code, _function_calls, _function_tracing, _keras_batches
from traceguard._compat._flavors import internal_missing
from traceguard._compat.tensorflow.context import default_graph, executing_eagerly

_log = logging.getLogger("traceguard")

try:  # TF 2.13-2.21.
    from tensorflow.python.eager.polymorphic_function.concrete_function import ConcreteFunction as _CONCRETE
except ImportError:  # TF 2.12: `_call_flat(self, args, captured_inputs, cancellation_manager=None)`.
    from tensorflow.python.eager.polymorphic_function.monomorphic_function import (
        ConcreteFunction as _CONCRETE,
    )
_FUNCTION = _polymorphic_function.Function
_ORIGINAL_CALL = _FUNCTION.__dict__.get("__call__")
_CALL_FLAT = _CONCRETE.__dict__.get("_call_flat")
try:
    _found = tuple(inspect.signature(_CALL_FLAT).parameters)[:3] if _CALL_FLAT is not None else ()
except (TypeError, ValueError):
    _found = ()
if _ORIGINAL_CALL is None or _found not in {("self", "tensor_inputs", "captured_inputs"),
                                            ("self", "args", "captured_inputs")} \
        or "_jit_compile" not in _FUNCTION.__init__.__code__.co_names:
    raise internal_missing(f"Function.__call__, Function._jit_compile and ConcreteFunction._call_flat"
                           f"(self, tensor_inputs, captured_inputs) (found {_found})")
# Inputs whose shape says nothing of what they hold: a resource (a variable's, an
# iterator's handle) or a variant.
_OPAQUE = frozenset({_dtypes.resource.as_datatype_enum, _dtypes.variant.as_datatype_enum})
# `Dataset.batch` makes a dataset holding its input (`_input_dataset`), its `_batch_size`
# and `_drop_remainder` as tensors: `batch_op._BatchDataset` since the transformations
# moved to modules of their own (TF 2.13-2.21), `dataset_ops.BatchDataset` before. Keras
# may add `map`, `prefetch` or options after it.
try:
    from tensorflow.python.data.ops.batch_op import _BatchDataset as _BATCH_DATASET
except ImportError:  # TF 2.12.
    from tensorflow.python.data.ops.dataset_ops import BatchDataset as _BATCH_DATASET
if not {"_batch_size", "_drop_remainder", "_input_dataset"} <= set(_BATCH_DATASET.__init__.__code__.co_names):
    raise internal_missing("the dataset of Dataset.batch: _batch_size, _drop_remainder, _input_dataset")
_ELEMENTWISE_DATASETS = frozenset(prefix + name for prefix in ("_", "") for name in (
    "MapDataset", "ParallelMapDataset", "PrefetchDataset", "OptionsDataset", "ShuffleDataset",
    "CacheDataset", "IgnoreErrorsDataset"))

_watched: weakref.WeakSet[Any] = weakref.WeakSet()  # Concrete functions shadowed now.


def install() -> None:
    _FUNCTION.__call__ = _hooked_call


def uninstall() -> None:
    _FUNCTION.__call__ = _ORIGINAL_CALL
    for concrete in list(_watched):
        concrete.__dict__.pop("_call_flat", None)
    _watched.clear()


def is_installed() -> bool:
    return _FUNCTION.__dict__["__call__"] is not _ORIGINAL_CALL or len(_watched) > 0


def _hooked_call(self: Any, *args: Any, **kwds: Any) -> Any:
    eager = executing_eagerly()
    if not eager and self._jit_compile:
        _mark_xla(self.name)
    call = _function_calls.open_call(self, args, kwds, eager)
    try:
        return _ORIGINAL_CALL(self, *args, **kwds)
    finally:
        _function_calls.close_call(call)


def _mark_xla(name: str) -> None:
    """A `jit_compile=True` function is called in a trace: that trace's graph runs XLA."""
    enclosing = _function_tracing.tracing_of_graph(default_graph())
    for tracing in (*_function_tracing.running_traces(), *((enclosing,) if enclosing else ())):
        tracing.xla = True
        if name not in tracing.xla_functions:
            tracing.xla_functions += (name,)


def watch_concrete_function(concrete: Any, tracing: _function_tracing.FunctionTracing) -> None:
    """Times the first call of `concrete`, which `tracing` made; and, when it runs XLA, its
    compilations for new input shapes while listeners listen."""
    if tracing.origin != "tf.function" or tracing.saving or not isinstance(concrete, _CONCRETE):
        return
    function = tracing.function() if tracing.function is not None else None
    if getattr(function, "_jit_compile", False):
        tracing.xla = True
    concrete.__dict__["_call_flat"] = _Shadow(concrete, function, tracing)
    _watched.add(concrete)


class _Shadow:
    """`concrete._call_flat`, timed at the first eager call, and at XLA's compilations."""

    __slots__ = ("concrete", "function", "tracing", "xla", "xla_functions", "shapes", "__weakref__")

    def __init__(self, concrete: Any, function: Any, tracing: _function_tracing.FunctionTracing) -> None:
        self.concrete = weakref.ref(concrete)
        self.function = None if function is None else weakref.ref(function)
        self.tracing: Any = tracing  # Until its first call.
        self.xla = tracing.xla
        self.xla_functions = tracing.xla_functions or ((tracing.name,) if tracing.xla else ())
        self.shapes: set[tuple] = set()  # The input shapes XLA compiled.

    def _drop(self, concrete: Any) -> None:
        concrete.__dict__.pop("_call_flat", None)
        _watched.discard(concrete)

    def __call__(self, tensor_inputs: Any, captured_inputs: Any, *more: Any, **options: Any) -> Any:
        concrete = self.concrete()
        if not executing_eagerly():  # Called in another trace: it runs as part of that graph.
            if not self.xla:
                self._drop(concrete)
            return _CALL_FLAT(concrete, tensor_inputs, captured_inputs, *more, **options)
        tracing, self.tracing = self.tracing, None
        if tracing is None and not self.xla:
            self._drop(concrete)
            return _CALL_FLAT(concrete, tensor_inputs, captured_inputs, *more, **options)
        key, compiled = None, None
        if self.xla:
            try:
                key, compiled = self._shapes(tensor_inputs)
            except Exception:  # Bookkeeping never breaks the user's call: this call goes unread.
                _log.exception("Reading the shapes XLA compiles for %s failed", self.xla_functions)
        if tracing is None and (key is None or key in self.shapes):
            return _CALL_FLAT(concrete, tensor_inputs, captured_inputs, *more, **options)
        start = time.perf_counter()
        try:
            result = _CALL_FLAT(concrete, tensor_inputs, captured_inputs, *more, **options)
        finally:
            seconds = time.perf_counter() - start
            if tracing is not None and not tracing.completed:  # The first call.
                tracing.phases["compile" if self.xla else "lower"] = seconds
                tracing.compiled_arguments = compiled
            if not self.xla:
                self._drop(concrete)
        if key is not None:
            self.shapes.add(key)
        if tracing is None and compiled is not None:
            self._report(compiled, start, seconds)
        return result

    def _shapes(self, tensor_inputs: Any) -> tuple[tuple | None, dict[str, Any] | None]:
        """What XLA's cache keys this call by, and the call's arguments as compiled."""
        key: list[Any] = []
        opaque = False
        for tensor in tensor_inputs:
            try:
                dtype = tensor._datatype_enum()
                shape = tensor._shape_tuple()
            except AttributeError:  # A variable: its dtype and shape.
                try:
                    dtype, shape = tensor.dtype.as_datatype_enum, tuple(tensor.shape.as_list())
                except (AttributeError, ValueError):
                    return None, None
            opaque = opaque or dtype in _OPAQUE
            key.append((dtype, shape))
        call = _function_calls.current_call()
        function = None if self.function is None else self.function()
        arguments = None
        if call is not None and call.function is function and function is not None:
            arguments = _calling_code.bind_arguments(function.python_function, call.args, call.kwargs)
        if opaque:  # A step fed an iterator: the batch sizes its steps take now.
            if arguments is None:
                return None, None
            for name, value in arguments.items():
                spec = getattr(value, "element_spec", None)
                if spec is None or not hasattr(value, "__next__"):
                    continue
                sizes = _keras_batches.step_batch_sizes(value, sys._getframe(2), _dataset_batches)
                if not sizes:
                    return None, None
                key.append((name, sizes[-1]))
                arguments = {**arguments, name: _with_batch(spec, sizes[-1])}
        if arguments is None:
            arguments = {f"input_{index}": tensor for index, tensor in enumerate(tensor_inputs)}
        return tuple(key), arguments

    def _report(self, arguments: dict[str, Any], start: float, seconds: float) -> None:
        """Reports one XLA compilation without a trace, as it ends (listeners may raise)."""
        function = None if self.function is None else self.function()
        if function is None:
            return
        python_function = function.python_function
        while hasattr(python_function, "__wrapped__"):
            python_function = python_function.__wrapped__
        tracing = _function_tracing.begin(
            "tf.function", function.name, function, getattr(python_function, "__func__", python_function),
            arguments, compilation=True)
        tracing.start = start
        tracing.xla, tracing.xla_functions = True, self.xla_functions
        tracing.phases["compile"] = seconds
        frame, tracing.entry = _calling_code.user_frame(sys._getframe(2))
        if frame is not None:
            tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
            tracing.caller = frame.f_code.co_name
        tracing.function_text = _calling_code.function_text(function.python_function)
        _function_tracing.end(tracing)


def _with_batch(spec: Any, size: int) -> Any:
    """`spec` (an iterator's `element_spec`) with `size` as each tensor's batch dimension."""
    def batched(item: Any) -> Any:
        shape = getattr(item, "shape", None)
        if not isinstance(item, _tensor_spec.TensorSpec) or shape is None or shape.rank is None \
                or shape.rank == 0:
            return item
        return _tensor_spec.TensorSpec(_tensor_shape.TensorShape([size, *shape.as_list()[1:]]),
                                       item.dtype)
    return _nest.map_structure(batched, spec)


def _dataset_batches(adapter: Any) -> tuple[int, int | None] | None:
    """(batch size, partial last batch's size or None) of a Keras adapter's `tf.data.Dataset`:
    its `batch()`, through element-wise transformations after it; None when not known."""
    dataset = getattr(adapter, "_dataset", None)
    for _ in range(16):
        if dataset is None:
            return None
        if isinstance(dataset, _BATCH_DATASET):
            size = _tensor_util.constant_value(dataset._batch_size)
            drop = _tensor_util.constant_value(dataset._drop_remainder)
            if size is None or drop is None:
                return None
            if drop:
                return int(size), None
            count = int(dataset._input_dataset.cardinality())
            return (int(size), (count % int(size)) or None) if count >= 0 else None
        if type(dataset).__name__ not in _ELEMENTWISE_DATASETS:
            return None
        dataset = getattr(dataset, "_input_dataset", None)
    return None
