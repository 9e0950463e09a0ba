"""Where TensorFlow is running now: eagerly, in which graph, under XLA, in which replica.

Part of the TensorFlow backend (see `tensorflow.backend`); imported only when Keras runs
on TensorFlow.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/context.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/ops.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/ops/control_flow_util.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/ops/control_flow_v2_func_graphs.py
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.eager import context as _eager_context
from tensorflow.python.framework import ops as _tf_ops
from tensorflow.python.ops import control_flow_util as _control_flow_util
from tensorflow.python.ops import control_flow_v2_func_graphs as _control_flow_graphs

from traceguard._compat import _flavors
from traceguard._compat._flavors import internal_missing


def executing_eagerly() -> bool:
    """`tf.executing_eagerly()`, asked the way `Context.executing_eagerly` answers it.

    Every eager step of a trace-aware layer asks twice, and `tf.executing_eagerly()`
    takes three Python calls to read this per-thread flag. Before TensorFlow has
    made its context (`_context` is None), the public function answers.
    """
    try:
        return _eager_context._context._thread_local_data.is_eager
    except AttributeError:
        return tf.executing_eagerly()


# Keras 2 infers a layer's outputs by running `call` in a FuncGraph named
# `<layer name>_scratch_graph` (`Layer._infer_output_signature`, and the default
# `compute_output_shape`), in every Keras 2 from 2.4 to tf_keras 2.21.
KERAS2_SCRATCH_GRAPH_SUFFIX = "_scratch_graph"


# `tf.compat.v1` is a lazily loaded module: each attribute read goes through its
# `__getattribute__`. Read once here; every logged run asks for the graph.
# This thread's default graph: a trace's FuncGraph, or the global graph when eager. A
# logged run fetches it once and hands it to the functions below (`graph=`). What
# `tf.compat.v1.get_default_graph()` returns through two more Python calls: the
# thread-local stack's `get_default` (tensorflow/python/framework/ops.py, TF 2.12-2.21).
_graph_stack = getattr(_tf_ops, "_default_graph_stack", None)
if not callable(getattr(_graph_stack, "get_default", None)):
    raise internal_missing("tensorflow.python.framework.ops._default_graph_stack.get_default")
_get_default_graph = _graph_stack.get_default
default_graph = _get_default_graph


# The FuncGraphs TensorFlow builds for the branches of `tf.cond` and the condition and
# body of `tf.while_loop` inside a trace (tensorflow/python/ops/control_flow_v2_func_graphs.py,
# TF 2.0 to 2.21): a layer run in one is part of the enclosing function's trace.
def _control_flow_graph_types() -> tuple[tuple[type, str], ...]:
    names = (("WhileBodyFuncGraph", "tf.while_loop"), ("WhileCondFuncGraph", "tf.while_loop"),
             ("CondBranchFuncGraph", "tf.cond"))
    found = tuple((getattr(_control_flow_graphs, name, None), label) for name, label in names)
    if not all(isinstance(graph_type, type) for graph_type, _ in found):
        raise internal_missing("control_flow_v2_func_graphs.WhileBodyFuncGraph, CondBranchFuncGraph")
    return found


_CONTROL_FLOW_GRAPH_TYPES = _control_flow_graph_types()


def control_flow_of(graph: Any = None) -> str | None:
    """`"tf.while_loop"` or `"tf.cond"` when `graph` (default: the default graph) is the body,
    condition or branch of one, traced inside an enclosing trace; else None."""
    graph = _get_default_graph() if graph is None else graph
    for graph_type, label in _CONTROL_FLOW_GRAPH_TYPES:
        if isinstance(graph, graph_type):
            return label
    return None


def current_graph_name() -> str | None:
    graph = _get_default_graph()
    return getattr(graph, "name", None)


def in_symbolic_build() -> bool:
    """True while Keras runs `call` on symbolic inputs to infer shapes or build."""
    keras3 = _flavors._flavors.get("keras3")  # `loaded_flavor`, without a call: every logged run asks.
    if keras3 is not None and keras3.symbolic_scope():
        return True
    if _flavors._keras2_layer_bases:
        name = current_graph_name()
        return name is not None and name.endswith(KERAS2_SCRATCH_GRAPH_SUFFIX)
    return False


if not callable(getattr(_control_flow_util, "GraphOrParentsInXlaContext", None)):
    raise internal_missing("tensorflow.python.ops.control_flow_util.GraphOrParentsInXlaContext")


def in_xla_context() -> bool:
    """True while tracing code that XLA will compile (`jit_compile=True`, TPU).

    `tf.function(jit_compile=True)` enters an `XLAControlFlowContext` on the
    graph it traces (`OptionalXlaContext` in polymorphic_function.py); TF's own
    ops ask the same question with `GraphOrParentsInXlaContext`, which also
    sees an enclosing jit-compiled function through `outer_graph`.
    """
    return _control_flow_util.GraphOrParentsInXlaContext(_get_default_graph())


if not isinstance(getattr(tf.Graph, "_distribution_strategy_stack", None), property):
    raise internal_missing("tensorflow.python.framework.ops.Graph._distribution_strategy_stack")


def current_replica(graph: Any = None) -> int | None:
    """The replica id under `tf.distribute`, else None. `graph`: the default graph, if known."""
    # Every logged run asks. With no strategy scope entered, this thread's stack is
    # empty and `tf.distribute.has_strategy()` is False; reading the stack takes one
    # Python call where `has_strategy()` takes seven or more and a caught IndexError
    # (`_get_per_thread_mode` in tensorflow/python/distribute/distribute_lib.py).
    if not (_get_default_graph() if graph is None else graph)._distribution_strategy_stack \
            or not tf.distribute.has_strategy():
        return None
    context = tf.distribute.get_replica_context()
    if context is None:  # Cross-replica context.
        return None
    # A constant tensor inside tf.function; `get_static_value` gives a 0-d array.
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return None if replica is None else int(replica)


class ContextValue:
    """A field of a tf.function call's function context, compared as TensorFlow compares it (its
    value's own `==` and hash: device functions and ops by identity), read as text a person
    knows: a device `/job:localhost/replica:0/task:0/device:CPU:1`, a graph's name, an op's name.

    TensorFlow's `EagerContext` (function_context.py, TF 2.12-2.21) holds the graph a call is
    made from, the device functions (`MergeDevice` objects, or the user's device functions) and
    the colocation stack (ops) of a graph being built: their `repr` is an object address.
    """

    __slots__ = ("value", "text")

    def __init__(self, value: Any, text: str) -> None:
        self.value, self.text = value, text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ContextValue) and bool(self.value == other.value)

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            return id(self.value)

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _device_text(device_function: Any) -> str:
    # `MergeDevice` keeps its `DeviceSpec` as `_spec` (tensorflow/python/framework/device.py,
    # TF 2.12-2.21); a device function of the user's is a callable, named by its qualified name.
    spec = getattr(device_function, "_spec", None)
    to_string = getattr(spec, "to_string", None)
    if callable(to_string):
        return to_string() or "(no device)"
    if isinstance(device_function, str):
        return device_function or "(no device)"
    name = getattr(device_function, "__qualname__", None) or type(device_function).__name__
    return f"device function {name}"


def _graph_text(graph: Any) -> str:
    if graph is None:
        return "eager"
    name = getattr(graph, "name", None)
    return f"graph '{name}'" if name else "the global graph"


def readable_context_value(name: str, value: Any) -> Any:
    """`value` of the function-context field `name`, as a `ContextValue` where its `repr` is an
    object's address (a graph, device functions, ops); other values (booleans, numbers, the
    variable policy) as they are."""
    if name == "parent_graph" and value is not None:
        return ContextValue(value, _graph_text(value))
    if name == "device_functions" and isinstance(value, tuple):
        return ContextValue(value, ", ".join(map(_device_text, value)) or "none")
    if name == "colocation_stack" and isinstance(value, tuple):
        return ContextValue(value, ", ".join(str(getattr(op, "name", op)) for op in value) or "none")
    return value
