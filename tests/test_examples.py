"""Every script in examples/ and the demo run, and say what the README says they say."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# Examples that write files take a directory, so they write under tmp_path.
WRITES_FILES = {"html_timeline.py"}


def run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, tmp_path):
    arguments = ["--out", str(tmp_path)] if path.name in WRITES_FILES else []
    out = run(str(path), *arguments)
    # Examples for `python -m traceguard run` are plain Keras scripts: no trace log of their own.
    if "import traceguard" in path.read_text():
        assert "TraceLog of layer" in out


def test_seed_example_prints_three_times_and_explains_each():
    out = run(str(ROOT / "examples" / "why_two_traces.py"))
    assert out.count("Tracing\n") == 3
    assert "1 symbolic, 1 trace, 1 variable_retrace" in out


def test_fit_example_shows_the_partial_batch_retrace():
    out = run(str(ROOT / "examples" / "fit_partial_batch.py"))
    assert "changed: inputs: dim 0 32 -> None" in out and "drop_remainder=True" in out


def test_print_example_prints_what_the_readme_shows():
    out = run(str(ROOT / "examples" / "print_under_tracing.py"))
    assert out.splitlines()[:5] == ["Tracing for (60, 28, 28)", "Tracing for (32, 28, 28)",
                                    "Batch of 60", "Batch of 60", "Batch of 32"]
    readme = (ROOT / "README.md").read_text()
    assert "```text\n" + "\n".join(out.splitlines()[:5]) + "\n```" in readme


def test_html_timeline_example_writes_the_seed_and_model_timelines(tmp_path):
    out = run(str(ROOT / "examples" / "html_timeline.py"), "--out", str(tmp_path))
    for page in ("seed_timeline.html", "model_timeline.html"):
        assert f"wrote {tmp_path / page}\n" in out
    seed = (tmp_path / "seed_timeline.html").read_text(encoding="utf-8")
    assert '<g class="row" data-layer="eager_layer" data-runs="3">' in seed
    model = (tmp_path / "model_timeline.html").read_text(encoding="utf-8")
    for layer in ("encoder", "bottleneck", "head"):
        assert f'<g class="row" data-layer="{layer}" data-runs="4">' in model
    assert model.count('<rect class="k-retrace"') == 3
    assert "<code>inputs: dim 0 32 -&gt; None</code>" in model


def test_demo_shows_the_double_trace_then_the_fix():
    out = run("-m", "traceguard", "demo")
    assert "call's body ran 3 times; tf.function's tracing count is 2" in out
    assert "-> 1 run under tf.function; tracing count 1." in out


def test_demo_shows_the_seed_print_under_once_and_tf_print():
    out = run("-m", "traceguard", "demo")
    once = out[out.index('3. The same print, routed by @traceguard.side_effects(print="once")'):]
    assert once.splitlines()[2:5] == [
        "  print() in call: tracing for (60, 28, 28)",
        "  print() in call: tracing for (32, 28, 28)",
        "   -> printed once per input signature, while call's body ran 4 times: "
        "symbolic, trace, variable_retrace, retrace.",
    ]
    each_step = out[out.index('4. With print="tf.print"'):]
    assert each_step.splitlines()[2:6] == [
        "  print() in call: a batch of 60",
        "  print() in call: a batch of 60",
        "  print() in call: a batch of 32",
        "   -> printed at each of the 3 calls (call's body ran 4 times, to build the graphs).",
    ]


def test_cli_without_command_explains_usage():
    result = subprocess.run([sys.executable, "-m", "traceguard"], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and "the following arguments are required: COMMAND" in result.stderr
