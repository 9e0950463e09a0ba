"""`traceguard.compare()` and `python -m traceguard compare`: the workers whose traces differ from
the others', at the first trace where they do and how; what a run traced that its baseline did not.

Each "worker" here is a `watch(trace_file=...)` block in this process over a fresh function object of
the same code, as each process of a job has its own; tests/stories/test_multi_worker.py and
tests/stories/test_jax_multi_process.py run real jobs.
"""

import io
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg
from traceguard import _compat
from traceguard._core.signature import diff_signatures
from traceguard._core.specs import ObjectSpec, SequenceSpec, Site, ValueSpec
from traceguard._diagnosis import trace_file as trace_file_module
from traceguard._diagnosis import trace_file_reader
from traceguard._diagnosis.compare_files import compare_files
from traceguard._diagnosis.compare_sources import portable_spec

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
BRANCH = {"double": True}  # What a worker's Python reads: a branch taken differently builds another graph.


def make_step():
    @tf.function
    def step(x):
        return x * 2.0 if BRANCH["double"] else x + 1.0

    return step


def run_worker(path, label, calls, double=(True,)):
    """One worker: a fresh step function called on `calls` row counts, writing `path`."""
    step = make_step()
    with tg.watch(trace_file=path, trace_file_label=label):
        for number, rows in enumerate(calls):
            BRANCH["double"] = double[min(number, len(double) - 1)]
            step(tf.ones((rows, 3)))
    BRANCH["double"] = True
    return str(path)


def workers(tmp_path, *calls_per_worker, labels=None):
    labels = labels or [f"worker-{number}" for number in range(len(calls_per_worker))]
    return [run_worker(tmp_path / f"{label}.jsonl", label, calls)
            for label, calls in zip(labels, calls_per_worker)]


def run_compare(*arguments, **options):
    out, err = io.StringIO(), io.StringIO()
    code = compare_files(list(arguments), out, err, **options)
    return code, out.getvalue(), err.getvalue()


DEFINITION = f"test_compare.py:{make_step.__code__.co_firstlineno + 1}"
STEP = f"`step` ({DEFINITION})"


# --- workers ------------------------------------------------------------------------------
def test_workers_that_traced_alike_agree(tmp_path):
    paths = workers(tmp_path, [8, 8, 8], [8, 8, 8])
    comparison = tg.compare(paths)
    assert (comparison.mode, comparison.mode_reason, comparison.diverged) == \
        ("workers", "worker_labels", False)
    assert str(comparison).splitlines()[:2] == [
        "traceguard compare: 2 workers of one job (worker-0, worker-1; their labels name them)",
        "All 2 workers made the same traces: 1 function, 1 trace each."]
    assert run_compare(*paths)[0] == 0


def test_a_worker_with_another_shape_is_named_with_the_function_and_the_change(tmp_path):
    paths = workers(tmp_path, [8, 8], [8, 8], [6, 6])
    comparison = tg.compare(paths)
    (divergence,) = comparison.divergences
    assert (divergence.source, divergence.function.name, divergence.number, divergence.differences) == \
        ("worker-2", "step", 1, ("signature",))
    assert [(str(change.argument), change.aspect, change.old, change.new, change.axis)
            for change in divergence.changes] == [("x", "dim", 8, 6, 0)]
    assert divergence.others == ("worker-0", "worker-1")
    code, out, err = run_compare(*paths)
    assert (code, err) == (1, "")
    assert out.splitlines()[:8] == [
        "traceguard compare: 3 workers of one job (worker-0, worker-1, worker-2; their labels name them)",
        "worker-2 traced differently from the others (worker-0, worker-1) in 1 of 1 function: `step`.",
        "",
        f"worker-2, {STEP}, trace #1: another signature",
        "  worker-2: #1 trace x: float32[6,3]",
        "  worker-0, worker-1: #1 trace x: float32[8,3]",
        "  differs: x: dim 0 8 -> 6",
        "  In a collective job: worker-2 runs this function on other shapes or values than the others: a",
    ]


def test_a_trace_the_others_did_not_make_names_their_closest_signature(tmp_path):
    paths = workers(tmp_path, [8, 8, 8], [8, 8, 6])  # A last batch only worker-1 gets.
    (divergence,) = tg.compare(paths).divergences
    assert (divergence.source, divergence.number, divergence.difference, divergence.traces) == \
        ("worker-1", 2, "extra", (2, 1))
    assert (divergence.reference, divergence.closest.number, [str(c) for c in divergence.changes]) == \
        (None, 1, ["x: dim 0 8 -> 6"])
    text = str(tg.compare(paths))
    assert f"worker-1, {STEP}, trace #2: a trace the others did not make\n" \
           "  worker-1: #2 retrace x: float32[6,3] (the same graph as #1)\n" \
           "  worker-0: no trace #2 (traced `step` once)\n" \
           "  closest: worker-0's #1 trace x: float32[8,3]\n" \
           "  differs: x: dim 0 8 -> 6\n" \
           "  In a collective job: worker-1 traced (and compiled) a program the others did not: they wait " \
           "for it\n    in their next collective," in text
    # No majority between two workers: compared with the first, and said so.
    assert "`step`: the workers split evenly, no majority; the traces of worker-0 (the first worker's) " \
           "are taken as the others'." in " ".join(text.split())


def test_a_trace_the_others_made_is_missing_from_the_worker(tmp_path):
    paths = workers(tmp_path, [8, 6], [8, 6], [8, 8])
    (divergence,) = tg.compare(paths).divergences
    assert (divergence.source, divergence.number, divergence.difference) == ("worker-2", 2, "missing")
    assert (divergence.step, divergence.reference.kind, dict(divergence.reference.signature)) == \
        (None, "retrace", {"x": "float32[6,3]"})
    assert "  worker-2: no trace #2 (it traced `step` once, the others twice)" in str(tg.compare(paths))


def test_the_same_signature_building_another_graph_is_a_graph_difference(tmp_path):
    same = run_worker(tmp_path / "w0.jsonl", "worker-0", [2, 3])
    other = run_worker(tmp_path / "w1.jsonl", "worker-1", [2, 3], double=(True, False))  # Another branch.
    comparison = tg.compare([same, other])
    (divergence,) = comparison.divergences
    assert (divergence.number, divergence.differences) == (2, ("graph",))
    assert (divergence.reference.same_graph_as, divergence.step.same_graph_as) == (1, None)
    assert "  worker-0: #2 retrace x: float32[3,3] (the same graph as #1)" in str(comparison)


def test_workers_are_named_by_their_headers_chief_first(tmp_path, monkeypatch):
    paths = []
    for task_type, index, rows in (("worker", 0, 8), ("chief", 0, 8), ("worker", 1, 4)):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
                                                   "task": {"type": task_type, "index": index}}))
        run_worker(tmp_path / "{worker}.jsonl", None, [rows])
        paths.append(str(tmp_path / f"{task_type}-{index}.jsonl"))
    comparison = tg.compare(paths)
    assert [source.label for source in comparison.sources] == ["chief-0", "worker-0", "worker-1"]
    assert comparison.mode_reason == "worker_headers"
    assert [divergence.source for divergence in comparison.divergences] == ["worker-1"]


def test_workers_of_a_job_without_a_file_are_noted(tmp_path, monkeypatch):
    paths = []
    for index in (0, 1):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:1", "c:1"]},
                                                   "task": {"type": "worker", "index": index}}))
        paths.append(run_worker(tmp_path / f"w{index}.jsonl", None, [8]))
    assert "The job trains with 3 workers (their files say) and 2 of them are compared (worker-0, " \
           "worker-1): the others' traces are not seen." in " ".join(str(tg.compare(paths)).split())


# --- killed workers -------------------------------------------------------------------------
def killed_copy(path, traces, cut_last=True):
    """A copy of `path` as a process killed after its first `traces` traces leaves it: no end line, and
    (`cut_last`) the next line cut short, as a kill while writing it leaves it."""
    lines = pathlib.Path(path).read_text().splitlines()
    serials, kept = set(), [lines[0]]
    for line in lines[1:]:
        record = json.loads(line)
        if record["type"] == "function_trace" and record["event"]["serial"] not in serials:
            if len(serials) == traces:
                break
            serials.add(record["event"]["serial"])
        if record["type"] == "end":
            break
        kept.append(line)
    if cut_last:
        kept.append(line[:30])
    copy = pathlib.Path(path).with_name("killed-" + pathlib.Path(path).name)
    copy.write_text("\n".join(kept))
    return str(copy), len(kept)


def test_a_killed_worker_that_agreed_so_far_stopped_early_and_does_not_diverge(tmp_path):
    paths = workers(tmp_path, [8, 6, 4], [8, 6, 4])
    first_trace_only, lines = killed_copy(paths[1], 1)  # Killed while writing its second trace.
    code, out, err = run_compare(paths[0], first_trace_only)
    assert code == 0
    assert err.startswith(f"traceguard compare: warning: {first_trace_only}:{lines}: the last line is cut "
                          "short")
    assert out.splitlines()[1:3] == [
        "All 2 workers made the same traces: 1 function, 3 traces each.",
        "worker-1 stopped early (no end line: killed, or still running); up to there, the same traces as "
        "the others."]
    assert "worker-1's file has no end line: its process was killed or is still running; its traces up " \
           "to then are compared." in " ".join(out.split())


def test_a_killed_worker_that_traced_differently_still_diverges(tmp_path):
    paths = workers(tmp_path, [8, 8], [8, 6])
    killed, _ = killed_copy(paths[1], 2, cut_last=False)  # Both traces written, then killed.
    comparison = tg.compare([paths[0], killed])  # Its lines are whole: no warning.
    assert [(d.source, d.number, d.difference) for d in comparison.divergences] == [("worker-1", 2, "extra")]
    assert [source.complete for source in comparison.sources] == [True, False]


# --- runs -----------------------------------------------------------------------------------
def fit(path, label, samples):
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    with tg.watch(trace_file=path, trace_file_label=label):
        model.fit(rng.random((samples, 4)), rng.random((samples, 2)), batch_size=32, verbose=0)
    return str(path)


def test_a_run_that_traced_what_the_baseline_did_not_names_the_closest_signature(tmp_path):
    baseline = run_worker(tmp_path / "a.jsonl", "run-a", [8, 8, 4])
    run = run_worker(tmp_path / "b.jsonl", "run-b", [8, 6, 4, 6])
    comparison = tg.compare([run], baseline=baseline)
    assert (comparison.mode, comparison.baseline, comparison.missing_traces) == ("runs", "run-a", ())
    (new,) = comparison.new_traces
    assert (new.source, new.step.number, new.closest.number, [str(c) for c in new.changes]) == \
        ("run-b", 2, 2, ["x: dim 0 4 -> 6"])  # Of 8 and 4 rows, 4 is as close as 8: the latest wins.
    code, out, _ = run_compare(run, baseline=baseline)
    assert code == 0
    assert out.splitlines()[:7] == [
        "traceguard compare: run-b against the baseline run-a",
        "run-b made 1 trace that run-a did not, and run-a made 0 traces that run-b did not.",
        "",
        "Traces run-a did not make:",
        f"  run-b, {STEP} #2 retrace x: float32[6,3] (the same graph as #1)",
        "    closest in run-a: #2 retrace x: float32[4,3] (the same graph as #1)",
        "    differs: x: dim 0 4 -> 6",
    ]
    assert run_compare(run, baseline=baseline, fail_on_new=True)[0] == 1
    # The other way round, the trace of 6 rows is the baseline's and the run did not make it.
    back = tg.compare([baseline], baseline=run)
    assert back.new_traces == ()
    assert [(trace.source, trace.step.number) for trace in back.missing_traces] == [("run-a", 2)]
    assert run_compare(baseline, baseline=run, fail_on_new=True)[0] == 0


def test_a_keras_partial_batch_run_names_the_step_signature_it_changed(tmp_path):
    baseline, run = fit(tmp_path / "a.jsonl", "run-a", 64), fit(tmp_path / "b.jsonl", "run-b", 70)
    comparison = tg.compare([run], baseline=baseline)
    # 70 samples leave a last batch of 6: Keras gives every batch the spec of batch size None.
    steps = ["one_step_on_data", "multi_step_on_iterator"] if _compat.IS_KERAS_3 else \
        ["train_function", "train_function"]  # Keras 2: a trace, then the variable retrace.
    assert [trace.function.name for trace in comparison.new_traces] == steps
    assert [trace.function.name for trace in comparison.missing_traces] == steps
    for trace in comparison.new_traces:  # Each closest to the baseline's trace of the same kind.
        assert trace.closest.kind == trace.step.kind
        assert [(c.aspect.value, c.old, c.new, c.axis) for c in trace.changes] == [("dim", 32, None, 0)] * 2


def test_runs_that_traced_alike_say_so(tmp_path):
    a, b = fit(tmp_path / "a.jsonl", "a", 64), fit(tmp_path / "b.jsonl", "b", 64)
    comparison = tg.compare([b], baseline=a)
    assert (comparison.new_traces, comparison.missing_traces) == ((), ())
    assert str(comparison).splitlines()[1].startswith("b made the same traces as a: ")


def moved_definition(line):
    """A trace file's line with the function's `def` moved to line 999 of its file."""
    record = json.loads(line)
    event = record.get("event", {})
    if isinstance(event.get("definition"), dict):
        event["definition"]["line"] = 999
    if "key" in record:
        record["key"] = record["key"].replace(DEFINITION, "test_compare.py:999")
    return json.dumps(record)


def test_a_function_defined_at_another_line_is_matched_by_name_with_a_note(tmp_path):
    a, b = workers(tmp_path, [8], [8])
    lines = pathlib.Path(b).read_text().splitlines()
    moved = [moved_definition(line) for line in lines]
    pathlib.Path(b).write_text("\n".join(moved) + "\n")
    comparison = tg.compare([b], baseline=a)
    assert (comparison.new_traces, len(comparison.functions)) == ((), 1)
    assert [note.kind for note in comparison.notes] == ["definition_moved"]


# --- sources and modes ------------------------------------------------------------------------
def test_files_that_name_no_worker_ask_for_the_mode(tmp_path):
    paths = workers(tmp_path, [8], [6], labels=["a", "b"])
    with pytest.raises(ValueError, match=r"cannot tell whether these are workers of one job or runs one "
                                         r"after another: a, b name no worker .* `workers=True`, or .* "
                                         r"`baseline=`"):
        tg.compare(paths)
    code, out, err = run_compare(*paths)
    assert (code, out) == (2, "")
    assert err.startswith("traceguard compare: cannot tell whether these files are workers of one job")
    assert err.endswith("Compare them as workers with --workers, or as runs with --baseline FILE.\n")
    assert run_compare(*paths, workers=True)[0] == 1


def test_explanations_compare_as_workers_by_the_labels_given(tmp_path):
    reports = []
    for rows in (8, 6):
        step = make_step()
        with tg.watch() as report:
            step(tf.ones((rows, 3)))
        reports.append(report)
    comparison = tg.compare({"worker-a": reports[0], "worker-b": reports[1]}, workers=True)
    assert [(d.source, d.difference) for d in comparison.divergences] == [("worker-b", "signature")]


def test_json_and_html_outputs(tmp_path):
    paths = workers(tmp_path, [8], [6])
    html = tmp_path / "compare.html"
    code, out, _ = run_compare(*paths, as_json=True, html=str(html))
    assert code == 1
    result = json.loads(out)
    assert (result["mode"], result["diverged"], [s["label"] for s in result["sources"]]) == \
        ("workers", True, ["worker-0", "worker-1"])
    (divergence,) = result["divergences"]
    assert divergence["changes"] == [{"argument": "x", "aspect": "dim", "old": 8, "new": 6, "axis": 0,
                                      "text": "x: dim 0 8 -> 6"}]
    assert divergence["step"]["signature"] == {"x": "float32[6,3]"}
    assert divergence["consequence"].startswith("worker-1 runs this function on other shapes")
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "x: dim 0 8 -&gt; 6" in page and "worker-1" in page
    assert tg.compare(paths)._repr_html_().startswith('<div class="traceguard">')


def test_files_of_different_schema_versions_are_compared_with_a_note(tmp_path, monkeypatch):
    old, new = workers(tmp_path, [8], [8])
    lines = pathlib.Path(new).read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = trace_file_module.SCHEMA_VERSION + 1  # A reader of that version reads both.
    pathlib.Path(new).write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    monkeypatch.setattr(trace_file_reader, "SCHEMA_VERSION", trace_file_module.SCHEMA_VERSION + 1)
    comparison = tg.compare([old, new])
    assert not comparison.diverged
    assert [(note.kind, note.details) for note in comparison.notes] == \
        [("schema_versions", (trace_file_module.SCHEMA_VERSION, trace_file_module.SCHEMA_VERSION + 1))]


@pytest.mark.parametrize("damage, message", [
    (lambda lines: [re.sub(r'"version": \d+', '"version": 99', lines[0]), *lines[1:]],
     r":1: written with trace file schema version 99 .* Upgrade traceguard"),
    (lambda lines: [lines[0], lines[1][:20], *lines[2:]], r":2: not a JSON record"),
    (lambda lines: [*lines, '{"type": "layer_rn"}'], r":\d+: not a valid traceguard record"),
    # Version 1, a development format no release wrote, is no longer read.
    (lambda lines: [lines[0].replace('"version": 3', '"version": 1'), *lines[1:]],
     r":1: written with trace file schema version 1 .* no released traceguard wrote"),
])
def test_a_bad_file_is_an_error_naming_the_file_and_line_and_nothing_is_written(tmp_path, damage, message):
    good, bad = workers(tmp_path, [8], [8])
    pathlib.Path(bad).write_text("\n".join(damage(pathlib.Path(bad).read_text().splitlines())) + "\n")
    html = tmp_path / "compare.html"
    code, out, err = run_compare(good, bad, html=str(html))
    assert (code, out, html.exists()) == (2, "", False)
    assert err.startswith(f"traceguard compare: {bad}")
    assert re.search(message, err), err


@pytest.mark.parametrize("arguments, options, message", [
    (["a.jsonl"], {}, "compares two trace files or more (one per worker), or runs with --baseline FILE. "
                      "Received: 1 file"),
    (["a.jsonl", "b.jsonl"], {"workers": True, "baseline": "c.jsonl"},
     "--workers compares workers of one job"),
    (["a.jsonl", "b.jsonl"], {"fail_on_new": True}, "--fail-on-new fails on the traces a run made"),
    (["a.jsonl", "b.jsonl"], {"html": "/no/such/dir/x.html"},
     "--html expects a file in an existing directory"),
])
def test_bad_arguments_are_errors_naming_them(arguments, options, message):
    code, out, err = run_compare(*arguments, **options)
    assert (code, out) == (2, "")
    assert err.startswith(f"traceguard compare: {message}")


def test_compare_rejects_what_is_not_a_source():
    with pytest.raises(TypeError, match=r"compares trace files .* Received: int 3 \(source 2\)"):
        tg.compare(["a.jsonl", 3])
    with pytest.raises(TypeError, match=r"expects a sequence .* Received: sources='a.jsonl'"):
        tg.compare("a.jsonl")
    with pytest.raises(ValueError, match=r"needs at least two trace files .* Received: 1 source$"):
        tg.compare([tg.Explanation("x")])


@pytest.mark.slow  # A Python process.
def test_compare_command_runs_without_tensorflow(tmp_path):
    paths = workers(tmp_path, [8, 8], [8, 6])
    code = ("import sys\nfrom traceguard._cli import main\ncode = main(sys.argv[1:])\n"
            "assert not {'tensorflow', 'keras', 'jax'} & set(sys.modules), sorted(sys.modules)\n"
            "sys.exit(code)\n")
    result = subprocess.run([sys.executable, "-c", code, "compare", *paths], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.startswith("traceguard compare: 2 workers of one job (worker-0, worker-1;")


def test_files_labelled_host_pid_by_default_are_named_by_their_file(tmp_path):
    first = run_worker(tmp_path / "run-1.jsonl", None, [8])
    second = run_worker(tmp_path / "run-2.jsonl", None, [8, 6])
    comparison = tg.compare([second], baseline=first)
    assert [source.label for source in comparison.sources] == ["run-1.jsonl", "run-2.jsonl"]
    assert str(comparison).splitlines()[0] == \
        "traceguard compare: run-2.jsonl against the baseline run-1.jsonl"


def test_specs_of_two_processes_compare_without_the_tokens_only_one_process_knows():
    def objects(token, name):
        function = ObjectSpec("function", name, token, Site("train.py", 3))
        return {"f": portable_spec(SequenceSpec("list", (function, ValueSpec("1")), 2))}

    # The same function in two processes has two tokens; another function is another object.
    assert diff_signatures(objects(4, "relu"), objects(9, "relu")) == []
    [change] = diff_signatures(objects(4, "relu"), objects(4, "gelu"))
    assert (str(change.argument), change.aspect.value) == ("f[0]", "identity")
