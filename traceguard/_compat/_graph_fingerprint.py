"""Whether a `tf.function`'s retrace built the same computation as an earlier trace.

A fingerprint is a hash of the FuncGraph's `GraphDef` with everything that names
or shapes removed: node names become their position, inputs the position of the
node (and output) they read, attributes starting with `_` and those about shapes
(`shape`, `output_shapes`, ...) are dropped, and a function attribute (a
`tf.cond` branch, a `tf.while_loop` body) is replaced by the fingerprint of the
function it names. Two graphs with the same fingerprint run the same ops, wired
the same way, with the same constants; only their shapes may differ.

Serialising a graph is not free (a 20-layer Keras train step: about 2,400 ops,
tens of milliseconds), so nothing is computed at a function's first trace: each
trace's graph is kept by weak reference per function object, and only when the
same object traces again (a retrace) are its graph and its earlier ones
fingerprinted, once each. Traces in another phase (the variable-lifting retrace
of a first trace that created variables) or for saving are not compared. The
graphs are read through `FuncGraph.as_graph_def()` (public API on `tf.Graph`);
what is private is which graph a trace builds (see `tensorflow.traces`). On JAX,
`jax.traces` compares jaxprs the same way (`jaxpr_fingerprint` there). State
lives only while the hook is installed: `forget()` drops it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

# Graphs remembered per function object, to bound the memory of a function that
# retraces without end.
_MAX_GRAPHS = 64
# Function objects remembered before the dead ones are dropped.
_MAX_FUNCTIONS = 1024

_lock = threading.Lock()
# (weak reference to the function object, phase) -> [[serial, weak graph, fingerprint or None]].
_graphs: dict[tuple[Any, Hashable], list[list[Any]]] = {}


def same_graph_as(function: Any, phase: Hashable, serial: int, graph: Any,
                  fingerprint_of: Callable[[Any], int | None] | None = None) -> int | None:
    """The serial of the earliest earlier trace of `function` that built the same graph.

    `function` is the weak reference to the function object (`FunctionTracing.function`),
    `graph` the FuncGraph the trace `serial` just built (on JAX, its jaxpr, with
    `fingerprint_of` the jaxpr's fingerprint); only graphs of the same `phase` are
    compared (TensorFlow's tracing phase; on JAX, the hash of the tracing context). None
    at a first trace, when no earlier graph of the same object and phase is the same, or
    when unknown.
    """
    fingerprint_of = fingerprint_of or fingerprint
    key = (function, phase)
    entry = [serial, weakref.ref(graph), None]
    with _lock:
        if key not in _graphs and len(_graphs) >= _MAX_FUNCTIONS:
            # Functions made anew per call (a model rebuilt per iteration): forget the dead ones.
            for dead in [k for k in _graphs if k[0]() is None]:
                del _graphs[dead]
        earlier = _graphs.setdefault(key, [])
        earlier.append(entry)
        if len(earlier) > _MAX_GRAPHS:
            del earlier[0]
        earlier = earlier[:-1]
    if not earlier:
        return None  # A first trace: nothing to compare, nothing computed.
    # Fingerprinted outside the lock: replicas of a distributed step trace on several threads.
    entry[2] = fingerprint_of(graph)
    if entry[2] is None:
        return None
    for old in earlier:
        if old[2] is None:
            old_graph = old[1]()
            old[2] = fingerprint_of(old_graph) if old_graph is not None else False
        if old[2] not in (None, False) and old[2] == entry[2]:
            return old[0]
    return None


def forget() -> None:
    """Drops every graph remembered (the hook is being removed)."""
    with _lock:
        _graphs.clear()


def fingerprint(graph: Any) -> int | None:
    """A hash of `graph`'s computation without names and shapes; None if it cannot be read."""
    try:
        graph_def = graph.as_graph_def()
    except Exception:  # A graph that cannot be serialised: no claim about it.
        return None
    functions = {function.signature.name: function for function in graph_def.library.function}
    memo: dict[str, str] = {}
    return hash(_nodes_key(graph_def.node, functions, memo))


def _function_key(name: str, functions: dict[str, Any], memo: dict[str, str]) -> str:
    key = memo.get(name)
    if key is None:
        memo[name] = "recursive"  # A function that names itself.
        function = functions.get(name)
        key = name if function is None else str(hash(_nodes_key(function.node_def, functions, memo)))
        memo[name] = key
    return key


def _nodes_key(nodes: Any, functions: dict[str, Any], memo: dict[str, str]) -> bytes:
    index = {node.name: str(position) for position, node in enumerate(nodes)}
    parts = []
    for node in nodes:
        inputs = []
        for name in node.input:
            control = name.startswith("^")
            base, separator, port = (name[1:] if control else name).partition(":")
            inputs.append(("^" if control else "") + index.get(base, base) + separator + port)
        node.ClearField("name")
        node.ClearField("device")
        del node.input[:]
        node.input.extend(inputs)
        attributes = node.attr
        for attribute in [a for a in attributes if a.startswith("_") or "shape" in a]:
            del attributes[attribute]
        for value in attributes.values():
            if value.HasField("func"):
                value.func.name = _function_key(value.func.name, functions, memo)
            elif value.HasField("list"):
                for item in value.list.func:
                    item.name = _function_key(item.name, functions, memo)
        parts.append(node.SerializeToString(deterministic=True))
    return b"\n".join(parts)
