"""traceguard's pytest plugin: `@pytest.mark.max_traces(n)`, `@pytest.mark.no_retrace`,
the trace snapshots of `--traceguard-snapshot`, and the deprecated `trace_budget` fixture.

Registered through the `pytest11` entry point, so pytest imports it at every
start in any environment where traceguard is installed. It is a top-level
module, outside the `traceguard` package, because importing a submodule imports
its package first, and `traceguard` imports TensorFlow; hypothesis keeps its
plugin in `_hypothesis_pytestplugin.py` for the same reason. traceguard itself
is imported only when a test uses the fixture or a marker, or the snapshot mode
is on. Each marker is its context manager around the test, with the same
arguments and defaults: `max_traces(n)` is `traceguard.testing.assert_max_traces`'s
budget for every trace-aware layer and traced function, `no_retrace` is
`traceguard.no_retrace()`.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import pytest

MARKER = "max_traces"
NO_RETRACE_MARKER = "no_retrace"
SNAPSHOT_OPTION = "--traceguard-snapshot"
UPDATE_OPTION = "--traceguard-snapshot-update"
_SESSION = pytest.StashKey[Any]()
_WRITTEN = pytest.StashKey[list[str]]()
_WORKER_WRITTEN = "traceguard_snapshots_written"  # In an xdist worker's `workeroutput`.


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("traceguard")
    group.addoption(SNAPSHOT_OPTION, action="store_true", default=False,
                    help="compare the traces each test makes (every function and layer, with their "
                         "signatures) with its snapshot in __trace_snapshots__/<module>.traces beside "
                         "the test file; a change fails the test with the difference.")
    group.addoption(UPDATE_OPTION, action="store_true", default=False,
                    help=f"like {SNAPSHOT_OPTION}, but rewrite the snapshots of the tests that ran.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(n, on_retrace='raise'): fail the test if a traced function (tf.function, Keras "
        "step, jax.jit; per function object) or a traceguard TraceAwareLayer makes more than n graph "
        "traces (trace, variable_retrace, retrace) while the test runs.",
    )
    config.addinivalue_line(
        "markers",
        f"{NO_RETRACE_MARKER}(on_retrace='raise', allow_first_traces=True): traceguard.no_retrace() "
        "around the test: fail it at any retrace of a function (tf.function, Keras step, jax.jit); "
        "each function's first trace is its warm-up.",
    )
    config.stash[_SESSION] = None


@pytest.fixture
def trace_budget() -> Any:
    """Deprecated: `traceguard.testing.assert_max_traces`, imported in the test module instead."""
    warnings.warn("The `trace_budget` fixture is deprecated: use "
                  "`from traceguard.testing import assert_max_traces` and "
                  "`with assert_max_traces(layer_or_function, n): ...` instead.",
                  DeprecationWarning, stacklevel=2)
    from traceguard.testing import assert_max_traces

    return assert_max_traces


def _arguments(marker: pytest.Mark) -> str:
    return ", ".join([*map(repr, marker.args), *(f"{k}={v!r}" for k, v in marker.kwargs.items())])


def _budget_of(marker: pytest.Mark) -> Any:
    """The budget of a `max_traces` marker: `assert_max_traces`'s arguments but the target."""
    from traceguard import testing
    from traceguard._diagnosis.no_retrace import ON_RETRACE

    n = marker.args[0] if len(marker.args) == 1 else marker.kwargs.get("n")
    on_retrace = marker.kwargs.get("on_retrace", ON_RETRACE)
    valid = (len(marker.args) + ("n" in marker.kwargs) == 1 and set(marker.kwargs) <= {"n", "on_retrace"}
             and isinstance(n, int) and not isinstance(n, bool) and n >= 0)
    if not valid:
        pytest.fail(f"`@pytest.mark.{MARKER}(n, on_retrace='raise')` expects one non-negative integer n. "
                    f"Received: {MARKER}({_arguments(marker)})", pytrace=False)
    try:
        return testing._test_budget(n, on_retrace)
    except ValueError as error:
        pytest.fail(str(error), pytrace=False)


def _guard_of(marker: pytest.Mark) -> Any:
    """The `no_retrace()` guard of a `no_retrace` marker: its keyword arguments and defaults."""
    from traceguard._diagnosis import no_retrace

    if marker.args or set(marker.kwargs) - {"on_retrace", "allow_first_traces"}:
        pytest.fail(f"`@pytest.mark.{NO_RETRACE_MARKER}` takes the keyword arguments of "
                    "`traceguard.no_retrace()`: on_retrace, allow_first_traces. "
                    f"Received: {NO_RETRACE_MARKER}({_arguments(marker)})", pytrace=False)
    try:
        return no_retrace.guarding(
            marker.kwargs.get("on_retrace", no_retrace.ON_RETRACE),
            marker.kwargs.get("allow_first_traces", no_retrace.ALLOW_FIRST_TRACES),
            f"@pytest.mark.{NO_RETRACE_MARKER}", f"during the test (`@pytest.mark.{NO_RETRACE_MARKER}`)")
    except ValueError as error:  # Raised on entering, below; names the argument and the value.
        pytest.fail(str(error), pytrace=False)


def _snapshots(config: pytest.Config) -> Any:
    """The session's `SnapshotSession`, made at the first test: None if the mode is off."""
    update = config.getoption(UPDATE_OPTION)
    if not (update or config.getoption(SNAPSHOT_OPTION)):
        return None
    session = config.stash[_SESSION]
    if session is None:
        from traceguard._diagnosis.snapshots import SnapshotSession

        session = config.stash[_SESSION] = SnapshotSession(update, config.rootpath)
    return session


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    marker = item.get_closest_marker(MARKER)
    guard_marker = item.get_closest_marker(NO_RETRACE_MARKER)
    snapshots = _snapshots(item.config)
    if marker is None and guard_marker is None and snapshots is None:
        return (yield)
    failure: list[str] = []
    with contextlib.ExitStack() as stack:
        if marker is not None:
            failure = stack.enter_context(_budget_of(marker))
        if snapshots is not None:
            from traceguard import watch

            report = stack.enter_context(watch())
        if guard_marker is not None:
            stack.enter_context(_guard_of(guard_marker))
        result = yield
    if failure:
        pytest.fail(failure[0], pytrace=False)
    if snapshots is not None:
        from traceguard._reports.snapshot_file import SnapshotFileError

        try:
            difference = snapshots.check(item.path, item.nodeid.split("::", 1)[-1], report)
        except SnapshotFileError as error:  # Named by file and line; the traceback adds nothing.
            difference = str(error)
        if difference:
            pytest.fail(difference, pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    snapshots = session.config.stash.get(_SESSION, None)
    if snapshots is not None:
        written = [snapshots._shown(path) for path in snapshots.finish()]
        session.config.stash[_WRITTEN] = written
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:  # A pytest-xdist worker: the controller prints the summary.
            worker_output[_WORKER_WRITTEN] = written


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller, as a worker ends: the snapshots it rewrote, for the summary."""
    written = getattr(node, "workeroutput", {}).get(_WORKER_WRITTEN)
    if written:
        stash = node.config.stash
        stash[_WRITTEN] = sorted({*stash.get(_WRITTEN, []), *written})


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    written = config.stash.get(_WRITTEN, None)
    if written:
        terminalreporter.write_line("traceguard: rewrote the trace snapshots " + ", ".join(written))
