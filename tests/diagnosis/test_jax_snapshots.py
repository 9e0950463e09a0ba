"""Trace snapshots (`--traceguard-snapshot`) on Keras 3's JAX backend: `jax.jit` traces each batch size."""

import pathlib
import textwrap

import pytest

pytestmark = pytest.mark.backend("jax")

pytest_plugins = ["pytester"]

SNAPSHOT = pathlib.Path("__trace_snapshots__", "test_training.traces")
TRAINING = textwrap.dedent("""
    import numpy as np
    import keras


    def test_fit():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x, y = np.ones((70, 4), "float32"), np.ones((70, 1), "float32")
        model.fit(x[:{samples}], y[:{samples}], batch_size=32, verbose=0)
""")


@pytest.fixture
def run_training(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(samples, *options):
        pytester.makepyfile(test_training=TRAINING.format(samples=samples))
        return pytester.runpytest("-p", "_traceguard_pytest_plugin", "-p", "no:cacheprovider", *options)

    return run


def test_a_partial_batch_fails_the_snapshot_with_the_batch_size_then_update_passes(run_training, pytester):
    run_training(64, "--traceguard-snapshot-update").assert_outcomes(passed=1)
    assert "  function train_step:\n    trace  state=" in (pytester.path / SNAPSHOT).read_text()
    run_training(64, "--traceguard-snapshot").assert_outcomes(passed=1)

    result = run_training(70, "--traceguard-snapshot")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert ("  function `train_step`: 1 -> 2 traces: retrace, data[0]: dim 0 32 -> 6; "
            "data[1]: dim 0 32 -> 6\n") in output
    assert "  layer 'dense' in `train_step`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> 6\n" in output

    run_training(70, "--traceguard-snapshot-update").assert_outcomes(passed=1)
    run_training(70, "--traceguard-snapshot").assert_outcomes(passed=1)
