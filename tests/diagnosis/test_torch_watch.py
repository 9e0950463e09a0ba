"""`watch()`, its report and `no_retrace()` on torch: `torch.compile` and Keras 3's `jit_compile=True`.

Compiles use Dynamo's `eager` backend (Keras's `torch.compile` too, patched): the guards, the
recompiles and their reasons are Dynamo's, the same with Inductor, without its seconds per compile.
"""

import functools

import keras
import numpy as np
import pytest
import torch
from torch._dynamo.utils import clear_compilation_metrics, counters, get_compilation_metrics

import traceguard as tg
from traceguard._compat import _function_tracing
from traceguard._record import observers

pytestmark = pytest.mark.backend("torch")


def compiles_with_a_cache_entry():
    """torch's own record of its frame compiles that made a cache entry: a skipped frame (no graph)
    has `has_guarded_code` but no `graph_op_count`; a failed one neither."""
    return [m for m in get_compilation_metrics() if m.has_guarded_code and m.graph_op_count is not None]

HERE = __file__


def frame_name(record):
    """The name torch gives the frame a record compiled (a frame after a graph break is recorded as
    its function's, with the break's line)."""
    after = record.resumed_after
    return record.name if after is None else f"torch_dynamo_resume_in_{record.name}_at_{after.line}"


def line_of(text):
    with open(HERE) as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()
    yield
    torch._dynamo.reset()
    assert observers.observers == () and not _function_tracing.is_installed()


def test_the_report_names_the_change_torch_saw_and_the_fix():
    @torch.compile(backend="eager")
    def scale(x):
        return x * 2

    with tg.watch() as report:
        scale(torch.ones(8))
        scale(torch.ones(5))  # second-size
        scale(torch.ones(3))
    text = str(report)
    assert "1 function traced 2 times: 1 trace, 1 retrace" in text
    assert f"called at test_torch_watch.py:{line_of('# second-size')}" in text
    assert "changed: x: dim 0 8 -> 5" in text
    assert "torch.compile recompiled `scale`: a guard of its earlier compile failed: x: dim 0 8 -> 5." in text
    assert "`torch._dynamo.mark_dynamic(x, 0)`" in text and "dynamic=True" in text
    # torch's own words follow, verbatim.
    (runs,) = report.functions.values()
    assert runs.events[1].reason.endswith(
        "torch's guard failure: `tensor 'x' size mismatch at index 0. expected 8, actual 5`.")


def test_no_retrace_fails_on_a_recompile_after_warm_up_with_torchs_reason():
    @torch.compile(backend="eager")
    def shift(x, n):
        return x + n

    with tg.watch():
        shift(torch.ones(4), 2)
        with tg.no_retrace():
            shift(torch.ones(4), 2)  # A cache hit: no compile.
            with pytest.raises(tg.RetraceError) as raised:
                shift(torch.ones(4), 3)  # new-int
    message = str(raised.value)
    assert "`shift` retraced inside the `traceguard.no_retrace()` block." in message
    assert f"called at: {HERE}:{line_of('# new-int')}" in message
    assert "changed: n: 2 -> 3" in message
    assert "torch.tensor(n)" in message
    # torch finished the compile before traceguard raised: it is among torch's compiles.
    assert [m.co_name for m in get_compilation_metrics()] == ["shift", "shift"]


def _fixes(report, function):
    return [event.hint for runs in report.functions.values() for event in runs.events
            if event.function == function and event.kind.value == "retrace"]


def test_the_fix_of_a_value_guard_follows_what_torch_did_with_the_value():
    # torch 2.14.1: `n` becomes dynamic on its second value; a `range` bound stays guarded by value
    # (one compile per value, also with dynamic=True); a bool is guarded by value, each compile kept.
    @torch.compile(backend="eager")
    def shift(x, n):
        return x + n

    @torch.compile(backend="eager")
    def accumulate(x, start, end):
        for i in range(start + 1, end):
            x[i] += x[i - 1]
        return x

    @torch.compile(backend="eager")
    def gate(x, flag):
        return x * 2 if flag else x * 3

    with tg.watch() as report:
        for value in (2, 3, 4):
            shift(torch.ones(4), value)
            accumulate(torch.arange(10.0), value, 10)
        for flag in (True, False, True):
            gate(torch.ones(3), flag)
    (relaxed,) = _fixes(report, "shift")
    assert "this recompile made it dynamic" in relaxed and "later values reuse it" in relaxed
    specialised = _fixes(report, "accumulate")
    assert len(specialised) == 2 and all("guarded by its exact value" in fix and "tensor ops" in fix
                                         and "dynamic=True" not in fix for fix in specialised)
    (flag_fix,) = _fixes(report, "gate")
    assert flag_fix.startswith("Expected, once per value: torch.compile guards the bool `flag`")
    assert "Nothing to fix" in flag_fix and "dynamic=True" not in flag_fix


def test_a_requires_grad_recompile_names_the_argument_and_no_grad():
    layer = torch.nn.Linear(4, 4)

    @torch.compile(backend="eager")
    def forward(x):
        return torch.relu(layer(x))

    with tg.watch() as report:
        forward(torch.ones(2, 4))
        forward(torch.ones(2, 4, requires_grad=True))
    text = report.summary(full=True)
    assert "changed: x: requires_grad False -> True" in text
    (runs,) = report.functions.values()
    assert runs.events[1].reason.endswith(
        "torch's guard failure: `tensor 'x' requires_grad mismatch. expected requires_grad=0`.")
    (fix,) = _fixes(report, "forward")
    assert "`torch.no_grad()`" in fix and "`x.detach()`" in fix


@pytest.mark.parametrize("jit_compile", ["auto", False])
def test_a_keras_step_nothing_compiled_is_said_once_with_its_setting(jit_compile):
    # Keras 3.15.1 on torch: `jit_compile="auto"` resolves to False; no frame compiles.
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile("sgd", "mse", jit_compile=jit_compile)
    x, y = np.ones((32, 4), "float32"), np.ones((32, 1), "float32")
    with tg.watch() as report:
        model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        model.predict(x, verbose=0)
    assert get_compilation_metrics() == []
    assert report.uncached == {(): ("train_step", "jit_compile=False")}
    text = str(report)
    assert text.count("nothing is compiled") == 1
    assert ("Keras ran `train_step` eagerly (`jit_compile=False`; on torch `jit_compile=\"auto\"`, the "
            "default, is False): nothing is compiled, so nothing is recompiled") in text
    assert "0 functions traced" in text and "retrace" not in text.splitlines()[0]


def test_eager_runs_outside_a_keras_step_say_nothing_of_a_step():
    layer = keras.layers.Dense(2)
    with tg.watch() as report:
        layer(np.ones((3, 4), "float32"))
    assert report.uncached == {} and "nothing is compiled" not in str(report)


@pytest.fixture
def keras_compiles_eagerly(monkeypatch):
    """Keras's `jit_compile=True` steps compiled by Dynamo's `eager` backend."""
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))


@pytest.mark.slow  # About 30 s on 2 cores: Dynamo traces Keras's step in seconds even without Inductor.
def test_fit_with_jit_compile_names_the_partial_last_batch(keras_compiles_eagerly, records):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile("sgd", "mse", jit_compile=True)
    x, y = np.ones((40, 4), "float32"), np.ones((40, 1), "float32")
    with tg.watch() as report:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    text = str(report)
    # Every frame compile torch made a cache entry for, in order, with its reason: the records.
    compiles = [(m.co_name, m.recompile_reason) for m in compiles_with_a_cache_entry()]
    recorded = [(frame_name(r), r.backend_reasons[0] if r.backend_reasons else None)
                for r in records.records()]
    assert recorded == compiles
    assert sum(runs.kind_counts.get("trace", 0) + runs.kind_counts.get("retrace", 0)
               for runs in report.functions.values()) == len(compiles)
    assert ("train_step", None) in compiles and ("one_step_on_data", None) in compiles
    # The partial last batch (40 = 2 x 16 + 8), in both compiled steps, with the fix for arrays.
    assert "changed: data[0][0]: dim 0 16 -> 8" in text and "changed: data[0]: dim 0 16 -> 8" in text
    assert "choose a `batch_size` that divides the number of samples" in text
    # Keras's own `Tensor.backward()` breaks the step's graph (keras-team/keras#18569): named in
    # the step's compile, in Keras's file; the code after it compiles as a frame of its own.
    breaks = [(r.name, what, where.path) for r in records.records() for what, where in r.graph_breaks]
    assert any(name == "train_step" and what == "Unsupported Tensor.backward() call"
               and path.endswith("keras/src/backend/torch/trainer.py") for name, what, path in breaks)
    # The frame after it is a part of `train_step` (its first compile, not a recompile), in its report.
    # Measured (Keras 3.15.1, torch 2.14.1): two such frames, after line 70 and after line 77 (a
    # break in the first of them), both named after `train_step`; the second recompiles for the
    # last batch.
    frames = {}
    for record in records.records():
        if record.resumed_after is not None and record.name == "train_step":
            frames.setdefault(record.resumed_after.line, []).append(record.reason.value)
    assert len(frames) == 2 and all(reasons[0] == "part_of_trace" for reasons in frames.values())
    assert all(reason == "signature_changed" for reasons in frames.values() for reason in reasons[1:])
    (step,) = [runs for runs in report.functions.values() if runs.function == "train_step"]
    assert step.frames == 3 and len(step.graph_breaks) == 2
    assert ("train_step: compiled as 3 frames (2 graph breaks: Unsupported Tensor.backward() call at "
            "trainer.py:70 (Keras's code); ") in " ".join(text.split())
    assert not any(key.startswith("torch_dynamo_resume_in") for key in report.functions)
    first_step = next(event for runs in report.functions.values() for event in runs.events
                      if event.function == "train_step")
    assert "Graph break: Unsupported Tensor.backward() call at trainer.py:" in first_step.reason
    assert "(Keras's code); the code after it compiles as a frame of its own." in first_step.reason
    # The first step ran before gradients existed: expected once.
    assert "grad: None (before the first backward pass) -> a gradient" in text
    assert "Expected once per model: the first step ran before any gradient existed" in text


def test_a_function_broken_twice_reads_as_three_frames_live_and_from_its_trace_file(tmp_path):
    from trace_file_parity import schema_errors

    from traceguard._diagnosis.trace_file_reader import merged_explanation, read_trace_file

    @torch.compile(backend="eager")
    def twice(x):
        y = x + 1
        print("one")  # Break one.
        y = y * 2
        print("two")  # Break two.
        return y - 1

    path = tmp_path / "twice.jsonl"
    with tg.watch(trace_file=str(path)) as report:
        twice(torch.ones(3))
        twice(torch.ones(4))
    (runs,) = report.functions.values()
    # torch's own count: three frames (one code object each), each compiled twice.
    assert len({m.co_name for m in compiles_with_a_cache_entry()}) == runs.frames == 3
    assert [(what, where.line) for what, where in runs.graph_breaks] == [
        ("Failed to trace builtin operator", line_of("# Break one.")),
        ("Failed to trace builtin operator", line_of("# Break two."))]
    one, two = line_of("# Break one."), line_of("# Break two.")
    expected = (f"Graph breaks (1 function): twice: compiled as 3 frames (2 graph breaks: Failed to trace "
                f"builtin operator at test_torch_watch.py:{one}; Failed to trace builtin operator at "
                f"test_torch_watch.py:{two}) Dynamo compiles the code after a graph break as a frame of "
                "its own")
    read_back = merged_explanation([read_trace_file(str(path))])
    assert schema_errors(path) == []  # The documented schema, torch's verdicts included.
    for text in (report.summary(), report.summary(full=True), read_back.summary()):
        assert expected in " ".join(text.split())
    assert "1 function traced 6 times: 3 trace, 3 retrace" in report.summary()
    html = report._repr_html_()  # The notebook's display says it too, under the function's name.
    assert "; compiled as 3 frames (2 graph breaks: Failed to trace builtin operator at " in html


def test_no_retrace_fails_when_only_the_part_after_a_graph_break_recompiles():
    @torch.compile(backend="eager")
    def split(x, n):
        y = x + 1
        torch._dynamo.graph_break()  # `n` is used after it only: the next frame guards it.
        return y * n

    with tg.watch():
        split(torch.ones(3), 2)
        with pytest.raises(tg.RetraceError) as failure, tg.no_retrace():
            split(torch.ones(3), 3)
    message = " ".join(str(failure.value).split())
    assert message.startswith("`split` retraced inside the `traceguard.no_retrace()` block.")
    assert (f"why: torch.compile recompiled the part of `split` after the graph break at "
            f"test_torch_watch.py:{line_of('# `n` is used after it only')} (torch's frame "
            f"`torch_dynamo_resume_in_split_at_{line_of('# `n` is used after it only')}`): a guard of its "
            "earlier compile failed: n: 2 -> 3. torch's guard failure: `n == 2`.") in message


def test_a_trace_file_written_on_torch_reads_back_without_torch(tmp_path):
    import subprocess
    import sys

    @torch.compile(backend="eager")
    def scale(x):
        return x * 2

    path = tmp_path / "torch.jsonl"
    with tg.watch(trace_file=str(path)) as report:
        scale(torch.ones(8))
        scale(torch.ones(5))
    # Each line is the documented schema, and each event reads back viewing the very trace (torch's
    # own recompile reasons and graph breaks included).
    from trace_file_parity import assert_same_function_events, schema_errors

    assert schema_errors(path) == []
    assert assert_same_function_events(report, path) == 2
    # `traceguard report` with torch, TensorFlow, JAX and Keras refused.
    refuse = "; ".join(f"sys.modules[{name!r}] = None" for name in ("torch", "tensorflow", "jax", "keras"))
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; {refuse}; from traceguard._cli import main; "
                               f"sys.exit(main(['report', {str(path)!r}]))"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "changed: x: dim 0 8 -> 5" in result.stdout
    assert "torch.compile recompiled `scale`" in result.stdout
    assert "`tensor 'x' size mismatch at index 0." in result.stdout


def test_traceguard_run_reports_a_scripts_recompiles_and_the_demo_says_what_runs_on_torch(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "compiled.py"
    script.write_text("import torch\n\n@torch.compile(backend='eager')\ndef f(x):\n    return x * 2\n\n"
                      "for n in (8, 5, 3):\n    f(torch.ones(n))\n")
    result = subprocess.run([sys.executable, "-m", "traceguard", "run", str(script)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = result.stderr  # `run` leaves stdout to the script.
    assert "1 function traced 2 times: 1 trace, 1 retrace" in report
    assert "called at compiled.py:8" in report and "changed: x: dim 0 8 -> 5" in report
    demo = subprocess.run([sys.executable, "-m", "traceguard", "demo"], capture_output=True, text=True,
                          timeout=300)
    assert demo.returncode != 0
    assert "record your own script instead: `traceguard run script.py`" in demo.stderr
