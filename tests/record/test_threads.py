"""Threads: one layer called from many threads loses, duplicates and misorders no event."""

import collections
import threading

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg
from traceguard import _compat
from traceguard._core.events import GRAPH_TRACE_KINDS

pytestmark = pytest.mark.backend("tensorflow")

THREADS = 8
CALLS = 200


class Projection(tg.TraceAwareLayer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(4)

    def call(self, inputs):
        return self.dense(inputs)


def run_threads(work):
    """Runs `work(i)` in THREADS threads started together; returns their exceptions."""
    barrier = threading.Barrier(THREADS)
    errors = []

    def target(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as error:  # noqa: BLE001 - reported by the test.
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,), name=f"worker-{i}") for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def assert_indices_contiguous_in_order(log):
    assert [event.index for event in log] == list(range(1, len(log) + 1))


def test_threads_calling_one_tf_function_log_each_trace_exactly_once():
    layer = Projection(trace_log_size=10_000)
    step = tf.function(layer)
    outputs = {}

    def work(i):
        x = tf.ones((i + 1, 3))
        for _ in range(CALLS):
            outputs[i] = step(x)

    assert run_threads(work) == []
    log = layer.trace_log
    graph_traces = [event for event in log if event.kind in GRAPH_TRACE_KINDS]
    assert len(graph_traces) == step.experimental_get_tracing_count()
    assert layer.__dict__["_traceguard_state"].graph_traces == len(graph_traces)
    assert_indices_contiguous_in_order(log)
    assert log.dropped == 0 and log.eager_calls == 0
    # Each batch size is traced once (the first thread's twice: variables were created).
    by_kind = collections.Counter(event.kind.value for event in graph_traces)
    assert by_kind == {"trace": 1, "variable_retrace": 1, "retrace": THREADS - 1}
    first = next(event for event in log if event.kind is tg.TraceKind.TRACE)
    signatures = collections.Counter(str(event.signature["inputs"]) for event in graph_traces)
    assert signatures == {f"float32[{i + 1},3]": 1 for i in range(THREADS)} | {
        str(first.signature["inputs"]): 2}
    # Every event names the thread that ran it, and its signature is that thread's batch size.
    for event in graph_traces:
        assert str(event.signature["inputs"]) == f"float32[{int(event.thread.split('-')[1]) + 1},3]"
    for i, output in outputs.items():
        np.testing.assert_allclose(output, layer(tf.ones((i + 1, 3))), rtol=1e-6)


def test_threads_with_their_own_tf_function_each_record_one_first_trace():
    layer = Projection()
    layer(tf.ones((1, 3)))
    functions = [tf.function(layer) for _ in range(THREADS)]

    def work(i):
        for _ in range(CALLS // 4):
            functions[i](tf.ones((i + 1, 3)))

    assert run_threads(work) == []
    traces = layer.trace_log.filter(GRAPH_TRACE_KINDS)
    assert sorted(event.thread for event in traces) == sorted(f"worker-{i}" for i in range(THREADS))
    assert {event.kind for event in traces} == {tg.TraceKind.TRACE}
    assert layer.__dict__["_traceguard_state"].graph_traces == THREADS
    assert_indices_contiguous_in_order(layer.trace_log)


def test_concurrent_eager_runs_are_counted_and_logged_in_index_order():
    layer = Projection(log_eager=True, trace_log_size=10_000)
    layer(tf.ones((1, 3)))

    def work(i):
        for _ in range(CALLS):
            layer(tf.ones((i + 1, 3)))

    assert run_threads(work) == []
    log = layer.trace_log
    assert log.eager_calls == THREADS * CALLS + 1
    assert log.count("eager") == THREADS * CALLS + 1
    assert_indices_contiguous_in_order(log)


def test_concurrent_runs_past_the_bound_keep_the_newest_by_index():
    layer = Projection(log_eager=True, trace_log_size=50)
    layer(tf.ones((1, 3)))

    def work(i):
        for _ in range(CALLS):
            layer(tf.ones((1, 3)))

    assert run_threads(work) == []
    log = layer.trace_log
    # With the first eager run, after Keras 3's symbolic build pass (Keras 2 has none).
    total = THREADS * CALLS + (2 if _compat.IS_KERAS_3 else 1)
    assert len(log) == 50 and log.dropped == total - 50
    assert [event.index for event in log] == list(range(total - 49, total + 1))


def test_log_keeps_index_order_when_runs_finish_out_of_order():
    def event(index):
        return tg.TraceEvent(index=index, kind=tg.TraceKind.TRACE, layer="l", function="f",
                             signature={}, changes=(), created_variables=(), reason="", hint=None,
                             timestamp=0.0, duration_s=0.0, thread="t")

    log = tg.TraceLog(3)
    for index in (2, 1, 4, 3):
        log._append(event(index))
    assert [e.index for e in log] == [2, 3, 4] and log.dropped == 1
    log._append(event(1))  # Older than everything kept: it is the one dropped.
    assert [e.index for e in log] == [2, 3, 4] and log.dropped == 2
