"""What a graph being built is: a function trace's own, a control-flow body, a Keras scratch graph.

Read from the graph's type and `outer_graph` chain (TensorFlow's own record of where a
body is traced), and from `_function_tracing`, which knows the graphs of the traces its
listeners see. Part of the TensorFlow backend, beside `traces` (the hook that starts them).

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/ops/control_flow_v2_func_graphs.py
"""

from __future__ import annotations

from typing import Any

from tensorflow.python.ops import control_flow_v2_func_graphs as _control_flow_graphs

from traceguard._compat import _function_tracing

# `tf.while_loop` and `tf.cond` (v2, every graph inside a tf.function) trace their
# bodies into FuncGraphs of these types, whose `outer_graph` is the graph around them
# (tensorflow/python/ops/control_flow_v2_func_graphs.py, TF 2.12 to 2.21).
_CONTROL_FLOW_GRAPHS = (
    (_control_flow_graphs.WhileBodyFuncGraph, "while_body"),
    (_control_flow_graphs.WhileCondFuncGraph, "while_cond"),
    (_control_flow_graphs.CondBranchFuncGraph, "cond_branch"),
)
# See `tensorflow.function._KERAS_SCRATCH_GRAPH_PREFIX`, and `tensorflow.context.KERAS2_SCRATCH_GRAPH_SUFFIX`.
_KERAS_SCRATCH_PREFIX, _KERAS2_SCRATCH_SUFFIX = "scratch_graph", "_scratch_graph"
GRAPH_ROLES = ("eager", "function", "while_body", "while_cond", "cond_branch", "keras_scratch",
               "other")


def graph_role(graph: Any) -> str:
    """What `graph` is: one of `GRAPH_ROLES`.

    `"function"` is a graph a function trace builds while a listener sees it (see
    `_function_tracing.tracing_of_graph`); `"other"` any other FuncGraph.
    """
    if graph is None or not getattr(graph, "building_function", False):
        return "eager"
    for graph_type, role in _CONTROL_FLOW_GRAPHS:
        if isinstance(graph, graph_type):
            return role
    if id(graph) in _function_tracing._running_by_graph:
        return "function"
    name = getattr(graph, "name", "")
    if name.startswith(_KERAS_SCRATCH_PREFIX) or name.endswith(_KERAS2_SCRATCH_SUFFIX):
        return "keras_scratch"
    return "other"


def function_graph_of(graph: Any) -> Any:
    """The graph of the function trace that `graph` is built in, hooked or not.

    Goes outward (`outer_graph`) past control-flow bodies and Keras's scratch
    graphs: the FuncGraph `tensorflow.function` keys a trace's facts by. `graph` itself
    when it is such a graph; None for an eager (global) graph.
    """
    while graph is not None and graph_role(graph) in ("while_body", "while_cond", "cond_branch",
                                                      "keras_scratch"):
        graph = getattr(graph, "outer_graph", None)
    return None if graph is None or not getattr(graph, "building_function", False) else graph


def control_flow_path(graph: Any) -> tuple[str, ...]:
    """The control-flow bodies from the enclosing function trace's graph in to `graph`.

    `("while_body",)` for an RNN cell's run inside a Keras step; `()` when `graph`
    is a function trace's own graph, or outside any trace.
    """
    roles: list[str] = []
    while graph is not None and id(graph) not in _function_tracing._running_by_graph:
        role = graph_role(graph)
        if role in ("while_body", "while_cond", "cond_branch"):
            roles.append(role)
        graph = getattr(graph, "outer_graph", None)
    return tuple(reversed(roles)) if graph is not None else ()
