"""traceguard's pytest plugin: the `trace_budget` fixture and `@pytest.mark.max_traces(n)`.

Registered through the `pytest11` entry point, so pytest imports it at every
start in any environment where traceguard is installed. It is a top-level
module, outside the `traceguard` package, because importing a submodule imports
its package first, and `traceguard` imports TensorFlow; hypothesis keeps its
plugin in `_hypothesis_pytestplugin.py` for the same reason. traceguard itself
is imported only when a test uses the fixture or the marker.
"""

from __future__ import annotations

from typing import Any

import pytest

MARKER = "max_traces"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(n): fail the test if any traceguard TraceAwareLayer traces (trace, retrace, "
        "variable_retrace) more than n times while the test runs, counted per layer.",
    )


@pytest.fixture
def trace_budget() -> Any:
    """`traceguard.testing.assert_max_traces`: `with trace_budget(layer_or_function, n): ...`."""
    from traceguard.testing import assert_max_traces

    return assert_max_traces


def _budget_of(marker: pytest.Mark) -> int:
    n = marker.args[0] if len(marker.args) == 1 and not marker.kwargs else marker.kwargs.get("n")
    valid = (len(marker.args) + len(marker.kwargs) == 1 and isinstance(n, int)
             and not isinstance(n, bool) and n >= 0)
    if not valid or not isinstance(n, int):  # The second, for type checkers: `valid` says as much.
        arguments = ", ".join([*map(repr, marker.args), *(f"{k}={v!r}" for k, v in marker.kwargs.items())])
        pytest.fail(f"`@pytest.mark.{MARKER}(n)` expects one non-negative integer n. "
                    f"Received: {MARKER}({arguments})", pytrace=False)
    return n


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return (yield)
    n = _budget_of(marker)
    from traceguard.testing import _per_layer_budget

    with _per_layer_budget(n) as failure:
        result = yield
    if failure:
        pytest.fail(failure[0], pytrace=False)
    return result
