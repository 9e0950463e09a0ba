"""The hook that sees every `tf.function` trace (TensorFlow's retracing warning: `tensorflow.retracing`).

`tf.function` looks its cache up on every call and builds a graph only on a miss,
in one place per TensorFlow release:

- TF 2.14+: `tracing_compilation._create_concrete_function(function_type,
  type_context, func_graph, tracing_options)`, called by `_maybe_define_function`
  (whose `args`/`kwargs` locals are the call's arguments, bound and with defaults)
  after its cache lookup missed (tensorflow/python/eager/polymorphic_function/
  tracing_compilation.py; measured on TF 2.15 and 2.21).
- TF 2.12-2.13: `TracingCompiler._create_concrete_function(self, args, kwargs,
  func_graph)`, called by `TracingCompiler._maybe_define_function`, whose caller
  (`__call__` or `_maybe_define_concrete_function`) holds the call's `args` and
  `kwargs` (tracing_compiler.py; measured on TF 2.12).

The hook replaces that function while `_function_tracing`'s sink is connected, and puts
the original back exactly afterwards. It traces nothing itself, so traced graphs
keep their ops. The FuncGraph it is handed is the one `wrapped_fn` holds as
`default_graph` (see `tensorflow.function`): the same identity `TfFunctionFrame.trace`
refers to. Part of the TensorFlow backend; imported when the sink first connects.

This module hooks the trace and reads its call; `graphs` says what a graph being built is
(a function trace's own, a control-flow body, Keras's scratch graph) and where it sits.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/data/ops/structured_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/polymorphic_function.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/saved_model/save_context.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/tracing_compilation.py
- https://github.com/tensorflow/tensorflow/blob/v2.13.0/tensorflow/python/eager/polymorphic_function/tracing_compiler.py
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from tensorflow.python.data.ops import structured_function as _structured_function
from tensorflow.python.eager.polymorphic_function import polymorphic_function as _polymorphic_function
from tensorflow.python.saved_model import save_context as _save_context

from traceguard._compat import (
    _calling_code,
    _flavors,
    _function_tracing,
    _graph_fingerprint,
    _keras_optimizers,
)
from traceguard._compat._flavors import internal_missing
from traceguard._compat.tensorflow import calls as _tf_calls
from traceguard._compat.tensorflow import context as _tf_context
from traceguard._compat.tensorflow import data_elements as _tf_data_elements
from traceguard._compat.tensorflow import function as _tf_function

# Imported with the hook so that its control-flow graph types are checked when the hook is.
from traceguard._compat.tensorflow import graphs as _tf_graphs  # noqa: F401
from traceguard._compat.tensorflow import keys as _tf_trace_types

try:  # TF 2.14+.
    from tensorflow.python.eager.polymorphic_function import tracing_compilation as _compilation
except ImportError:  # TF 2.12-2.13.
    _compilation = None
    from tensorflow.python.eager.polymorphic_function import tracing_compiler as _tracing_compiler


def _check_parameters(function: Any, names: tuple[str, ...], what: str) -> None:
    try:
        found = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        found = ()
    if found != names:
        raise internal_missing(f"{what}{names} (found {found})")


def _check_locals(function: Any, names: tuple[str, ...], what: str) -> None:
    code = getattr(function, "__code__", None)
    if code is None or not set(names) <= set(code.co_varnames):
        raise internal_missing(f"{what} with the locals {names}")


# --- the function that builds a graph, per release ----------------------------------------
if _compilation is not None:
    _OWNER, _HOOKED = _compilation, "_create_concrete_function"
    _check_parameters(_compilation._create_concrete_function,
                      ("function_type", "type_context", "func_graph", "tracing_options"),
                      "tracing_compilation._create_concrete_function")
    _check_locals(_compilation._maybe_define_function, ("args", "kwargs", "lookup_func_type"),
                  "tracing_compilation._maybe_define_function")
    _CALLER = _compilation._maybe_define_function
    _SCOPE_PHASES = {_compilation.ScopeType.VARIABLE_CREATION: "variable_creation",
                     _compilation.ScopeType.NO_VARIABLE_CREATION: "no_variable_creation"}
else:
    _OWNER, _HOOKED = _tracing_compiler.TracingCompiler, "_create_concrete_function"
    _check_parameters(_tracing_compiler.TracingCompiler._create_concrete_function,
                      ("self", "args", "kwargs", "func_graph"),
                      "TracingCompiler._create_concrete_function")
    for _caller in ("__call__", "_maybe_define_concrete_function"):
        _check_locals(getattr(_tracing_compiler.TracingCompiler, _caller), ("args", "kwargs"),
                      f"TracingCompiler.{_caller}")
    _CALLER = _tracing_compiler.TracingCompiler._maybe_define_function
# The hook reads its caller's frame: it must be the only caller, and call it by name.
if _HOOKED not in _CALLER.__code__.co_names:
    raise internal_missing(f"{_CALLER.__qualname__} calling {_HOOKED}")
_ORIGINAL = _OWNER.__dict__[_HOOKED]

# The `Function` methods whose `self` is the tf.function being traced (see `tensorflow.function`).
_FUNCTION_CODES = (_tf_function._CALL_CODE, _tf_function._CONCRETE_FUNCTION_CODE)
if "_created_variables" not in _polymorphic_function.Function.__init__.__code__.co_names:
    raise internal_missing("polymorphic_function.Function._created_variables")

# `tf.data` traces a transformation's function (`map`, `filter`, ...) in
# `StructuredFunctionWrapper.__init__`, whose `func` is the user's function and
# `fn_factory` the bound `get_concrete_function` of what it traces: a `Function`
# (TF 2.14+) or a `TracingCompiler` (TF 2.12-2.13) (structured_function.py).
_STRUCTURED_INIT = _structured_function.StructuredFunctionWrapper.__init__
_check_locals(_STRUCTURED_INIT, ("func", "fn_factory", "self"), "StructuredFunctionWrapper.__init__")
_STRUCTURED_INIT_CODE = _STRUCTURED_INIT.__code__

# --- the hook ---------------------------------------------------------------------------
def install() -> None:
    """Patches the hook in (idempotent), the call-level hook (`tensorflow.calls`), and the note of what
    `tf.data` iterators hand out (`tensorflow.data_elements`)."""
    setattr(_OWNER, _HOOKED, _hooked if _compilation is not None else _hooked_method)
    _tf_calls.install()
    _tf_data_elements.install()


def uninstall() -> None:
    """Puts TensorFlow's own functions back, the very objects that were there."""
    setattr(_OWNER, _HOOKED, _ORIGINAL)
    _tf_calls.uninstall()
    _tf_data_elements.uninstall()
    _graph_fingerprint.forget()


def traces_before(function: Any) -> int | None:
    """How many times the `tf.function` `function` traced before its trace now ending.

    TF 2.14+ counts its function cache's entries (`experimental_get_tracing_count()`), which
    the trace joins when it returns; TF 2.12-2.13's `TracingCompiler` counts a trace as it
    begins (`tracing_count += 1`, the first line of `_create_concrete_function`).
    """
    count = getattr(function, "experimental_get_tracing_count", None)
    if not callable(count):
        return None
    return int(count()) - (0 if _compilation is not None else 1)


def is_installed() -> bool:
    return _OWNER.__dict__[_HOOKED] is not _ORIGINAL or _tf_calls.is_installed()


def _hooked(function_type: Any, type_context: Any, func_graph: Any, tracing_options: Any) -> Any:
    # TF 2.14+. The caller, `_maybe_define_function`, holds the bound arguments.
    caller = sys._getframe(1)
    # Another wrapper between would hold other locals: then the arguments stay unknown.
    given = caller.f_locals if caller.f_code is _CALLER.__code__ else {}
    tracing = _begin(caller, given, func_graph,
                     lambda function: function._function_cache is tracing_options.function_cache,
                     _SCOPE_PHASES.get(tracing_options.scope_type))
    if tracing is None:
        return _ORIGINAL(function_type, type_context, func_graph, tracing_options)
    lookup = given.get("lookup_func_type")
    tracing.relaxed = lookup is not None and lookup is not function_type
    _read_key(tracing, lookup, function_type if tracing.relaxed else None, given.get("current_func_context"))
    return _run(tracing, func_graph, _ORIGINAL, function_type, type_context, func_graph,
                tracing_options)


def _hooked_method(self: Any, args: Any, kwargs: Any, func_graph: Any) -> Any:
    # TF 2.12-2.13: `self` is a TracingCompiler; `_maybe_define_function`'s caller
    # holds the arguments as given (its own `args` are placeholders by now).
    caller = sys._getframe(1)
    given = caller.f_back.f_locals \
        if caller.f_code is _CALLER.__code__ and caller.f_back is not None else {}

    def owns(function: Any) -> bool:
        return self is getattr(function, "_variable_creation_fn", None) \
            or self is getattr(function, "_no_variable_creation_fn", None)

    tracing = _begin(caller, given, func_graph, owns, None, compiler=self)
    if tracing is None:
        return _ORIGINAL(self, args, kwargs, func_graph)
    if tracing.origin == "tf.function" and tracing.function is not None:
        function = tracing.function()
        if function is not None:
            tracing.phase = "variable_creation" \
                if self is getattr(function, "_variable_creation_fn", None) else "no_variable_creation"
    caller_locals = caller.f_locals
    lookup = caller_locals.get("lookup_func_type")
    target = caller_locals.get("target_func_type", lookup)
    tracing.relaxed = lookup is not target
    _read_key(tracing, lookup, target if tracing.relaxed else None, caller_locals.get("current_func_context"))
    return _run(tracing, func_graph, _ORIGINAL, self, args, kwargs, func_graph)


def _read_key(tracing: _function_tracing.FunctionTracing, lookup: Any, relaxed: Any,
              function_context: Any) -> None:
    """The call's cache key as TensorFlow compared it (`lookup_func_type`, and the
    `current_func_context` it looked it up in), and, when it relaxed the signature, the key it
    traced; a `tf.data` function keeps its elements' specs."""
    if tracing.origin != "tf.function" or lookup is None:
        return
    tracing.context = context_pairs(function_context)
    python_function = tracing.python_function
    try:
        tracing.signature = _tf_trace_types.function_type_signature(lookup, python_function)
        if relaxed is not None:
            tracing.relaxed_signature = _tf_trace_types.function_type_signature(relaxed, python_function)
    except Exception:  # The arguments' values are read instead (`_record.functions`).
        tracing.signature = tracing.relaxed_signature = None


def context_pairs(function_context: Any) -> tuple[tuple[str, Any], ...] | None:
    """The fields of a call's `FunctionContext.context`, an `EagerContext` (function_context.py,
    `make_function_context`: the graph it is called from, the device functions and colocation
    stack of a graph being built, whether a `tf.distribute` strategy is in its cross-replica
    context, the SavedModel variable policy, the enclosing XLA context), by name; TensorFlow keys
    its cache by them beside the arguments. None when not read."""
    context = getattr(function_context, "context", None)
    fields = getattr(context, "_fields", None)
    if not fields:
        return None
    readable = _tf_context.readable_context_value
    return tuple((name, readable(name, value)) for name, value in zip(fields, context))


def _run(tracing: _function_tracing.FunctionTracing, func_graph: Any, original: Callable[..., Any],
         *args: Any) -> Any:
    try:
        result = original(*args)
    except BaseException as error:
        if tracing.restored and _compilation is not None and not _function_tracing.stops_trace(error):
            # A restored function's body is TensorFlow's dispatcher to the saved concrete
            # functions: when none matches it raises having traced nothing, and TF 2.14+'s
            # `experimental_get_tracing_count()` does not move (measured, TF 2.21). TF 2.12-2.13
            # count the trace as it begins (measured, TF 2.12: 3): there it is recorded, raised.
            _function_tracing.discard(tracing, func_graph)
            raise
        tracing.raised = True
        _function_tracing.end(tracing, func_graph)
        raise
    if tracing.phase == "variable_creation" and tracing.function is not None:
        tracing.created_variables = _created_variable_names(tracing.function())
    elif tracing.phase == "no_variable_creation" and tracing.function is not None:
        # The retrace that lifting made: whose optimizers the first trace's variables are.
        references = getattr(tracing.function(), "_created_variables", None) or ()
        tracing.optimizer_builds = _keras_optimizers.optimizer_builds(
            [variable for variable in (reference() for reference in references) if variable is not None])
    # Keras's own steps are left out: fingerprinting a train step's graph takes tens of
    # milliseconds a retrace, and the fix of their retraces is in the data, not the graph.
    if not tracing.saving and not tracing.library_function:
        tracing.same_graph_as = _graph_fingerprint.same_graph_as(
            tracing.function, tracing.phase, tracing.serial, func_graph)
    _tf_calls.watch_concrete_function(result, tracing)
    _function_tracing.end(tracing, func_graph)
    return result


def _created_variable_names(function: Any) -> tuple[str, ...]:
    # `Function._initialize` collects weak references to the variables its first
    # trace creates in `_created_variables` (polymorphic_function.py, TF 2.12-2.21).
    references = getattr(function, "_created_variables", None) or ()
    names = []
    for reference in references:
        variable = reference()
        if variable is not None:
            name = getattr(variable, "name", "?")
            names.append(name[:-2] if name.endswith(":0") else name)
    return tuple(names)


def _begin(caller: Any, given: dict[str, Any], func_graph: Any, owns: Callable[[Any], bool],
           phase: str | None, compiler: Any = None) -> _function_tracing.FunctionTracing | None:
    """Walks up from the hook once: the tf.function, tf.data's wrapper, the user's frame."""
    function = data_frame = entry = None
    exporting = requested = False
    export_dirs = _flavors._KERAS_EXPORT_DIRS
    frame = caller
    while frame is not None:
        code = frame.f_code
        if export_dirs and code.co_filename.startswith(export_dirs):
            exporting = True
        qualname = getattr(code, "co_qualname", code.co_name)  # Python 3.11+ has the qualified name.
        if code is _FUNCTION_CODES[0] or code is _FUNCTION_CODES[1]:
            candidate = frame.f_locals.get("self")
            if function is None and candidate is not None and owns(candidate):
                function = candidate
                # Found in `get_concrete_function`'s frame: asked for, not a call's miss.
                requested = code is _FUNCTION_CODES[1]
        elif code is _STRUCTURED_INIT_CODE:
            factory = frame.f_locals.get("fn_factory")
            if getattr(factory, "__self__", None) is (compiler if function is None else function):
                data_frame = frame
        elif (function is not None or data_frame is not None) \
                and not _calling_code.is_library(code.co_filename):
            break  # The first user frame.
        # Not a decorator's wrapper (Keras's `error_handler`), nor traceguard's call hook.
        if "<locals>" not in qualname and not code.co_filename.startswith(_calling_code.OWN_DIR):
            entry = qualname
        frame = frame.f_back
    if function is None and data_frame is None:
        return None  # TF's own helper traces (`initialize_variables`, `fn_with_cond`).
    if data_frame is not None:
        python_function = data_frame.f_locals["func"]
        element_spec = getattr(data_frame.f_locals["self"], "_input_structure", None)
        owner = function if function is not None else compiler
        tracing = _function_tracing.begin(
            "tf.data", getattr(owner, "_name", "tf.data"), owner, python_function,
            _data_arguments(python_function, element_spec), func_graph)
    else:
        tracing = _begin_function(function, given, func_graph)
    tracing.phase = phase
    tracing.requested = requested
    # TF's save context, or Keras's `export` tracing before it enters it (see
    # `tensorflow.function.in_save_context`), seen between here and the user's frame.
    tracing.saving = exporting or _save_context.in_save_context()
    if frame is not None:
        _note_caller(tracing, frame, entry, given)
    return tracing


def _begin_function(function: Any, given: dict[str, Any],
                    func_graph: Any) -> _function_tracing.FunctionTracing:
    """The trace of a `tf.function` begins; a function `tf.saved_model.load` restored is the user's.

    Named as TensorFlow names it (its `name`, `__name__` and retracing warning): a restored
    function is `restored_function_body`, the name of TensorFlow's dispatcher.
    """
    wrapped, restored = function.python_function, _tf_function.is_restored(function)
    tracing = _function_tracing.begin(
        "tf.function", function.name, function,
        _unwrap(wrapped), _calling_code.bind_arguments(wrapped, given.get("args"), given.get("kwargs")),
        func_graph)
    tracing.function_text = _calling_code.function_text(wrapped)
    if restored:  # The user's saved function, not TensorFlow's dispatcher.
        tracing.restored, tracing.library_function, tracing.keras_call = True, False, None
    return tracing


def _note_caller(tracing: _function_tracing.FunctionTracing, frame: Any, entry: str | None,
                 given: dict[str, Any]) -> None:
    """Where the user's code made the trace, and whether a `tf.data` pipeline fed it."""
    tracing.call_site = (frame.f_code.co_filename, frame.f_lineno)
    tracing.caller = frame.f_code.co_name
    tracing.entry = entry  # The library function the user's frame called.
    # Fed by a `tf.data` pipeline: an argument is a tensor its iterator just handed out.
    if _tf_data_elements.came_from_dataset((given.get("args"), given.get("kwargs"))):
        tracing.data = "dataset"


def _unwrap(function: Any) -> Any:
    """The user's function behind TF's and functools' decorators, and a bound method."""
    seen = 0
    while hasattr(function, "__wrapped__") and seen < 16:
        function, seen = function.__wrapped__, seen + 1
    return getattr(function, "__func__", function)


def _data_arguments(function: Any, element_spec: Any) -> dict[str, Any]:
    # `wrapper_helper` passes a tuple element as separate arguments, anything else
    # as one (`_should_unpack`: a tuple, structured_function.py).
    values = element_spec if type(element_spec) is tuple else (element_spec,)
    return _calling_code.bind_arguments(function, values, {})
