"""Trace files: written as records happen by watch(), TraceMonitor and `run --trace-file`; read
back, merged and exported by `python -m traceguard report` without TensorFlow."""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import jsonschema
import numpy as np
import pytest
import tensorflow as tf
from conftest import keras
from trace_file_parity import assert_same_report, restored_report, schema_errors

import traceguard as tg
from traceguard._diagnosis.report_files import report_files
from traceguard._diagnosis.trace_file import RECORD_TYPES, SCHEMA_VERSION
from traceguard._diagnosis.trace_file_reader import (
    TraceFileError,
    merged_explanation,
    read_trace_file,
    unique_labels,
)
from traceguard._reports.trace_events import trace_events
from traceguard.callbacks import TraceMonitor

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}

# The Trace Event Format's JSON Object Format, as documented ("Trace Event Format",
# Google, the document Perfetto's and chrome://tracing's JSON importers follow): the
# events this export writes, complete events ("X": ts and dur in microseconds) and
# metadata events ("M": process_name and thread_name with args.name).
TRACE_EVENT_SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "traceEvents": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["ph", "name", "pid", "tid", "ts", "dur", "cat", "args"],
             "properties": {"ph": {"const": "X"}, "name": {"type": "string"}, "cat": {"type": "string"},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "ts": {"type": "number", "minimum": 0}, "dur": {"type": "number", "minimum": 0},
                            "args": {"type": "object"}}},
            {"type": "object", "required": ["ph", "name", "pid", "args"],
             "properties": {"ph": {"const": "M"}, "name": {"enum": ["process_name", "thread_name"]},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "args": {"type": "object", "required": ["name"],
                                     "properties": {"name": {"type": "string"}}}}},
        ]}},
    },
}


def parsed_trace_events(path):
    """The export at `path`, checked against the format; its complete events by (pid, track name)."""
    with open(path, encoding="utf-8") as file:
        exported = json.load(file)
    jsonschema.validate(exported, TRACE_EVENT_SCHEMA)
    events = exported["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    by_track = {}
    for event in events:
        if event["ph"] == "X":
            track = (processes[event["pid"]], tracks[event["pid"], event["tid"]])
            by_track.setdefault(track, []).append(event)
    for track, marks in by_track.items():
        # One track's traces and runs never overlap; a function trace's phases nest in it, one
        # after the other.
        marks.sort(key=lambda mark: mark["ts"])
        for level in ([mark for mark in marks if mark["cat"] != "phase"],
                      [mark for mark in marks if mark["cat"] == "phase"]):
            assert all(a["ts"] + a["dur"] <= b["ts"] + 1 for a, b in zip(level, level[1:])), track
        for phase in (mark for mark in marks if mark["cat"] == "phase"):
            end = phase["ts"] + phase["dur"]
            assert any(outer["ts"] <= phase["ts"] + 1 and end <= outer["ts"] + outer["dur"] + 1
                       for outer in marks if outer["cat"] == "function_trace"), (track, phase)
        by_track[track] = [mark for mark in marks if mark["cat"] != "phase"]
    return by_track


def fit_twice(model_name, callbacks=()):
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4, name="dense")(inputs), name=model_name)
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 8)), rng.random((64, 4)), batch_size=32, verbose=0, callbacks=list(callbacks))
    model.fit(rng.random((70, 8)), rng.random((70, 4)), batch_size=32, verbose=0, callbacks=list(callbacks))
    return model


def test_watch_trace_file_reads_back_as_the_report_it_wrote(tmp_path):
    path = tmp_path / "watch.jsonl"
    step = tf.function(lambda x: x * 2)
    with tg.watch(trace_file=path, trace_file_label="worker-0") as report:
        fit_twice("partial")
        step(tf.ones((2,)))
        step(tf.ones((3,)))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header = lines[0]
    assert (header["type"], header["schema"], header["version"]) == ("header", "traceguard.trace-file", 3)
    assert (header["label"], header["pid"], header["backend"]) == ("worker-0", os.getpid(), "tensorflow")
    assert header["versions"]["tensorflow"] == tf.__version__ and header["traceguard"] == tg.__version__
    assert lines[-1]["type"] == "end"
    assert sum(line["type"] == "layer_run" for line in lines) == len(report.events)
    # Each trace once, as it ends; what its miss cost once, when its call returns.
    serials = [line["event"]["serial"] for line in lines if line["type"] == "function_trace"]
    assert sorted(serials) == \
        sorted(event.serial for runs in report.functions.values() for event in runs.events)
    costs = [line["serial"] for line in lines if line["type"] == "function_cost"]
    assert len(set(costs)) == len(costs) and set(costs) <= set(serials) and costs
    assert all(lines.index(cost) > min(number for number, line in enumerate(lines)
                                       if line.get("event", {}).get("serial") == cost["serial"])
               for cost in lines if cost["type"] == "function_cost")

    trace_file = read_trace_file(str(path))
    assert trace_file.complete and trace_file.label == "worker-0"
    restored = merged_explanation([trace_file])
    assert restored.title == "trace file worker-0"
    assert restored.events == report.events
    assert {name: runs.counts() for name, runs in restored.layers.items()} == \
        {name: runs.counts() for name, runs in report.layers.items()}
    assert restored.functions == report.functions
    assert restored.summary(full=True).replace("trace file worker-0", "watch()") == report.summary(full=True)


def test_trace_monitor_trace_file_marks_the_end_of_each_fit(tmp_path):
    path = tmp_path / "monitor.jsonl"
    monitor = TraceMonitor(trace_file=str(path), trace_file_label="monitor")
    assert not path.exists()  # Opened by the first call.
    with tg.watch(), pytest.warns(UserWarning, match="retraced tf.function"):  # watch(): plain layers too.
        fit_twice("monitored", [monitor])
    types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert types.count("end") == 2 and types[-1] == "end"
    restored = merged_explanation([read_trace_file(str(path))])
    assert [(event.layer, event.kind.value) for event in restored.filter("retrace")] == \
        [(event.layer, event.kind.value) for event in monitor.report.filter("retrace")]
    assert restored.count("retrace", layer="dense") == 1
    assert restored.layers["dense"].eager_calls == monitor.report.layers["dense"].eager_calls


def test_two_files_merge_into_one_report_each_labelled(tmp_path):
    paths = []
    for label in ("worker-0", "worker-1"):
        paths.append(str(tmp_path / f"{label}.jsonl"))
        with tg.watch(trace_file=paths[-1], trace_file_label=label):
            fit_twice(f"model_{label[-1]}")
    trace_files = [read_trace_file(path) for path in paths]
    merged = merged_explanation(trace_files)
    assert merged.title == "2 trace files: worker-0, worker-1"
    assert merged.count("retrace", layer="worker-0: dense") == 1
    assert merged.count("retrace", layer="worker-1: dense") == 1
    assert {runs.name.split(":")[0] for runs in merged.functions.values()} == {"worker-0", "worker-1"}
    exported = tmp_path / "trace.json"
    exported.write_text(json.dumps(trace_events(trace_files, unique_labels(trace_files))))
    by_track = parsed_trace_events(exported)
    for label, trace_file in zip(("worker-0", "worker-1"), trace_files):
        marks = by_track[label, "layer dense"]
        assert [(mark["args"]["run"], mark["args"]["kind"]) for mark in marks] == \
            [(event.index, event.kind.value) for event in trace_file.layers["dense"].events]
        for runs in trace_file.functions.values():
            assert [mark["args"]["serial"] for mark in by_track[label, f"function {runs.function}"]] == \
                [event.serial for event in runs.events]
    assert any(mark["args"]["kind"] == "retrace" and mark["cat"] == "function_trace"
               for (label, _), marks in by_track.items() if label == "worker-1" for mark in marks)


def test_same_label_twice_names_the_files(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.jsonl", "b.jsonl")]
    for path in paths:
        with tg.watch(trace_file=path, trace_file_label="same"):
            keras.layers.Dense(1, name="dense")(tf.ones((1, 2)))
    labels = unique_labels([read_trace_file(path) for path in paths])
    assert labels == [f"same ({paths[0]})", f"same ({paths[1]})"]


# --- bad input ---
def written_file(tmp_path):
    path = tmp_path / "good.jsonl"
    with tg.watch(trace_file=path):
        fit_twice("bad_input")
    return path


def test_cut_last_line_warns_naming_file_and_line_and_keeps_the_rest(tmp_path):
    path = written_file(tmp_path)
    lines = path.read_text().splitlines()
    layer_runs = [n for n, line in enumerate(lines) if '"layer_run"' in line]
    kept = lines[: layer_runs[-1]] + [lines[layer_runs[-1]][:40]]  # Killed while writing a run.
    path.write_text("\n".join(kept))
    with pytest.warns(UserWarning, match=rf"{path}:{len(kept)}: the last line is cut short"):
        trace_file = read_trace_file(str(path))
    assert not trace_file.complete
    assert sum(len(runs.events) for runs in trace_file.layers.values()) == len(layer_runs) - 1


def test_corrupt_middle_line_is_an_error_naming_file_and_line(tmp_path):
    path = written_file(tmp_path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:30]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFileError, match=rf"^{path}:3: not a JSON record"):
        read_trace_file(str(path))


def test_unknown_record_is_an_error_naming_file_and_line(tmp_path):
    path = written_file(tmp_path)
    with open(path, "a", encoding="utf-8") as file:
        file.write('{"type": "layer_rn"}\n')
    line = len(path.read_text().splitlines())
    with pytest.raises(TraceFileError, match=rf"^{path}:{line}: not a valid traceguard record .*'layer_rn'"):
        read_trace_file(str(path))


def test_newer_schema_says_which_version_and_to_upgrade(tmp_path):
    path = written_file(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = SCHEMA_VERSION + 1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    message = (rf"^{path}:1: written with trace file schema version {SCHEMA_VERSION + 1} .* "
               rf"reads versions 2 to {SCHEMA_VERSION}\. Upgrade traceguard")
    with pytest.raises(TraceFileError, match=message):
        read_trace_file(str(path))


@pytest.mark.parametrize("text, message", [("", "empty file"),
                                           ('{"type": "layer_run"}\n', "not a traceguard trace file")])
def test_file_without_header_is_an_error(tmp_path, text, message):
    path = tmp_path / "other.jsonl"
    path.write_text(text)
    with pytest.raises(TraceFileError, match=rf"^{path}(:1)?: {message}"):
        read_trace_file(str(path))


def test_report_command_names_the_bad_file_and_writes_nothing(tmp_path, capsys):
    good = written_file(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    html = tmp_path / "report.html"
    assert report_files([str(good), str(bad)], sys.stdout, sys.stderr, html=str(html)) == 2
    assert capsys.readouterr().err.startswith(f"traceguard report: {bad}:1: not a JSON record")
    assert not html.exists()


@pytest.mark.parametrize("arguments, error, message", [
    ({"trace_file": 3}, TypeError, r"`watch\(trace_file=...\)` expects the path .* Received: trace_file=3"),
    ({"trace_file": "/no/such/dir/t.jsonl"}, ValueError, "expects a file in an existing directory"),
    ({"trace_file": "t.jsonl", "trace_file_label": 0}, TypeError, "Received: trace_file_label=0"),
])
def test_watch_rejects_a_bad_trace_file_argument(arguments, error, message):
    with pytest.raises(error, match=message):
        with tg.watch(**arguments):
            pass


def test_trace_monitor_rejects_a_trace_file_in_a_missing_directory():
    with pytest.raises(ValueError, match=r"`TraceMonitor\(trace_file=...\)` expects a file in an existing"):
        TraceMonitor(trace_file="/no/such/dir/t.jsonl")


# --- real processes ---
FIT_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from tensorflow import keras

    batch = int(sys.argv[1])
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4, name="dense")(inputs))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((64, 8)), np.ones((64, 4)), batch_size=32, verbose=0)
    model.fit(np.ones((64 + batch, 8)), np.ones((64 + batch, 4)), batch_size=32, verbose=0)
""")


@pytest.mark.slow  # Two Python processes that import TensorFlow.
def test_run_trace_files_of_two_processes_render_as_one_report_without_tensorflow(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(FIT_SCRIPT)
    runs = [subprocess.Popen([sys.executable, "-m", "traceguard", "run", "--summary", "--trace-file",
                              str(tmp_path / f"w{batch}.jsonl"), "--trace-file-label", f"worker-{batch}",
                              str(script), str(batch)], env=ENV, cwd=ROOT, stderr=subprocess.PIPE, text=True)
            for batch in (6, 10)]
    for run in runs:
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
        assert f"trace file written to {tmp_path}" in stderr
    code = ("import sys\nfrom traceguard._cli import main\ncode = main(sys.argv[1:])\n"
            "assert not {'tensorflow', 'keras', 'jax'} & set(sys.modules), sorted(sys.modules)\n"
            "sys.exit(code)\n")
    result = subprocess.run(
        [sys.executable, "-c", code, "report", "--full", str(tmp_path / "w6.jsonl"),
         str(tmp_path / "w10.jsonl"),
         "--html", str(tmp_path / "report.html"), "--trace-events", str(tmp_path / "trace.json")],
        env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("traceguard report for 2 trace files: worker-6, worker-10:")
    # The step is `one_step_on_data` on Keras 3, `train_function` on Keras 2 (with a symbolic run
    # and a variable retrace before the partial batch's retrace).
    for worker in ("worker-6", "worker-10"):
        assert re.search(rf"{worker}: dense #\d+ in (one_step_on_data|train_function): "
                         r"inputs: dim 0 32 -> None", result.stdout), result.stdout
    assert "worker-10: dense" in (tmp_path / "report.html").read_text()
    by_track = parsed_trace_events(tmp_path / "trace.json")
    assert {process for process, _ in by_track} == {"worker-6", "worker-10"}
    kinds = [mark["args"]["kind"] for mark in by_track["worker-10", "layer dense"]]
    assert [kind for kind in kinds if kind in ("trace", "retrace")] == ["trace", "retrace"]


KILLED_SCRIPT = textwrap.dedent("""
    import sys
    import tensorflow as tf
    from tensorflow import keras
    import traceguard

    dense = keras.layers.Dense(2, name="dense")
    dense.build((None, 3))
    step = tf.function(lambda x: dense(x))
    with traceguard.watch(trace_file=sys.argv[1], trace_file_label="killed"):
        for rows in range(1, 100_000):  # A new shape, so a new trace, each time: until killed.
            step(tf.ones((rows, 3)))
""")


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_trace_file_of_a_process_killed_halfway_renders_what_it_holds(tmp_path):
    script, path = tmp_path / "loop.py", tmp_path / "killed.jsonl"
    script.write_text(KILLED_SCRIPT)
    process = subprocess.Popen([sys.executable, str(script), str(path)], env=ENV, cwd=ROOT,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not (path.exists() and len(set(re.findall(r'"type": "function_trace".*?"serial": (\d+)',
                                                        path.read_text()))) >= 12):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    out, err = tmp_path / "report.txt", tmp_path / "stderr.txt"
    with open(out, "w") as out_file, open(err, "w") as err_file:
        assert report_files([str(path)], out_file, err_file, summary=False) == 0
    assert f"{path} has no end line: its process did not close it" in err.read_text()
    traced = read_trace_file(str(path))
    steps = [runs for runs in traced.functions.values() if runs.function.startswith("<lambda>")]
    assert len(steps) == 1 and len(steps[0].events) >= 12
    assert [event.kind.value for event in steps[0].events[:3]] == ["trace", "retrace", "retrace"]
    assert "dense #2 in <lambda>: inputs: dim 0 1 -> 2" in out.read_text()


def test_bytes_that_are_not_utf8_are_an_error_naming_the_line(tmp_path):
    path = written_file(tmp_path)
    with open(path, "ab") as file:
        file.write(b'{"type": "end", "ended": \xff}\n')
    line = len(path.read_bytes().splitlines())
    with pytest.raises(TraceFileError, match=rf"^{path}:{line}: not a JSON record"):
        read_trace_file(str(path))


HANGING_SCRIPT = textwrap.dedent("""
    import sys
    import time
    import tensorflow as tf
    import traceguard

    @tf.function
    def step(x):
        # A call that never returns once its graph runs, as a collective waiting for a worker that
        # traced differently: the trace is done, the call is not.
        tf.py_function(lambda: time.sleep(3600) or 0.0, [], tf.float32)
        return x * 2

    with traceguard.watch(trace_file=sys.argv[1], trace_file_label="hung"):
        step(tf.ones((2,)))
""")


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_a_trace_whose_call_never_returns_is_in_the_file_of_the_killed_process(tmp_path):
    script, path = tmp_path / "hang.py", tmp_path / "hung.jsonl"
    script.write_text(HANGING_SCRIPT)
    process = subprocess.Popen([sys.executable, str(script), str(path)], env=ENV, cwd=ROOT,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (path.exists() and '"type": "function_trace"' in path.read_text()):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1)  # The call is running its graph: it would have returned by now.
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    traced = read_trace_file(str(path))
    assert not traced.complete
    [(runs, )] = [(runs,) for runs in traced.functions.values()]
    assert [(event.kind.value, {name: str(spec) for name, spec in event.signature.items()})
            for event in runs.events] == \
        [("trace", {"x": "float32[2]"})]


def test_every_record_a_run_writes_is_the_documented_schema(tmp_path):
    # A run that writes every record type and every kind of spec: Keras steps with their costs, a
    # layer's eager runs, a tf.function keyed by Python values, a structure and a Python function, a
    # retrace, a tf.data map function.
    path = tmp_path / "schema.jsonl"
    step = tf.function(lambda inputs, scale, activation: activation(inputs["x"]) * scale)
    with tg.watch(trace_file=path):
        model = fit_twice("documented")
        model(np.ones((2, 8), "float32"))
        for rows, scale in ((2, 1.0), (3, 2)):
            step({"x": tf.ones((rows,)), "pair": [tf.ones(()), 1]}, scale, tf.nn.relu)
        for _ in tf.data.Dataset.range(3).map(lambda value: value * 2):
            pass
    assert schema_errors(path) == []
    types = {json.loads(line)["type"] for line in path.read_text().splitlines()}
    assert types == {"header", *RECORD_TYPES}
    specs = {spec["spec"] for line in path.read_text().splitlines() for record in [json.loads(line)]
             if record["type"] == "function_trace" for _, spec in record["event"]["signature"]}
    assert specs >= {"tensor", "value", "object", "mapping"}


def test_the_documented_schema_rejects_a_field_it_does_not_list(tmp_path):
    path = written_file(tmp_path)
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["event"]["undocumented"] = 1
    path.write_text("\n".join([lines[0], json.dumps(record)]) + "\n")
    [error] = schema_errors(path)
    assert "line 2" in error and "'undocumented'" in error


def test_a_version_1_file_is_an_error_naming_the_version(tmp_path):
    path = written_file(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    message = (rf"^{path}:1: written with trace file schema version 1 .* no released traceguard wrote; "
               r"this traceguard reads versions 2 to 3")
    with pytest.raises(TraceFileError, match=message):
        read_trace_file(str(path))


def test_a_version_2_file_reads_back_as_the_report_that_wrote_it(tmp_path):
    # Version 2 wrote a function trace again, with its costs, where version 3 writes `function_cost`.
    path = tmp_path / "three.jsonl"
    with tg.watch(trace_file=path) as report:
        fit_twice("version2")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[0]["version"] = 2
    traces = {record["event"]["serial"]: record for record in records if record["type"] == "function_trace"}
    older = []
    for record in records:
        if record["type"] == "function_cost":
            again = json.loads(json.dumps(traces[record["serial"]]))
            again["event"].update({name: record[name]
                                   for name in ("phases", "miss_s", "persistent_cache", "cache_saved_s")})
            again.update(started=record["started"], call_started=record["call_started"])
            record = again
        older.append(record)
    assert len(older) == len(records) and any(record["type"] == "function_cost" for record in records)
    two = tmp_path / "two.jsonl"
    two.write_text("".join(json.dumps(record) + "\n" for record in older))
    assert read_trace_file(str(two)).version == 2
    assert_same_report(report, two)
    # Files written before a line held the whole trace lack its other facts: each event reads back
    # with the same attributes and words (its `duration`, `objects`, `qualname` the event's).
    from traceguard._core.function_event import ATTRIBUTES
    new_facts = ("qualname", "duration", "objects", "same_graph_as", "relaxed_signature", "data",
                 "same_model", "xla_functions", "optimizer_builds", "backend_reasons", "graph_breaks",
                 "miss_cost")
    for record in older:
        for name in new_facts:
            record.get("trace", {}).pop(name, None)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(record) + "\n" for record in older))
    restored, full = restored_report(bare), restored_report(two)
    assert restored.summary(full=True) == full.summary(full=True)
    for key, runs in full.functions.items():
        for event, bare_event in zip(runs.events, restored.functions[key].events, strict=True):
            assert all(getattr(event, name) == getattr(bare_event, name) for name in ATTRIBUTES)


def test_the_specs_and_changes_of_every_backend_are_the_documented_schema():
    # What a TensorFlow run above does not write: JAX's pytree nodes and sharded arrays, and the
    # aspects of JAX's and torch's changes.
    from trace_file_parity import documented_schema

    from traceguard._core.changes import Aspect, Change
    from traceguard._core.specs import ArgumentPath, NodeSpec, TensorSpec, ValueSpec

    # The definitions, without the choice of a record type.
    schema = {key: value for key, value in documented_schema().items() if key != "oneOf"}
    sharded = TensorSpec("float32", (4,), "", False, "P('i',) over i=2 (Explicit)")
    node = NodeSpec("Config", ((".weights", sharded), (0, ValueSpec("None"))),
                    ((".mode", ValueSpec("'a'")),))
    values = [("spec", node.to_json())]
    values += [("change", Change(ArgumentPath("x"), aspect, 1, 2, 0).to_json()) for aspect in Aspect]
    for definition, value in values:
        jsonschema.validate(json.loads(json.dumps(value)), {**schema, "$ref": f"#/$defs/{definition}"})
