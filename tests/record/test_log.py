"""TraceLog: bounds, counters, filters, JSON, text."""

import dataclasses
import json

import pytest
import tensorflow as tf
from conftest import SeedLayer, kinds
from helpers import make_event, texts

import traceguard as tg
from traceguard._core.events import TraceEvent, TraceKind

pytestmark = pytest.mark.backend("tensorflow")


def test_log_keeps_newest_events_and_counts_dropped():
    log = tg.TraceLog(3)
    for index in range(1, 6):
        log._append(make_event(index))
    assert [event.index for event in log] == [3, 4, 5]
    assert log.dropped == 2 and len(log) == 3 and log.maxlen == 3
    assert log[0].index == 3 and log[-1].index == 5
    assert [event.index for event in log[1:]] == [4, 5]


def test_layer_log_bound_drops_oldest_while_indices_keep_counting():
    class Identity(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs

    layer = Identity(trace_log_size=2)
    step = tf.function(layer, reduce_retracing=False)
    for size in range(1, 6):
        step(tf.ones((size,)))
    assert [event.index for event in layer.trace_log] == [4, 5]
    assert layer.trace_log.dropped == 3


def test_clear_resets_counters_but_not_indices_or_classification_memory(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer()
    layer(seed_input)
    step = tf.function(layer)
    step(seed_input)
    layer.trace_log.clear()
    assert (len(layer.trace_log), layer.trace_log.dropped, layer.trace_log.eager_calls) == (0, 0, 0)
    step(seed_input[:10])
    (event,) = layer.trace_log
    assert event.index == keras_flavor.pick(3, 2)  # After Keras 3's symbolic run and the trace.
    assert event.kind is TraceKind.RETRACE and texts(event.changes) == ("inputs: dim 0 60 -> 10",)


def test_count_and_filter_by_kind_and_function():
    log = tg.TraceLog(10)
    log._append(make_event(1, TraceKind.SYMBOLIC, None))
    log._append(make_event(2, TraceKind.TRACE, "a"))
    log._append(make_event(3, TraceKind.RETRACE, "b"))
    assert log.count() == 3
    assert log.count("trace") == 1
    assert log.count([TraceKind.TRACE, "retrace"]) == 2
    assert [e.index for e in log.filter(function="b")] == [3]
    assert [e.index for e in log.filter(kind="trace", function="b")] == []


def test_unknown_kind_lists_valid_kinds():
    with pytest.raises(ValueError, match=r"one of eager, symbolic, trace, variable_retrace, retrace, save"
                       r".*Received: kind='retraces'"):
        tg.TraceLog(1).filter("retraces")
    with pytest.raises(ValueError, match="Received: kind=3"):
        tg.TraceLog(1).count(3)
    with pytest.raises(ValueError, match="Received: function=3"):
        tg.TraceLog(1).filter(function=3)


def test_to_dicts_is_json_serialisable_with_field_names(seed_input):
    layer = SeedLayer()
    tf.function(layer)(seed_input)
    dicts = json.loads(json.dumps(layer.trace_log.to_dicts()))
    assert [d["kind"] for d in dicts] == kinds(layer)
    # The fields, with the verdict's codes in place of the verdict.
    assert set(dicts[0]) == set(TraceEvent.__dataclass_fields__) - {"verdict"} | {"reason_code", "hint_code"}
    (lifted,) = [d for d in dicts if d["kind"] == "variable_retrace"]
    assert (dicts[0]["reason_code"], lifted["hint_code"]) == (
        "symbolic" if dicts[0]["kind"] == "symbolic" else "first_trace", "create_variables_first")
    assert dicts[0]["signature"] == {"inputs": "float32[60,28,28]"}
    assert dicts[1]["created_variables"] == list(layer.trace_log[1].created_variables)


def test_event_fields_describe_the_run(seed_input):
    layer = SeedLayer(name="seed")
    tf.function(layer)(seed_input)
    trace = layer.trace_log[1]
    assert trace.layer == "seed" and trace.function == "function"
    assert trace.thread == "MainThread" and trace.replica is None
    assert trace.messages == () and trace.error is None
    assert trace.duration_s >= 0 and trace.timestamp > 1.7e9
    with pytest.raises(AttributeError):
        trace.kind = TraceKind.EAGER


def test_summary_lists_counts_and_each_event(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(name="seed")
    step = tf.function(layer)
    step(seed_input)
    text = layer.trace_log.summary()
    symbolic = keras_flavor.pick("1 symbolic, ", "")
    assert text.splitlines()[0] == f"TraceLog of layer 'seed': {symbolic}1 trace, 1 variable_retrace"
    assert f"#{keras_flavor.pick(3, 2)} variable_retrace in function  (inputs=float32[60,28,28])" in text
    assert str(layer.trace_log) == text
    assert repr(layer.trace_log) == keras_flavor.pick(
        "<TraceLog 'seed': 3 events (symbolic=1, trace=1, variable_retrace=1)>",
        "<TraceLog 'seed': 2 events (trace=1, variable_retrace=1)>")


def test_event_repr_is_short_and_names_the_run():
    retrace = make_event(3, TraceKind.RETRACE, "step")
    retrace = dataclasses.replace(retrace, changes=("inputs: dim 0 32 -> 6",))
    assert repr(retrace) == "<TraceEvent #3 retrace of 'layer' in step: inputs: dim 0 32 -> 6>"
    assert repr(make_event(1, TraceKind.EAGER, None)) == "<TraceEvent #1 eager of 'layer'>"
