"""What each miss costs, end to end on TensorFlow: phases, whole misses, XLA compilations
without a retrace, their guards, their counts over every trace, and their trace files."""

import gc
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._compat import _function_tracing
from traceguard._core import function_runs
from traceguard._core.specs import format_signature
from traceguard._diagnosis.trace_file_reader import read_trace_file

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def matmuls(x):
    for _ in range(20):
        x = tf.matmul(x, x) * 0.01
    return x


def runs_of(explanation, function):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == function]
    return runs


def test_a_plain_tf_function_s_event_has_its_trace_and_its_first_call():
    step = tf.function(matmuls)
    with tg.watch() as explanation:
        step(tf.ones((8, 8)))
        step(tf.ones((8, 8)))
    runs = runs_of(explanation, "matmuls")
    (event,) = runs.events
    assert set(event.phases) == {"trace", "lower"}
    assert event.phases["trace"] == event.duration_s
    assert event.miss_s >= event.phases["trace"] + event.phases["lower"]
    assert runs.phase_seconds == event.phases
    assert runs.cost_seconds == event.cost_s == event.miss_s


def test_jit_compile_with_varying_shapes_gives_compile_events_without_a_retrace():
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    with tg.watch() as explanation:
        for rows in (4, 5, 6, 7, 5, 8, 9):
            step(tf.ones((rows, rows)))
    assert step.experimental_get_tracing_count() == 2
    runs = runs_of(explanation, "matmuls")
    assert [event.kind.value for event in runs.events] == ["trace", "retrace", "compile", "compile",
                                                          "compile", "compile"]
    assert (runs.traces, runs.compilations) == (2, 4)
    compiled = runs.events[2]
    assert format_signature(compiled.signature) == {"x": "float32[6,6]"}
    assert [(str(change.argument), change.aspect.value, change.axis, change.old, change.new)
            for change in compiled.changes] == [("x", "dim", 0, 5, 6), ("x", "dim", 1, 5, 6)]
    assert set(compiled.phases) == {"compile"} and compiled.duration_s == 0.0
    assert compiled.miss_s >= compiled.phases["compile"]
    assert compiled.reason.startswith("XLA compiled tf.function `matmuls` (`jit_compile=True`) for new "
                                      "input shapes without a retrace: x: dim 0 5 -> 6")
    assert compiled.hint == ("Each new input shape costs an XLA compilation although the trace is reused: "
                             "pad or bucket the inputs to a few fixed shapes, or drop `jit_compile=True` "
                             "from a function whose shapes must vary.")


def test_no_retrace_fails_on_a_compilation_without_a_retrace_after_warm_up():
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    with tg.watch():
        step(tf.ones((4, 4)))
        step(tf.ones((5, 5)))  # Relaxed: later row counts reuse this trace.
        with tg.no_retrace():
            step(tf.ones((5, 5)))  # Compiled already.
            with pytest.raises(tg.RetraceError) as failure:
                step(tf.ones((6, 6)))
    assert failure.value.kind == "compile"
    assert str(failure.value).startswith(
        "`matmuls` compiled again without a retrace (XLA, for new input shapes) inside the "
        "`traceguard.no_retrace()` block.")
    assert texts(failure.value.changes) == ("x: dim 0 5 -> 6", "x: dim 1 5 -> 6")


def keras_model():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    return model


def test_keras_fit_with_jit_compile_compiles_the_partial_batch_without_a_retrace():
    model = keras_model()
    with tg.watch() as explanation:
        model.fit(np.ones((70, 8)), np.ones((70, 4)), batch_size=32, epochs=2, verbose=0)
    (compiled,) = [event for runs in explanation.functions.values() for event in runs.events
                   if event.kind is tg.TraceKind.COMPILE]
    assert [str(change) for change in compiled.changes] == ["iterator[0]: dim 0 32 -> 6",
                                                             "iterator[1]: dim 0 32 -> 6"]
    assert compiled.hint.startswith("`fit` got 70 samples in batches of 32: the last batch of 6 has a new "
                                    "shape, and XLA compiles the step again for it")


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3 relaxes predict's batch dimension")
def test_keras_predict_with_jit_compile_compiles_each_new_batch_size():
    model = keras_model()
    with tg.watch() as explanation:
        for rows in (5, 7, 9, 9, 11):
            model.predict(np.ones((rows, 8)), verbose=0)
    compiled = [event for runs in explanation.functions.values() for event in runs.events
                if event.kind is tg.TraceKind.COMPILE]
    assert [str(change) for event in compiled for change in event.changes] == [
        "data[0]: dim 0 7 -> 9", "data[0]: dim 0 9 -> 11"]
    assert all("Each new batch size in `predict` costs an XLA compilation" in event.hint
               for event in compiled)


def test_counts_and_seconds_cover_the_events_dropped(monkeypatch):
    monkeypatch.setattr(function_runs, "_TRACES_PER_FUNCTION", 3)
    step = tf.function(lambda x, k: x * k)
    with tg.watch() as explanation:
        for k in range(7):
            step(tf.ones((2,)), k)
    (runs,) = explanation.functions.values()
    assert (len(runs.events), runs.dropped, runs.traces) == (3, 4, 7)
    assert runs.counts()["retrace"] == 6
    assert runs.seconds > sum(event.duration_s for event in runs.events)


def test_the_trace_file_carries_the_phases_and_the_compilations(tmp_path):
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    path = tmp_path / "costs.jsonl"
    with tg.watch(trace_file=str(path)) as explanation:
        for rows in (4, 5, 6):
            step(tf.ones((rows, rows)))
    live = runs_of(explanation, "matmuls")
    (read,) = read_trace_file(str(path)).functions.values()
    assert [event.kind.value for event in read.events] == ["trace", "retrace", "compile"]
    assert [event.phases for event in read.events] == [event.phases for event in live.events]
    assert [event.miss_s for event in read.events] == [event.miss_s for event in live.events]
    assert read.cost_seconds == pytest.approx(live.cost_seconds)


def test_reports_rank_functions_by_what_their_misses_cost_not_by_tracing_time(tmp_path):
    @tf.function
    def slow_to_trace(x):
        time.sleep(1.0)  # Python time, all of the trace (matmuls traced in 0.78 s under load).
        return x + 1

    compiled = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    with tg.watch() as explanation:
        slow_to_trace(tf.ones((2,)))
        # Two traces, then an XLA compilation per row count: 34 of 50-100 ms each on a 2-core CPU,
        # measured, well over the sleep (14 made a 0.76 s against 1.02 s race on an idle machine).
        for rows in range(4, 40):
            compiled(tf.ones((rows, rows)))
    slow, costly = runs_of(explanation, "slow_to_trace"), runs_of(explanation, "matmuls")
    assert slow.seconds > costly.seconds  # Tracing time alone would rank `slow_to_trace` first,
    assert costly.cost_seconds > slow.cost_seconds  # what the misses cost ranks `matmuls` first.
    assert costly.dominant_phase() == "compile"
    lines = explanation.summary(full=True).splitlines()
    header = next(number for number, line in enumerate(lines) if line.startswith("Functions (2; "))
    assert f", the most in `matmuls` ({costly.avoidable_seconds:.2f} s); first traces: " in lines[header]
    assert lines[header + 1].split() == ["function", "defined", "at", "traces", "retraces", "compiles",
                                         "objects", "tracing", "lowering", "compiling", "avoidable", "total"]
    assert [line.split()[0] for line in lines[header + 2:header + 4]] == ["matmuls", "slow_to_trace"]
    assert lines[header + 2].split()[2:5] == ["2", "1", "34"]
    text = explanation.summary(full=True)
    assert re.search(r"Function `matmuls` \(defined at test_costs.py:\d+\): 2 traces: 1 trace, 1 retrace, "
                     r"and 34 compilations; [\d.]+ s compiling, [\d.]+ s tracing", text)
    assert re.search(r"#3 compile  \(x=float32\[6,6\]\), called at test_costs.py:\d+  took \d+ ms: "
                     r"\d+ ms compiling", text)
    html = (explanation.to_html(tmp_path / "report.html")).read_text()
    assert html.index("<code>matmuls</code>") < html.index("<code>slow_to_trace</code>")
    assert '<th class="num">compiling</th>' in html and ">compile</span>" in html


def test_a_report_of_a_trace_file_renders_costs_and_compilations_without_tensorflow(tmp_path):
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    path = tmp_path / "costs.jsonl"
    with tg.watch(trace_file=str(path)):
        for rows in (4, 5, 6):
            step(tf.ones((rows, rows)))
    code = ("import sys\nfrom traceguard._cli import main\ncode = main(sys.argv[1:])\n"
            "assert not {'tensorflow', 'keras', 'jax'} & set(sys.modules), sorted(sys.modules)\n"
            "sys.exit(code)\n")
    result = subprocess.run(
        [sys.executable, "-c", code, "report", "--full", str(path), "--html", str(tmp_path / "report.html"),
         "--trace-events", str(tmp_path / "trace.json")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr
    assert re.search(r"Function `matmuls` \(defined at test_costs.py:\d+\): 2 traces: 1 trace, 1 retrace, "
                     r"and 1 compilation; ", result.stdout)
    assert "#3 compile  (x=float32[6,6])" in result.stdout
    exported = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    compile_slices = [e for e in exported if e.get("cat") == "phase" and e["name"] == "compile"]
    assert len(compile_slices) == 3  # The first trace's first call, the retrace's, the compilation.
    assert ">compile</span>" in (tmp_path / "report.html").read_text()


def test_nothing_is_hooked_or_shadowed_once_watch_exits():
    from traceguard._compat import _function_calls
    from traceguard._compat.tensorflow import calls as _tf_calls

    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    with tg.watch():
        step(tf.ones((3, 3)))
        concrete = step.get_concrete_function(tf.ones((3, 3)))
        assert "_call_flat" in concrete.__dict__
    assert not _function_tracing.is_installed()
    assert "_call_flat" not in concrete.__dict__ and len(_tf_calls._watched) == 0
    assert _function_calls.current_call() is None
    step(tf.ones((4, 4)))  # A compilation nobody watches: nothing recorded, nothing raised.


def test_trace_monitor_fails_a_later_fit_whose_partial_batch_compiles():
    model = keras_model()
    x, y = np.ones((75, 8)), np.ones((75, 4))
    monitor = tg.callbacks.TraceMonitor(no_retrace_after="call")
    # Warm-up: batches of 32 and a last one of 6, the step traced once for any batch size.
    model.fit(x[:70], y[:70], batch_size=32, verbose=0, callbacks=[monitor])
    with pytest.raises(tg.RetraceError) as failure:
        model.fit(x, y, batch_size=32, verbose=0, callbacks=[monitor])  # A last batch of 11.
    assert failure.value.kind == "compile"
    assert [str(change) for change in failure.value.changes] == ["iterator[0]: dim 0 6 -> 11",
                                                                 "iterator[1]: dim 0 6 -> 11"]
    del monitor, failure  # The monitor records between calls while it lives.
    # A stack walk during `fit` (the call site, Keras's method) read this frame's `f_locals`: on
    # Python 3.11 the frame keeps that snapshot, with `monitor` in it, until it is read again.
    sys._getframe().f_locals  # noqa: B018
    gc.collect()
    tf.function(lambda v: v)(tf.ones(()))  # Its observer leaves at the next trace.
    assert not _function_tracing.is_installed()
