"""Trace snapshots in pytest (`--traceguard-snapshot`): inner sessions run by `pytester`."""

import pathlib
import textwrap

import keras
import pytest

from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")

pytest_plugins = ["pytester"]
# The inner tests `fit` a model of this `keras`: Keras 3's train step is `one_step_on_data`, and
# traces once per batch size; Keras 2's is `train_function`, whose first trace has a variable
# retrace (the optimizer's step counter).
KERAS_3 = _compat.parse_version(keras.__version__) >= (3,)

PLUGIN = "_traceguard_pytest_plugin"
SNAPSHOT = pathlib.Path("__trace_snapshots__", "test_training.traces")
SHOWN = "__trace_snapshots__/test_training.traces"  # As the plugin names it, from the root.

TRAINING = textwrap.dedent("""
    import numpy as np
    import keras
    import tensorflow as tf

    SAMPLES = {samples}


    def test_fit():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x, y = np.ones((70, 4), "float32"), np.ones((70, 1), "float32")
        model.fit(x[:64], y[:64], batch_size=32, verbose=0)
        model.fit(x[:SAMPLES], y[:SAMPLES], batch_size=32, verbose=0)


    def test_function():
        @tf.function
        def double(x, scale):
            return x * scale

        double(tf.ones((3,)), 2)
        double(tf.ones((3,)), 2)
""")


@pytest.fixture
def run_training(pytester, monkeypatch):
    """Writes the test module with `samples` for `fit`, and runs pytest on it in-process."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(samples, *options):
        pytester.makepyfile(test_training=TRAINING.format(samples=samples))
        return pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider", *options)

    return run


def test_snapshot_passes_then_fails_on_a_partial_batch_then_passes_after_update(run_training, pytester):
    result = run_training(64, "--traceguard-snapshot")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"*test_fit has no trace snapshot in {SHOWN}*"])

    result = run_training(64, "--traceguard-snapshot-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"traceguard: rewrote the trace snapshots {SHOWN}"])
    written = (pytester.path / SNAPSHOT).read_text()
    if KERAS_3:
        assert ("test_fit:\n  function one_step_on_data:\n"
                "    trace  data=(float32[32,4], float32[32,1])\n") in written
        assert ("  layer dense in one_step_on_data:\n"
                "    trace  inputs=float32[32,4], training=True\n") in written
        # Keras named the second Dense dense_1 (or more, after earlier sessions): by its order here.
        assert ("  layer dense#2 in one_step_on_data:\n"
                "    trace  inputs=float32[32,2], training=True\n") in written
    else:
        assert ("test_fit:\n  function train_function:\n"
                "    trace  iterator=(float32[32,4], float32[32,1])\n"
                "    variable_retrace  iterator=(float32[32,4], float32[32,1])\n") in written
        assert ("  layer dense in train_function:\n    trace  inputs=float32[32,4]\n"
                "    variable_retrace  inputs=float32[32,4]\n") in written
        assert ("  layer dense#2 in train_function:\n    trace  inputs=float32[32,2]\n"
                "    variable_retrace  inputs=float32[32,2]\n") in written
    assert ("test_function:\n  function test_function.<locals>.double:\n"
            "    trace  x=float32[3], scale=2\n") in written

    run_training(64, "--traceguard-snapshot").assert_outcomes(passed=2)

    # 70 samples in batches of 32 in the second `fit`: the last batch of 6 retraces the step.
    result = run_training(70, "--traceguard-snapshot")
    result.assert_outcomes(passed=1, failed=1)
    if KERAS_3:
        differences = [
            "  function `one_step_on_data`: 1 -> 2 traces: retrace, "
            "data[0]: dim 0 32 -> None; data[1]: dim 0 32 -> None",
            "  function `multi_step_on_iterator`: 1 -> 2 traces: retrace, "
            "iterator[0]: dim 0 32 -> None; iterator[1]: dim 0 32 -> None",
            "  layer 'sequential' in `one_step_on_data`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> None",
            "  layer 'functional' in `one_step_on_data`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> None",
            "  layer 'dense' in `one_step_on_data`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> None",
            "  layer 'dense#2' in `one_step_on_data`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> None",
        ]
    else:
        differences = [
            "  function `train_function`: 2 -> 3 traces: retrace, "
            "iterator[0]: dim 0 32 -> None; iterator[1]: dim 0 32 -> None",
            "  layer 'dense' in `train_function`: 2 -> 3 traces: retrace, inputs: dim 0 32 -> None",
            "  layer 'dense#2' in `train_function`: 2 -> 3 traces: retrace, inputs: dim 0 32 -> None",
            "  layer 'sequential' in `train_function`: 2 -> 3 traces: retrace, inputs: dim 0 32 -> None",
        ]
    assert "\n".join([
        f"The traces of test_fit differ from its snapshot in {SHOWN}:",
        *differences,
        "If the change is intended, rewrite the snapshot: pytest --traceguard-snapshot-update",
    ]) in result.stdout.str()
    assert (pytester.path / SNAPSHOT).read_text() == written  # A failing check writes nothing.

    run_training(70, "--traceguard-snapshot-update").assert_outcomes(passed=2)
    argument = "data" if KERAS_3 else "iterator"
    assert f"    retrace  {argument}=(float32[None,4], float32[None,1])\n" in \
        (pytester.path / SNAPSHOT).read_text()
    run_training(70, "--traceguard-snapshot").assert_outcomes(passed=2)

def test_snapshot_is_the_same_on_every_run(run_training, pytester):
    run_training(70, "--traceguard-snapshot-update").assert_outcomes(passed=2)
    first = (pytester.path / SNAPSHOT).read_text()
    # Again, with new layers numbered further by Keras and the tests in the other order.
    (pytester.path / SNAPSHOT).unlink()
    run_training(70, "--traceguard-snapshot-update", "-p", "no:randomly",
                 "test_training.py::test_function", "test_training.py::test_fit").assert_outcomes(passed=2)
    assert (pytester.path / SNAPSHOT).read_text() == first
    assert "0x" not in first and str(pytester.path) not in first and " ms" not in first


def test_update_keeps_the_snapshots_of_tests_that_did_not_run(run_training, pytester):
    run_training(64, "--traceguard-snapshot-update").assert_outcomes(passed=2)
    run_training(70, "--traceguard-snapshot-update", "-k", "test_function").assert_outcomes(passed=1)
    text = (pytester.path / SNAPSHOT).read_text()
    assert "test_fit:\n" in text and "    retrace  " not in text  # test_fit's, from 64 samples.


@pytest.mark.parametrize("line, error", [
    ("    trace  x=float32[3]",
     "1: a trace outside any function or layer; expected a `  function NAME:` line first"),
    ("test_fit:\n  layer dense\n", "2: not a traced function or layer; expected `  function NAME:` or"),
    ("test_fit:\n  function f:\n    retraced  x=float32[3]",
     "3: unknown trace kind 'retraced'; expected one of trace, variable_retrace, retrace, save"),
    ("test_fit:\n   function f:", "2: indented by 3 spaces"),
    ("test_fit:\ntest_fit:", "2: test 'test_fit' appears twice"),
])
def test_hand_edited_snapshot_fails_naming_file_and_line(run_training, pytester, line, error):
    (pytester.path / SNAPSHOT.parent).mkdir()
    (pytester.path / SNAPSHOT).write_text(line + "\n")
    result = run_training(64, "--traceguard-snapshot", "-k", "test_fit")
    result.assert_outcomes(failed=1)
    expected = f"*{pytester.path / SNAPSHOT}:{error}*"
    result.stdout.fnmatch_lines([expected.replace("[", "[[]")])
    result.stdout.fnmatch_lines(["*Fix the line, or rewrite the file with "
                                 "`pytest --traceguard-snapshot-update`.*"])


def test_update_rewrites_a_hand_edited_snapshot_it_cannot_read(run_training, pytester):
    (pytester.path / SNAPSHOT.parent).mkdir()
    (pytester.path / SNAPSHOT).write_text("test_fit:\n  function f:\n    traced  x=float32[3]\n")
    run_training(64, "--traceguard-snapshot-update").assert_outcomes(passed=2)
    run_training(64, "--traceguard-snapshot").assert_outcomes(passed=2)
    assert "traced" not in (pytester.path / SNAPSHOT).read_text()
