"""Workers of a distributed job: TF_CONFIG read as the worker, trace files labelled with it, and
trace file paths with `{worker}` and the other fields filled when the file opens."""

import io
import json
import os
import socket
import textwrap

import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg
from traceguard._diagnosis.run import run_script
from traceguard._diagnosis.trace_file_reader import TraceFileError, read_trace_file
from traceguard._diagnosis.workers import TRACE_FILE_FIELDS, Worker, tf_config_worker
from traceguard.callbacks import TraceMonitor

pytestmark = pytest.mark.backend("tensorflow")

HOST, PID = socket.gethostname(), os.getpid()


def tf_config(task_type, index, workers=2, chief=0):
    cluster = {"worker": [f"localhost:{2000 + i}" for i in range(workers)]}
    if chief:
        cluster["chief"] = ["localhost:1999"]
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def header_of(path):
    return json.loads(path.read_text().splitlines()[0])


def trace_once():
    tf.function(lambda x: x + 1)(tf.ones((2,)))


@pytest.mark.parametrize("config, worker", [
    (tf_config("worker", 1), Worker("TF_CONFIG", "worker", 1, 2)),
    (tf_config("chief", 0, workers=3, chief=1), Worker("TF_CONFIG", "chief", 0, 4)),
    (json.dumps({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}),
     Worker("TF_CONFIG", "ps", 0, None)),
    ("", None),
    ("{not json", None),
    (json.dumps({"cluster": {"worker": ["a:1"]}}), None),  # No task: this process is not one of them.
])
def test_tf_config_names_the_task_and_the_training_processes(config, worker):
    assert tf_config_worker({"TF_CONFIG": config}) == worker


def test_worker_names_itself_by_type_and_index():
    assert [Worker("TF_CONFIG", "chief", 0).name, Worker("jax.distributed", "process", 3, 4).name] == \
        ["chief-0", "process-3"]


def test_trace_file_under_tf_config_is_named_and_labelled_by_its_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 1))
    with tg.watch(trace_file=tmp_path / "traces-{worker}.jsonl"):
        trace_once()
    path = tmp_path / "traces-worker-1.jsonl"
    header = header_of(path)
    assert (header["label"], header["worker"]) == \
        ("worker-1", {"source": "TF_CONFIG", "task_type": "worker", "index": 1, "count": 2})
    assert read_trace_file(str(path)).worker == Worker("TF_CONFIG", "worker", 1, 2)


def test_every_field_is_filled_when_the_file_opens(tmp_path, monkeypatch):
    pattern = str(tmp_path / "-".join("{" + name + "}" for name in TRACE_FILE_FIELDS)) + ".jsonl"
    with tg.watch(trace_file=pattern) as report:
        # Set after watch() began, before the first record: a script that sets TF_CONFIG itself.
        monkeypatch.setenv("TF_CONFIG", tf_config("chief", 0, chief=1))
        trace_once()
    path = tmp_path / f"chief-0-chief-0-0-{PID}-{HOST}.jsonl"
    assert report._trace_file.path == str(path)
    assert header_of(path)["label"] == "chief-0"


def test_outside_a_job_the_fields_are_those_of_a_lone_process(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    pattern = str(tmp_path / "{worker}_{task_type}{task_index}_{process_index}.jsonl")
    with tg.watch(trace_file=pattern):
        trace_once()
    path = tmp_path / f"{HOST}-{PID}_worker0_0.jsonl"
    header = header_of(path)
    assert (header["label"], header["worker"]) == (f"{HOST}:{PID}", None)


def test_a_label_given_names_the_file_and_the_worker_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 0))
    with tg.watch(trace_file=tmp_path / "w.jsonl", trace_file_label="trainer-a"):
        trace_once()
    header = header_of(tmp_path / "w.jsonl")
    assert (header["label"], header["worker"]["index"]) == ("trainer-a", 0)


def test_trace_monitor_trace_file_pattern_names_the_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 3, workers=4))
    monitor = TraceMonitor(trace_file=str(tmp_path / "fit-{task_type}{task_index}.jsonl"))
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(tf.ones((8, 2)), tf.ones((8, 1)), batch_size=4, verbose=0, callbacks=[monitor])
    trace_file = read_trace_file(str(tmp_path / "fit-worker3.jsonl"))
    assert trace_file.complete and trace_file.label == "worker-3"
    assert [runs.function for runs in trace_file.functions.values()] != []


def test_run_trace_file_pattern_names_the_written_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config("worker", 1))
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import tensorflow as tf
        tf.function(lambda x: x + 1)(tf.ones((2,)))
    """))
    err = io.StringIO()
    assert run_script(str(script), [], None, err, trace_file=str(tmp_path / "{worker}.jsonl")) == 0
    assert err.getvalue().endswith(f"trace file written to {tmp_path / 'worker-1.jsonl'}\n")
    assert header_of(tmp_path / "worker-1.jsonl")["label"] == "worker-1"


@pytest.mark.parametrize("pattern, message", [
    ("t-{rank}-{worker}-{}.jsonl", r"names unknown fields \{rank\}, \{\}; the fields are \{worker\}, "
                                   r"\{task_type\}, \{task_index\}, \{process_index\}, \{pid\}, \{host\}\. "
                                   r"Received: trace_file='t-\{rank\}-\{worker\}-\{\}\.jsonl'"),
    ("t-{worker.name}.jsonl", r"names unknown fields \{worker\.name\};"),
    ("t-{worker.jsonl", r"is a path whose fields are written in braces .* a brace itself is doubled: "
                        r"`\{\{`\); this one cannot be read: .* Received: trace_file='t-\{worker\.jsonl'"),
])
def test_unknown_or_unreadable_fields_are_an_error_naming_them(pattern, message):
    with pytest.raises(ValueError, match=r"^`watch\(trace_file=...\)` " + message):
        with tg.watch(trace_file=pattern):
            pass
    with pytest.raises(ValueError, match=r"^`TraceMonitor\(trace_file=...\)` " + message):
        TraceMonitor(trace_file=pattern)


def test_run_rejects_an_unknown_field_before_the_script_runs(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("raise SystemExit('the script ran')\n")
    err = io.StringIO()
    assert run_script(str(script), [], None, err, trace_file="t-{rank}.jsonl") == 2
    assert err.getvalue().startswith("traceguard run: --trace-file names unknown fields {rank}; ")
    assert err.getvalue().endswith("Received: --trace-file 't-{rank}.jsonl'\n")


def test_doubled_braces_are_a_brace_in_the_file_name(tmp_path):
    with tg.watch(trace_file=tmp_path / "{{run}}.jsonl"):
        trace_once()
    assert (tmp_path / "{run}.jsonl").exists()


def test_a_header_whose_worker_is_malformed_is_an_error_naming_line_1(tmp_path):
    with tg.watch(trace_file=tmp_path / "w.jsonl"):
        trace_once()
    lines = (tmp_path / "w.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["worker"] = {"source": "slurm", "index": "1"}
    (tmp_path / "w.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(TraceFileError, match=rf"^{tmp_path / 'w.jsonl'}:1: the header's `worker` is not a "
                                             r"worker: .* Received: \{'source': 'slurm', 'index': '1'\}"):
        read_trace_file(str(tmp_path / "w.jsonl"))


def test_a_second_writer_of_the_same_file_writes_nothing_and_says_so(tmp_path, caplog):
    # `traceguard run --trace-file 'traces-{worker}.jsonl'` over a script with its own
    # `watch(trace_file="traces-{worker}.jsonl")`: two writers of one file would interleave lines.
    path = tmp_path / "traces.jsonl"
    with tg.watch(trace_file=path), tg.watch(trace_file=path):
        trace_once()
    assert f"the trace file {str(path)!r} is being written by another watch()" in caplog.text
    trace_file = read_trace_file(str(path))
    assert trace_file.complete and len(trace_file.functions) == 1
    with tg.watch(trace_file=path):  # Closed: free again.
        trace_once()
    assert read_trace_file(str(path)).complete
