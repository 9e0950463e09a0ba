"""The report read back from a trace file equals the live report that wrote it, on real programs:
the same events per layer and per function, kinds, changes, counts and costs
(`trace_file_parity.report_differences`)."""

import json

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras
from trace_file_parity import (
    assert_same_function_events,
    assert_same_report,
    report_differences,
    restored_report,
)

import traceguard as tg
from traceguard import _compat
from traceguard._core.keras_names import KerasCall

pytestmark = pytest.mark.backend("tensorflow")


def layer_lines(path, layer):
    return [line for line in map(json.loads, path.read_text().splitlines())
            if line["type"] == "layer_run" and line["layer"] == layer]


def test_a_retracing_tf_function_reads_back_as_its_report(tmp_path):
    path = tmp_path / "step.jsonl"
    step = tf.function(lambda x, scale: x * scale)
    with tg.watch(trace_file=path) as report:
        for rows, scale in ((2, 1.0), (3, 1.0), (3, 2.0), (3, 2.0), (4, 2.0)):
            step(tf.ones((rows,)), scale)
    restored = assert_same_report(report, path)
    [runs] = restored.functions.values()
    assert runs.counts()["trace"] == 1
    assert runs.counts()["retrace"] == 3 == step.experimental_get_tracing_count() - 1


def test_a_function_event_read_back_views_the_trace_the_live_one_views(tmp_path):
    # A `FunctionEvent` is a view of its `FunctionTrace` and its cost: the trace rebuilt from the
    # file (`FunctionEvent.from_json`) is the live one, so each attribute is the live event's, on a
    # tf.function that retraces (changes, a Python value) and Keras steps with their costs.
    path = tmp_path / "views.jsonl"
    step = tf.function(lambda x, scale: x * scale)
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    with tg.watch(trace_file=path) as report:
        for rows, scale in ((2, 1.0), (3, 1.0), (3, 2.0)):
            step(tf.ones((rows,)), scale)
        model.fit(rng.random((70, 8)), rng.random((70, 4)), batch_size=32, verbose=0)
    assert assert_same_function_events(report, path) >= 5
    retrace = [event for runs in report.functions.values() for event in runs.events
               if event.kind.value == "retrace"][0]
    assert retrace.trace.changes == retrace.changes and retrace.miss_s is not None


def test_fit_with_a_partial_batch_reads_back_as_its_report(tmp_path):
    path = tmp_path / "fit.jsonl"
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4, name="dense")(inputs))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    with tg.watch(trace_file=path) as report:
        model.fit(rng.random((64, 8)), rng.random((64, 4)), batch_size=32, verbose=0)
        model.fit(rng.random((70, 8)), rng.random((70, 4)), batch_size=32, verbose=0)  # A last batch of 6.
    restored = assert_same_report(report, path)
    assert restored.count("retrace", layer="dense") == 1


def test_an_intermediate_model_per_inference_keeps_every_layer_run_in_the_file(tmp_path):
    # Each new `keras.Model` has a new predict function, which traces the shared layers again: a
    # first trace of each new function object, and each must reach the file.
    path = tmp_path / "intermediate.jsonl"
    inputs = keras.Input((10,))
    hidden = keras.layers.Dense(16, name="fc1")(inputs)
    outputs = keras.layers.Dense(4, name="output")(keras.layers.Dense(16, name="fc2")(hidden))
    model = keras.Model(inputs, outputs)
    x = np.ones((20, 10), "float32")
    with tg.watch(trace_file=path) as report:
        for _ in range(2):
            for layer in model.layers[1:]:
                keras.Model(inputs=model.inputs, outputs=layer.output).predict(x, verbose=0)
    restored = assert_same_report(report, path)
    fc1 = restored.layers["fc1"]
    # Each predict function is a new object: each of fc1's runs is that object's first trace.
    assert fc1.counts()["trace"] == 6 and fc1.counts()["retrace"] == 0
    assert [event.index for event in fc1.events] == [1, 2, 3, 4, 5, 6]
    assert len(layer_lines(path, "fc1")) == 6
    # A run's Keras method is read or None in the live report, never the recorder's "not asked yet"
    # placeholder, which has no JSON form (what made these runs miss the file).
    assert all(event.verdict.keras_call is None or isinstance(event.verdict.keras_call, KerasCall)
               for event in report.layers["fc1"].events)


def test_a_layer_run_in_a_tf_data_map_function_is_in_the_file(tmp_path):
    path = tmp_path / "map.jsonl"
    layer = keras.layers.Dense(4, name="mapped")
    with tg.watch(trace_file=path) as report:
        for rows in (8, 10):  # Two map functions of one lambda: the second is a new object.
            dataset = tf.data.Dataset.from_tensor_slices(np.ones((rows, 3), "float32")).batch(4)
            for _ in dataset.map(lambda x: layer(x)):
                pass
    restored = assert_same_report(report, path)
    runs = restored.layers["mapped"]
    assert len(runs.events) == len(layer_lines(path, "mapped"))
    # The first map function creates the layer's variables: TensorFlow traces it once more with
    # them lifted out, except TF 2.12's tf.data, which lifts them without a second trace (measured).
    assert [event.kind.value for event in runs.events] == (
        ["trace", "trace"] if _compat.TF_VERSION <= (2, 12) else ["trace", "variable_retrace", "trace"])
    # The second map function is a new object: the layer's run in it is that object's first trace.
    assert runs.events[-1].kind.value == "trace" and runs.events[-1].function.startswith("Dataset_map")


def test_the_comparison_names_what_a_file_lost(tmp_path):
    path = tmp_path / "lost.jsonl"
    step = tf.function(lambda x: x + 1)
    with tg.watch(trace_file=path) as report:
        for rows in (1, 2, 3):
            step(tf.ones((rows,)))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    second = [record["event"]["serial"] for record in records if record["type"] == "function_trace"][-1]
    kept = [record for record in records  # The last trace's record(s) lost.
            if record.get("serial", record.get("event", {}).get("serial")) != second]
    assert len(kept) < len(records)
    path.write_text("".join(json.dumps(record) + "\n" for record in kept))
    from trace_file_parity import restored_report

    differences = report_differences(report, restored_report(path))
    assert any("live only" in difference for difference in differences), differences
    assert any("kind_counts" in difference for difference in differences), differences


def test_a_record_that_cannot_be_written_is_counted_and_the_reader_warns(tmp_path, monkeypatch, caplog):
    from traceguard._core.events import TraceEvent
    written = TraceEvent.to_json
    calls = []

    def failing_once(event):  # The second layer run written has a value without a JSON form.
        calls.append(event)
        if len(calls) == 2:
            raise TypeError("no JSON form")
        return written(event)

    monkeypatch.setattr(TraceEvent, "to_json", failing_once)
    path = tmp_path / "short.jsonl"
    dense = keras.layers.Dense(2, name="dense")
    dense.build((None, 3))
    step = tf.function(lambda x: dense(x))
    with tg.watch(trace_file=path) as report:
        step(tf.ones((2, 3)))
        step(tf.ones((3, 3)))
    end = json.loads(path.read_text().splitlines()[-1])
    assert end["type"] == "end" and end["unwritten"] == 1
    assert "the record is left out and the file's end line counts it" in caplog.text
    with pytest.warns(UserWarning, match=r"1 record\(s\) could not be written"):
        restored = restored_report(path)
    # The live report has the run the file lacks, and the comparison says so.
    assert report_differences(report, restored)
