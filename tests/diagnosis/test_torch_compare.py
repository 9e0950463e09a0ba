"""`traceguard.compare()` and `traceguard compare` on torch: trace files of `torch.compile` runs.

Each "worker" or "run" is a `watch(trace_file=...)` block over a fresh `torch.compile`d function,
after `torch._dynamo.reset()`: torch keeps its compiled code per code object, so a process of its
own is what an empty Dynamo cache stands for. Compiles use Dynamo's `eager` backend (the same
guards and recompiles as Inductor, without its seconds per compile).
"""

import functools
import io

import keras
import numpy as np
import pytest
import torch

import traceguard as tg
from traceguard._diagnosis.compare_files import compare_files

pytestmark = pytest.mark.backend("torch")


def make_step():
    @torch.compile(backend="eager")
    def step(x):
        y = x * 2
        torch._dynamo.graph_break()  # The code after it is a frame of its own.
        return y + 1

    return step


DEFINITION = f"test_torch_compare.py:{make_step.__code__.co_firstlineno + 1}"
STEP = f"`step` ({DEFINITION})"


def run(path, label, sizes):
    torch._dynamo.reset()  # A process of its own: an empty Dynamo cache.
    step = make_step()
    with tg.watch(trace_file=path, trace_file_label=label):
        for rows in sizes:
            step(torch.ones((rows, 3)))
    torch._dynamo.reset()
    return str(path)


def run_compare(*arguments, **options):
    out, err = io.StringIO(), io.StringIO()
    code = compare_files(list(arguments), out, err, **options)
    return code, out.getvalue(), err.getvalue()


def test_workers_that_compiled_alike_agree_and_one_with_another_shape_is_named(tmp_path):
    paths = [run(tmp_path / f"worker-{n}.jsonl", f"worker-{n}", sizes)
             for n, sizes in enumerate(([8, 8], [8, 8], [6, 6]))]
    assert not tg.compare(paths[:2]).diverged
    (divergence,) = tg.compare(paths).divergences
    # The first compile of `step` already differs: its frame, and the frame after its break.
    assert (divergence.source, divergence.function.name, divergence.number, divergence.differences) == \
        ("worker-2", "step", 1, ("signature",))
    assert [str(change) for change in divergence.changes] == ["x: dim 0 8 -> 6"]
    code, out, err = run_compare(*paths)
    assert (code, err) == (1, "")
    assert out.splitlines()[:7] == [
        "traceguard compare: 3 workers of one job (worker-0, worker-1, worker-2; their labels name them)",
        "worker-2 traced differently from the others (worker-0, worker-1) in 1 of 1 function: `step`.",
        "",
        f"worker-2, {STEP}, trace #1: another signature",
        "  worker-2: #1 trace x: torch.float32[6,3]",
        "  worker-0, worker-1: #1 trace x: torch.float32[8,3]",
        "  differs: x: dim 0 8 -> 6",
    ]


def test_a_run_that_recompiled_names_each_frame_with_the_baselines_closest(tmp_path):
    baseline = run(tmp_path / "a.jsonl", "run-a", [8, 8])
    later = run(tmp_path / "b.jsonl", "run-b", [8, 5])
    comparison = tg.compare([later], baseline=baseline)
    assert (comparison.mode, comparison.baseline, comparison.missing_traces) == ("runs", "run-a", ())
    # Both frames of `step` recompiled for 5 rows: `step`'s own (`x`) and the one after its graph
    # break (`y`, the value live at the break), each against the baseline's compile of that frame.
    assert [(new.step.number, new.closest.number, [str(c) for c in new.changes])
            for new in comparison.new_traces] == [(3, 1, ["x: dim 0 8 -> 5"]), (4, 2, ["y: dim 0 8 -> 5"])]
    code, out, _ = run_compare(later, baseline=baseline, fail_on_new=True)
    assert code == 1
    assert out.splitlines()[:2] == [
        "traceguard compare: run-b against the baseline run-a",
        "run-b made 2 traces that run-a did not, and run-a made 0 traces that run-b did not."]
    lines = out.splitlines()
    frame = f"test_torch_compare.py:{make_step.__code__.co_firstlineno + 4}"  # `step`'s graph break.
    assert lines[lines.index("    differs: x: dim 0 8 -> 5") + 1:][:3] == [
        f"  run-b, {STEP} #4 retrace y: torch.float32[5,3] (the part after the graph break at {frame})",
        f"    closest in run-a: #2 trace y: torch.float32[8,3] (the part after the graph break at {frame})",
        "    differs: y: dim 0 8 -> 5"]
    assert comparison.new_traces[1].step.to_dict()["resumed_after"] == frame


@pytest.mark.slow  # Two Keras `fit`s with `jit_compile=True`: about 40 s on 2 cores.
def test_keras_fits_on_torch_compare_by_their_steps_partial_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))

    def fit(path, label, samples):
        torch._dynamo.reset()
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(2)])
        model.compile("sgd", "mse", jit_compile=True)
        x, y = np.ones((samples, 4), "float32"), np.ones((samples, 2), "float32")
        with tg.watch(trace_file=path, trace_file_label=label):
            model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        torch._dynamo.reset()
        return str(path)

    baseline, later = fit(tmp_path / "a.jsonl", "a", 32), fit(tmp_path / "b.jsonl", "b", 40)
    comparison = tg.compare([later], baseline=baseline)
    # 40 samples leave a last batch of 8: Keras's steps recompile for it, and nothing else differs.
    assert comparison.missing_traces == ()
    names = {new.function.name for new in comparison.new_traces}
    assert {"one_step_on_data", "train_step"} <= names
    assert "data[0][0]: dim 0 16 -> 8" in {str(c) for new in comparison.new_traces for c in new.changes}
