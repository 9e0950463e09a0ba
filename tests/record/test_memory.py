"""Memory: the log stays bounded and flat, and keeps nothing of TensorFlow or the layer alive.

The long version is benchmarks/log_memory.py.
"""

import contextlib
import gc
import tracemalloc
import weakref

import pytest
import tensorflow as tf
from conftest import SeedLayer, keras
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._record.layer_state import REMEMBERED_FUNCTIONS, REMEMBERED_TRACES, STATE_ATTRIBUTE

pytestmark = pytest.mark.backend("tensorflow")

# A run that keeps everything it allocated would grow memory by well over a kilobyte.
FLAT_BYTES = 64 * 1024


class Scaled(tg.TraceAwareLayer):
    def call(self, inputs, k=1):
        return inputs


@contextlib.contextmanager
def traced_memory():
    """Traces allocations inside the block; yields a function giving the live traced bytes."""
    tracemalloc.start()
    try:
        yield lambda: (gc.collect(), tracemalloc.get_traced_memory()[0])[1]
    finally:
        tracemalloc.stop()


def make_event(index):
    return tg.TraceEvent(index=index, kind=tg.TraceKind.RETRACE, layer="layer", function="step",
                         signature={"inputs": f"float32[{index},3]"},
                         changes=(f"inputs: dim 0 {index - 1} -> {index}",), created_variables=(),
                         reason=f"The tf.function `step` traced again: {index}.", hint=None,
                         timestamp=0.0, duration_s=0.0, thread="MainThread")


def test_log_of_100_000_events_keeps_trace_log_size_and_flat_memory():
    log = tg.TraceLog(1000)
    for index in range(1, 80_001):
        log._append(make_event(index))
    # Tracing allocations is slow: the last 20,000 only, once the log holds traced events alone.
    with traced_memory() as measure:
        for index in range(80_001, 82_001):
            log._append(make_event(index))
        before = measure()
        for index in range(82_001, 100_001):
            log._append(make_event(index))
        growth = measure() - before
    assert len(log) == 1000 and log.dropped == 99_000
    assert (log[0].index, log[-1].index) == (99_001, 100_000)
    assert growth < FLAT_BYTES, f"grew by {growth} bytes over 18,000 events"


def test_recorder_memory_is_flat_over_thousands_of_retraces():
    layer = Scaled(trace_log_size=100)
    spec = tf.TensorSpec((2, 3))
    # Runs `call` as a graph trace would, each with a new Python value: a retrace every time.
    with tf.Graph().as_default():
        for k in range(300):
            layer.call(spec, k=k)
        with traced_memory() as measure:
            # Until the log and the remembered traces hold traced objects alone.
            for k in range(300, 500):
                layer.call(spec, k=k)
            first = measure()
            for k in range(500, 1000):
                layer.call(spec, k=k)
            second = measure()
            for k in range(1000, 2000):
                layer.call(spec, k=k)
            third = measure()
    log = layer.trace_log
    assert len(log) == 100 and log.dropped == 1900
    assert log[-1].kind is tg.TraceKind.RETRACE and texts(log[-1].changes) == ("k: 1998 -> 1999",)
    state = layer.__dict__[STATE_ATTRIBUTE]
    assert [len(traces) for traces in state.traces_by_function.values()] == [REMEMBERED_TRACES]
    assert third - second < FLAT_BYTES, f"grew by {third - second} bytes over 1,000 retraces"
    assert second - first < FLAT_BYTES, f"grew by {second - first} bytes over 500 retraces"


def test_classification_memory_keeps_a_bounded_number_of_functions():
    layer = Scaled()
    layer(tf.ones((1,)))
    for _ in range(REMEMBERED_FUNCTIONS + 10):
        tf.function(layer)(tf.ones((1,)))  # A new function each time: one trace each time.
    state = layer.__dict__[STATE_ATTRIBUTE]
    assert len(state.traces_by_function) == REMEMBERED_FUNCTIONS
    # All wrap the same layer: one origin, its traces bounded too.
    assert [len(traces) for traces in state.traces_by_origin.values()] == [REMEMBERED_TRACES]
    assert layer.trace_log.count(["trace", "retrace"]) == REMEMBERED_FUNCTIONS + 10
    assert state.graph_traces == REMEMBERED_FUNCTIONS + 10


def _traced_and_forgotten(read):
    layer = SeedLayer()
    step = tf.function(layer)
    step(tf.ones((2, 28)))
    step(tf.ones((5, 28)))
    graphs = [step.get_concrete_function(tf.ones((n, 28))).graph for n in (2, 5)]
    references = [weakref.ref(obj) for obj in (layer, step, layer.dense, *graphs, *layer.variables)]
    # Unread, the log holds the finished runs, whose events it makes on first read.
    return layer.trace_log, list(layer.trace_log) if read else None, references


@pytest.mark.parametrize("read", [True, False], ids=["read", "unread"])
def test_layer_and_its_graphs_are_collected_while_its_events_are_kept(read):
    log, events, references = _traced_and_forgotten(read)
    if not read:  # No event is made yet.
        assert not any(isinstance(entry, tg.TraceEvent) for entry in log._events)
    gc.collect()
    assert [reference() for reference in references] == [None] * len(references)
    # Keras 3 runs a symbolic build pass first; Keras 2 has none.
    assert [event.kind.value for event in log] == ["symbolic"] * _compat.IS_KERAS_3 + [
        "trace", "variable_retrace", "retrace"]
    assert log.to_dicts()[-1]["changes"] == ["inputs: dim 0 2 -> 5"]
    assert log[-2].created_variables == ()
    assert [event.index for event in log] == list(range(1, len(log) + 1))
    if read:
        assert events == list(log)
    assert log[0] is list(log)[0]  # Each event is made once.


def test_events_reference_only_plain_python_data(seed_input):
    layer = SeedLayer(log_eager=True)
    layer(seed_input)
    tf.function(layer)(seed_input[:3])
    keras_variable = (keras.Variable,) if _compat.IS_KERAS_3 else ()  # Keras 2's are tf.Variables.
    forbidden = (tf.Tensor, tf.Variable, tf.Graph, tf.types.experimental.GenericFunction,
                 keras.layers.Layer, *keras_variable, weakref.ref)
    seen, pending = set(), [layer.trace_log, *layer.trace_log]
    while pending:
        obj = pending.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        assert not isinstance(obj, forbidden), f"the log references {obj!r}"
        pending.extend(gc.get_referents(obj))
    # symbolic (Keras 3 only), eager, trace.
    assert [event.kind.value for event in layer.trace_log] == ["symbolic"] * _compat.IS_KERAS_3 + [
        "eager", "trace"]
