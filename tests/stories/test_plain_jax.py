"""Plain JAX is a first-class stack (#40): `jax.jit` recorded with no Keras, and no TensorFlow.

Runs wherever JAX is the backend: in the `jax-only` CI job (jax without Keras or
TensorFlow) and in `jax-keras3`. The tests of a Keras installed beside JAX whose own
backend is missing run where Keras is installed and TensorFlow is not.
"""

import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

import traceguard as tg
from traceguard import _compat

pytestmark = [pytest.mark.backend("jax"), pytest.mark.without_keras]

ROOT = pathlib.Path(__file__).resolve().parents[2]
HAS_KERAS = _compat.DEFAULT_FLAVOR is not None
KERAS_WITHOUT_TENSORFLOW = (importlib.util.find_spec("keras") is not None
                            and importlib.util.find_spec("tensorflow") is None)

# A plain training-style loop: one new batch size, so jax.jit traces `step` twice; it prints
# JAX's own count of what it compiled, the backend's truth the report must agree with.
LOOP = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def step(w, x):
        return jnp.tanh(x @ w).sum()


    w = jnp.ones((4, 3))
    for rows in (8, 8, 5, 8):
        step(w, jnp.ones((rows, 4)))
    print("jax cache size", step._cache_size())
""")


def traceguard(*args, cwd, **environment):
    """`python -m traceguard ARGS` in a new process, KERAS_BACKEND unset unless given."""
    env = {name: value for name, value in os.environ.items() if name != "KERAS_BACKEND"}
    env.update(PYTHONPATH=str(ROOT), KERAS_HOME=str(cwd / "keras-home"), **environment)
    return subprocess.run([sys.executable, "-m", "traceguard", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


def test_run_records_a_plain_jit_loop_with_jax_own_count(tmp_path):
    (tmp_path / "loop.py").write_text(LOOP)
    result = traceguard("run", "--full", "--output", "report.txt", "loop.py", cwd=tmp_path,
                        **({"KERAS_BACKEND": "jax"} if HAS_KERAS else {}))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "jax cache size 2\n"
    report = (tmp_path / "report.txt").read_text()
    assert "1 function traced" in report
    assert "Function `step` (defined at loop.py:5): 2 traces: 1 trace, 1 retrace" in report
    assert "changed: x: dim 0 8 -> 5" in report
    assert "tensorflow" not in result.stderr.lower()


def test_watch_records_plain_jit_functions_as_jax_traces_them():
    @jax.jit
    def step(w, x):
        return jnp.tanh(x @ w).sum()

    w = jnp.ones((4, 3))
    with tg.watch() as report:
        for rows in (8, 8, 5, 8):
            step(w, jnp.ones((rows, 4)))
    [runs] = [runs for runs in report.functions.values() if runs.function == "step"]
    assert [event.kind.value for event in runs.events] == ["trace", "retrace"]
    assert len(runs.events) == step._cache_size() == 2
    assert [str(change) for change in runs.events[1].changes] == ["x: dim 0 8 -> 5"]
    assert report.layers == {}


@pytest.mark.skipif(HAS_KERAS, reason="Keras imports here: the Keras demo runs")
def test_demo_without_keras_runs_a_plain_jit_function(tmp_path):
    result = traceguard("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"traceguard demo on JAX {jax.__version__}, without Keras: "
                                    "plain jax.jit\n")
    assert "1 function traced 2 times: 1 trace, 1 retrace" in result.stdout
    assert "1. `step`: 1 retrace (#2)" in result.stdout
    assert "changed: inputs: dim 0 8 -> 5" in result.stdout


@pytest.mark.skipif(HAS_KERAS, reason="Keras imports here")
def test_trace_aware_layer_without_keras_says_why_and_what_to_install():
    with pytest.raises(ImportError, match=r"^Keras is not installed: traceguard records plain "
                                          r"jax\.jit functions here \(pip install keras, and "
                                          r"KERAS_BACKEND=jax, for Keras on JAX\)\.$"):
        class Seed(tg.TraceAwareLayer):
            pass
    with pytest.raises(ImportError, match=r"^Keras is not installed"):
        import traceguard.callbacks  # noqa: F401


@pytest.mark.skipif(not KERAS_WITHOUT_TENSORFLOW, reason="needs Keras installed, TensorFlow not")
def test_keras_whose_default_backend_is_missing_is_named_in_one_line(tmp_path):
    # Keras's default backend is TensorFlow: without it Keras cannot import (as `import keras`
    # says), and traceguard records the plain jax.jit functions and says the fix once.
    (tmp_path / "loop.py").write_text(LOOP)
    result = traceguard("run", "--full", "--output", "report.txt", "loop.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    keras_version = importlib.metadata.version("keras")
    note = (f"Keras {keras_version} cannot import: its backend is 'tensorflow' (Keras's default), "
            "which is not installed. Fix: set KERAS_BACKEND=jax to run Keras on JAX; traceguard "
            "records plain jax.jit meanwhile.")
    assert [line for line in result.stderr.splitlines() if "Keras" in line] == [note]
    assert "Function `step` (defined at loop.py:5): 2 traces" in (tmp_path / "report.txt").read_text()


@pytest.mark.skipif(not KERAS_WITHOUT_TENSORFLOW, reason="needs Keras installed, TensorFlow not")
def test_keras_json_backend_is_followed_as_keras_does(tmp_path):
    # No KERAS_BACKEND: Keras reads `$KERAS_HOME/keras.json`, and so does traceguard.
    (tmp_path / "keras-home").mkdir()
    (tmp_path / "keras-home" / "keras.json").write_text('{"backend": "jax"}')
    (tmp_path / "layer.py").write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp
        import keras

        dense = keras.layers.Dense(4, name="plain")
        dense(jnp.ones((8, 3)))
        step = jax.jit(lambda trainable, x: dense.stateless_call(trainable, [], x)[0])
        trainable = [v.value for v in dense.trainable_variables]
        step(trainable, jnp.ones((8, 3)))
        step(trainable, jnp.ones((5, 3)))
        print(keras.backend.backend())
    """))
    result = traceguard("run", "--full", "--output", "report.txt", "layer.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "jax\n"
    report = (tmp_path / "report.txt").read_text()
    assert "Layer 'plain' (Dense, plain Keras layer): 1 trace, 1 retrace" in report
    assert "cannot import" not in result.stderr


def test_keras_backend_setting_is_read_as_keras_reads_it(tmp_path, monkeypatch):
    from traceguard._compat._backend import keras_backend_setting

    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert keras_backend_setting() == ("tensorflow", "Keras's default")
    (tmp_path / "keras.json").write_text('{"backend": "jax", "floatx": "float32"}')
    assert keras_backend_setting() == ("jax", str(tmp_path / "keras.json"))
    monkeypatch.setenv("KERAS_BACKEND", "torch")  # The variable wins, as in Keras.
    assert keras_backend_setting() == ("torch", "KERAS_BACKEND")
    monkeypatch.setenv("KERAS_BACKEND", "")  # Keras ignores it empty.
    assert keras_backend_setting() == ("jax", str(tmp_path / "keras.json"))
