"""Trace snapshots rewritten by several processes at once (pytest-xdist's workers)."""

import pathlib
import textwrap

import pytest
import tensorflow as tf

import traceguard as tg
from traceguard._diagnosis.snapshots import SnapshotSession
from traceguard._reports.snapshot_file import read

pytestmark = pytest.mark.backend("tensorflow")

pytest_plugins = ["pytester"]


def _report(*inputs):
    step = tf.function(lambda x: x * 2)
    with tg.watch() as report:
        for x in inputs:
            step(x)
    return report


def test_sessions_updating_one_file_keep_each_others_tests(tmp_path):
    test_file = tmp_path / "test_model.py"
    first, second = SnapshotSession(True, tmp_path), SnapshotSession(True, tmp_path)
    # Both read the file before either writes it, as two workers do.
    first.check(test_file, "test_a", _report(tf.ones((2,))))
    second.check(test_file, "test_b", _report(tf.ones((2,)), tf.ones((3,))))
    path = SnapshotSession.path_for(test_file)
    assert first.finish() == [path] and second.finish() == [path]
    tests = read(path)
    assert sorted(tests) == ["test_a", "test_b"]
    assert [trace.kind for traces in tests["test_b"].values() for trace in traces] == [
        "trace", "retrace"]
    assert not list(path.parent.glob("*.lock")) and not list(path.parent.glob("*.tmp"))


def test_update_keeps_a_test_it_did_not_change_and_one_another_session_wrote(tmp_path):
    test_file = tmp_path / "test_model.py"
    session = SnapshotSession(True, tmp_path)
    session.check(test_file, "test_a", _report(tf.ones((2,))))
    session.finish()
    # The same test again, unchanged, while another session adds one: nothing lost.
    again, other = SnapshotSession(True, tmp_path), SnapshotSession(True, tmp_path)
    again.check(test_file, "test_a", _report(tf.ones((2,))))
    other.check(test_file, "test_b", _report(tf.ones((4,))))
    assert other.finish() == [SnapshotSession.path_for(test_file)]
    assert again.finish() == []  # Its test is as the file has it: nothing to write.
    assert sorted(read(SnapshotSession.path_for(test_file))) == ["test_a", "test_b"]


FUNCTIONS = textwrap.dedent("""
    import tensorflow as tf


    def _traced(*sizes):
        step = tf.function(lambda x: x + 1)
        for size in sizes:
            step(tf.ones((size,)))

    {tests}
""")


@pytest.mark.slow
def test_update_under_xdist_writes_every_workers_tests(pytester, monkeypatch):
    pytest.importorskip("xdist")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    names = [f"test_{i}" for i in range(4)]
    pytester.makepyfile(test_steps=FUNCTIONS.format(tests="\n\n".join(
        f"def {name}():\n    _traced(*range(1, {i + 2}))\n" for i, name in enumerate(names))))
    result = pytester.runpytest_subprocess(
        "-p", "_traceguard_pytest_plugin", "-p", "xdist", "-n", "2", "-p", "no:cacheprovider",
        "--traceguard-snapshot-update")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["traceguard: rewrote the trace snapshots __trace_snapshots__/test_steps.traces"])
    path = pathlib.Path(pytester.path, "__trace_snapshots__", "test_steps.traces")
    tests = read(path)
    assert sorted(tests) == names
    # test_i traces i + 1 sizes: a trace, then a retrace each.
    assert [sum(len(traces) for traces in tests[name].values()) for name in names] == [1, 2, 3, 4]
    result = pytester.runpytest_subprocess(
        "-p", "_traceguard_pytest_plugin", "-p", "xdist", "-n", "2", "-p", "no:cacheprovider",
        "--traceguard-snapshot")
    result.assert_outcomes(passed=4)
