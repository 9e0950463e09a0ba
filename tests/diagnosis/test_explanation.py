"""Explanation as data: grouping, order, bounds, filters, JSON and text, without TensorFlow runs."""

import json

import pytest
from helpers import FakeLayer, event

import traceguard as tg
from traceguard._core.events import TraceKind
from traceguard._diagnosis import explanation as _explanation
from traceguard._diagnosis.filler import Filler

pytestmark = pytest.mark.backend("tensorflow")


def test_events_are_grouped_per_layer_and_ordered_by_start():
    outer, inner = FakeLayer("outer"), FakeLayer("inner")
    explanation = tg.Explanation("test")
    # The inner run ends, and is reported, before the outer run that started first.
    Filler(explanation).record_event(inner, event(1, timestamp=2.0, layer="inner"))
    Filler(explanation).record_event(outer, event(1, timestamp=1.0, layer="outer"))
    Filler(explanation).record_eager(inner)
    assert list(explanation.layers) == ["outer", "inner"]
    assert [e.layer for e in explanation.events] == ["outer", "inner"]
    assert explanation.layers["inner"].eager_calls == 1
    assert explanation.layers["inner"].counts() == {
        "eager": 1, "symbolic": 0, "trace": 1, "variable_retrace": 0, "retrace": 0, "save": 0}


def test_layer_keeps_its_newest_events_and_counts_dropped(monkeypatch):
    monkeypatch.setattr(_explanation, "EVENTS_PER_LAYER", 3)
    layer = FakeLayer("busy")
    explanation = tg.Explanation("test")
    for index in range(1, 6):
        Filler(explanation).record_event(layer, event(index, timestamp=float(index)))
    runs = explanation.layers["busy"]
    assert [e.index for e in runs.events] == [3, 4, 5] and runs.dropped == 2
    assert [e.index for e in explanation.events] == [3, 4, 5]
    assert "; 2 older events dropped" in explanation.summary(full=True)


def test_snapshots_do_not_change_with_later_runs():
    layer = FakeLayer("layer")
    explanation = tg.Explanation("test")
    Filler(explanation).record_event(layer, event(1))
    layers, events = explanation.layers, explanation.events
    Filler(explanation).record_event(layer, event(2, TraceKind.RETRACE, timestamp=1.0))
    assert len(layers["layer"].events) == 1 and len(events) == 1
    assert explanation.count(of="layers") == 2 and explanation.count("retrace", of="layers") == 1
    assert explanation.count() == 0  # No function traced: count() counts function traces.


def test_filter_by_kind_layer_and_function():
    explanation = tg.Explanation("test")
    Filler(explanation).record_event(FakeLayer("a"), event(1, layer="a"))
    Filler(explanation).record_event(FakeLayer("b"), event(1, TraceKind.RETRACE, 1.0, layer="b"))
    assert [e.layer for e in explanation.filter(["trace", "retrace"])] == ["a", "b"]
    assert explanation.filter(layer="b")[0].kind is TraceKind.RETRACE
    assert explanation.filter(layer="missing") == [] and explanation.filter(function="other") == []
    with pytest.raises(ValueError, match="Received: kind='traced'"):
        explanation.filter("traced")


def test_to_dicts_is_json():
    explanation = tg.Explanation("test")
    Filler(explanation).record_event(FakeLayer("a"), event(1, layer="a"))
    dicts = json.loads(json.dumps(explanation.to_dicts()))
    assert dicts[0]["layer"] == "a" and dicts[0]["kind"] == "trace"


def test_text_shows_each_hint_once_per_layer():
    layer = FakeLayer("layer")
    explanation = tg.Explanation("test")
    for index in (1, 2):
        Filler(explanation).record_event(layer, event(index, TraceKind.SYMBOLIC, float(index), hint="Do X."))
    text = explanation.summary(full=True)
    # The second run's why and fix are the first's: printed once (#20).
    assert text.count("fix: Do X.") == 1 and text.count("why: as for 'layer' #1.") == 1


def test_empty_report_says_so():
    text = str(tg.Explanation("watch()"))
    assert text.splitlines()[0] == ("traceguard report for watch(): 0 functions traced; 0 layers: "
                                    "0 layer runs; 0 eager layer runs")
    assert "No problems: nothing traced more than once." in text
    assert "(no Keras layer ran its `call` body)" in text
    assert repr(tg.Explanation("x")) == \
        "<Explanation 'x': 0 functions traced 0 times; 0 layer events in 0 layers>"


def test_a_layer_called_twice_in_one_trace_is_one_trace_and_a_second_run():
    import tensorflow as tf

    dense = tf.keras.layers.Dense(2, name="twice")
    dense.build((None, 2))

    @tf.function
    def step(x):
        return dense(dense(x))

    with tg.watch() as report:
        step(tf.ones((3, 2)))
    assert [event.kind.value for event in report.layers["twice"].events] == ["trace", "trace"]
    lines = report.summary(full=True).splitlines()
    # Keras 3 passes `training=None` to `call`; Keras 2 does not.
    (second,) = [number for number, line in enumerate(lines)
                 if line.startswith("  #2 trace in step  (inputs=float32[3,2]")]
    assert lines[second - 2].startswith("     why: First trace of tf.function `step`")
    assert " ".join(line.strip() for line in lines[second + 1:second + 3]) == (
        "why: the same trace as #1: `step` calls this layer again (another run of its body, not another "
        "trace).")
