"""Every script in examples/ and the demo run, and say what the README and docs say they say."""

import os
import pathlib
import subprocess
import sys

import pytest

from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# Examples that write files take a directory, so they write under tmp_path.
WRITES_FILES = {"html_timeline.py"}


def run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow  # A Python process that imports TensorFlow.
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, tmp_path):
    arguments = ["--out", str(tmp_path)] if path.name in WRITES_FILES else []
    out = run(str(path), *arguments)
    # Examples for `python -m traceguard run` are plain Keras scripts: no trace log of their own.
    if "import traceguard" in path.read_text():
        assert "TraceLog of layer" in out


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_seed_example_prints_once_per_body_run_and_explains_each():
    out = run(str(ROOT / "examples" / "why_two_traces.py"))
    # The example follows tf.keras: Keras 3 adds its symbolic pass to Keras 2's two traces.
    assert out.count("Tracing\n") == (3 if _compat.IS_KERAS_3 else 2)
    counts = ("1 symbolic, " if _compat.IS_KERAS_3 else "") + "1 trace, 1 variable_retrace"
    assert f"TraceLog of layer 'eager_layer': {counts}\n" in out
    # The README shows the whole output, as run on TensorFlow 2.21 with Keras 3.
    if _compat.IS_KERAS_3 and _compat.TF_VERSION == (2, 21):
        assert f"```text\n{out}```" in (ROOT / "README.md").read_text()


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_fit_example_shows_the_partial_batch_retrace():
    out = run(str(ROOT / "examples" / "fit_partial_batch.py"))
    assert "changed: inputs: dim 0 32 -> None" in out
    flat = " ".join(out.split())
    assert "costs a trace" in flat and "drop_remainder" in flat
    if _compat.IS_KERAS_3:  # Measured on Keras 3.15: arrays have no `drop_remainder`; the fix says so.
        assert ("`fit` got 70 samples in batches of 32: the last batch of 6 has a new shape" in flat
                and "Arrays have no `drop_remainder`" in flat)


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_print_example_prints_what_the_side_effects_page_shows():
    out = run(str(ROOT / "examples" / "print_under_tracing.py"))
    assert out.splitlines()[:5] == ["Tracing for (60, 28, 28)", "Tracing for (32, 28, 28)",
                                    "Batch of 60", "Batch of 60", "Batch of 32"]
    page = (ROOT / "docs" / "side-effects.md").read_text()
    assert "```text\n" + "\n".join(out.splitlines()[:5]) + "\n```" in page


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_html_timeline_example_writes_the_seed_and_model_timelines(tmp_path):
    out = run(str(ROOT / "examples" / "html_timeline.py"), "--out", str(tmp_path))
    for page in ("seed_timeline.html", "model_timeline.html"):
        assert f"wrote {tmp_path / page}\n" in out
    seed = (tmp_path / "seed_timeline.html").read_text(encoding="utf-8")
    # Keras 3: symbolic, trace, variable_retrace; Keras 2 has no symbolic pass.
    assert f'<g class="row" data-layer="eager_layer" data-runs="{3 if _compat.IS_KERAS_3 else 2}">' in seed
    model = (tmp_path / "model_timeline.html").read_text(encoding="utf-8")
    # Keras 3: symbolic, the two fits' traces, predict's. Keras 2 retraces the first fit's
    # train_function for the optimizer's slot variables: one run more.
    for layer in ("encoder", "bottleneck", "head"):
        assert f'<g class="row" data-layer="{layer}" data-runs="{4 if _compat.IS_KERAS_3 else 5}">' in model
    assert model.count('<rect class="k-retrace"') == 3
    assert "<code>inputs: dim 0 32 -&gt; None</code>" in model


def test_demo_shows_the_double_trace_then_the_fix():
    out = run("-m", "traceguard", "demo")
    runs = 3 if _compat.IS_KERAS_3 else 2
    assert f"call's body ran {runs} times; tf.function's tracing count is 2" in out
    assert "-> 1 run under tf.function; tracing count 1." in out


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_demo_shows_the_seed_print_under_once_and_tf_print():
    out = run("-m", "traceguard", "demo")
    once = out[out.index('3. The same print, routed by @traceguard.side_effects(print="once")'):]
    # Keras 2 has no symbolic build pass: one body run fewer.
    runs = "4 times: symbolic, " if _compat.IS_KERAS_3 else "3 times: "
    assert once.splitlines()[2:5] == [
        "  print() in call: tracing for (60, 28, 28)",
        "  print() in call: tracing for (32, 28, 28)",
        f"   -> printed once per input signature, while call's body ran {runs}"
        "trace, variable_retrace, retrace.",
    ]
    each_step = out[out.index('4. With print="tf.print"'):]
    assert each_step.splitlines()[2:6] == [
        "  print() in call: a batch of 60",
        "  print() in call: a batch of 60",
        "  print() in call: a batch of 32",
        f"   -> printed at each of the 3 calls (call's body ran {4 if _compat.IS_KERAS_3 else 3} times, "
        "to build the graphs).",
    ]


@pytest.mark.slow  # A Python process that imports TensorFlow.
@pytest.mark.parametrize("version", [2, 3])
def test_demo_runs_on_the_keras_asked_for_or_says_what_is_missing(version):
    try:
        flavor = _compat.keras2_flavor() if version == 2 else _compat.keras3_flavor()
    except ImportError as error:
        result = subprocess.run([sys.executable, "-m", "traceguard", "demo", "--keras", str(version)],
                                capture_output=True, text=True, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert result.returncode == 2
        assert f"error: --keras {version}: {error}" in result.stderr
        return
    out = run("-m", "traceguard", "demo", "--keras", str(version))
    assert f"with {flavor.describe()} ({flavor.name})" in out
    runs = 3 if version == 3 else 2
    assert f"call's body ran {runs} times; tf.function's tracing count is 2" in out
    symbolic = 1 if version == 3 else 0
    assert f"-> {symbolic} symbolic run, 1 eager run." in out


def test_cli_without_command_explains_usage():
    result = subprocess.run([sys.executable, "-m", "traceguard"], capture_output=True, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and "the following arguments are required: COMMAND" in result.stderr
