"""Test helpers: fail a test when a layer or a `tf.function` traces more than it should.

`assert_max_traces` is the budget "at most N traces" as a context manager; the
pytest plugin's `@pytest.mark.max_traces(n)` is the same budget around a test,
and the layer argument `max_traces=` the same budget on the layer. All count
graph traces (`traceguard._core.guards`): a `tf.function` its own traces, a
layer the traces that ran its body, once per trace.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from traceguard import _compat
from traceguard._core.events import TraceEvent
from traceguard._core.guards import BUDGET_KINDS
from traceguard._diagnosis.explanation import Explanation
from traceguard._diagnosis.filler import Filler
from traceguard._diagnosis.no_retrace import ON_RETRACE, check_on_retrace
from traceguard._record.layer import TraceAwareMixin
from traceguard._record.layer_state import STATE_ATTRIBUTE, LayerTraceState
from traceguard._record.log import next_index
from traceguard._record.observers import observing
from traceguard._reports.text import format_budget_failure, format_function_budget_failure

__all__ = ["assert_max_traces"]


def _check_budget(n: Any, where: str = "assert_max_traces()") -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"`{where}` expects a non-negative integer as the largest "
                         f"number of traces allowed. Received: n={n!r}")


def _is_tf_function(target: Any) -> bool:
    # `tf.function` objects, whatever their class in this TF version, count their traces.
    return callable(getattr(target, "experimental_get_tracing_count", None))


def _fail(message: str, on_retrace: str) -> None:
    if on_retrace == "raise":
        raise AssertionError(message)
    warnings.warn(message, UserWarning, stacklevel=_compat.user_stacklevel())


@contextlib.contextmanager
def assert_max_traces(target: Any, n: int, on_retrace: str = ON_RETRACE) -> Iterator[None]:
    """Fails if `target` traces more than `n` times inside the block.

    Only traces made inside the block count, in the unit of every traceguard
    budget, graph traces: for a `tf.function`, its own traces (TensorFlow's
    `experimental_get_tracing_count()`, the trace that creates variables and
    the one TensorFlow repeats after it included), explained by the runs of the
    `TraceAwareLayer`s traced in it; for a `TraceAwareLayer`, the traces that
    ran its body (`trace`, `variable_retrace` and `retrace` events), each trace
    once however many times the body ran in it, as its `max_traces=` argument
    counts them.

    Args:
        target: A `TraceAwareLayer` (or a layer with `TraceAwareMixin`), or a
            function wrapped by `tf.function`.
        n: Non-negative integer, the largest number of traces allowed.
        on_retrace: What going over `n` does, on leaving the block. One of
            `{"raise", "warn"}`: raise an `AssertionError`, or issue a
            `UserWarning`. Defaults to `"raise"`.

    Raises:
        ValueError: If `target` is neither, `n` is not a non-negative
            integer, or `on_retrace` not one of the choices (raised on
            entering the block).
        AssertionError: On leaving the block, listing the offending events
            with their reasons.

    Example:

    ```python
    with traceguard.testing.assert_max_traces(layer, 2):
        step(tf.ones((8, 4)))
    ```
    """
    _check_budget(n)
    check_on_retrace(on_retrace, "assert_max_traces(on_retrace=...)")
    if isinstance(target, TraceAwareMixin):
        state: LayerTraceState = target.__dict__[STATE_ATTRIBUTE]
        before = state.graph_traces
        with _layer_traces(target) as traces:
            yield
        subject = f"Layer '{target.name}'"
        count = state.graph_traces - before
    elif _is_tf_function(target):
        before = target.experimental_get_tracing_count()
        with _runs_of_function(getattr(target, "name", None)) as traces:
            yield
        subject = f"tf.function `{getattr(target, 'name', target)}`"
        count = target.experimental_get_tracing_count() - before
    else:
        raise ValueError(
            "`assert_max_traces()` expects a TraceAwareLayer (or a layer with TraceAwareMixin) "
            f"or a tf.function. Received: target={target!r}. For a plain Keras layer, mix "
            "`traceguard.TraceAwareMixin` into its class, or wrap the code under test in a "
            "tf.function and pass that."
        )
    if count > n:
        _fail(format_budget_failure(subject, n, count, traces), on_retrace)


@contextlib.contextmanager
def _layer_traces(layer: Any) -> Iterator[list[TraceEvent]]:
    collected: list[TraceEvent] = []
    first_index = next_index(layer.trace_log)  # Runs inside the block get this index or later.
    try:
        yield collected
    finally:
        collected.extend(event for event in layer.trace_log
                         if event.index >= first_index and event.kind in BUDGET_KINDS)


@contextlib.contextmanager
def _runs_of_function(name: str | None) -> Iterator[list[TraceEvent]]:
    collected: list[TraceEvent] = []
    report = Explanation("assert_max_traces")
    try:
        with observing(Filler(report)):
            yield collected
    finally:
        collected.extend(event for event in report.events
                         if event.kind in BUDGET_KINDS and event.function == name)


class _TestTraces:
    """The observer of `@pytest.mark.max_traces`: the test's report, and each trace-aware layer's
    trace count when the test first heard of it.

    The recorder tells observers of a run before it counts the run's trace
    (`_record.recorder._finish`), so that count is the layer's before the test's
    first trace of it, and the layer's budget counter says how many it made since.
    """

    def __init__(self) -> None:
        self.report = Explanation("max_traces")
        self._filler = Filler(self.report)
        # Per trace-aware layer's state: (the state, its count then, the layer's name in the report).
        self._layers: dict[int, tuple[LayerTraceState, int, str]] = {}

    def _see(self, layer: Any, name: str) -> None:
        state = layer.__dict__.get(STATE_ATTRIBUTE)
        if state is not None and id(state) not in self._layers:
            self._layers[id(state)] = (state, state.graph_traces, name)

    def record_run(self, layer: Any, run: Any) -> None:
        self._see(layer, self._filler.record_run(layer, run))

    def record_event(self, layer: Any, event: TraceEvent) -> None:
        self._see(layer, self._filler.record_event(layer, event))

    def record_eager(self, layer: Any) -> None:
        self._filler.record_eager(layer)

    def record_function(self, record: Any) -> None:
        self._filler.record_function(record)

    def over_budget(self, n: int) -> list[str]:
        """The failure of each layer and function object that traced more than `n` times."""
        failures = []
        layers = self.report.layers
        for state, before, name in self._layers.values():
            count = state.graph_traces - before
            if count > n:
                events = [event for event in layers[name].events if event.kind in BUDGET_KINDS]
                failures.append(format_budget_failure(f"Layer '{name}'", n, count, events,
                                                      where="during the test"))
        for function in self.report.functions.values():
            by_object: dict[int, list[Any]] = {}
            for event in function.events:
                if event.kind in BUDGET_KINDS:
                    by_object.setdefault(event.object_number, []).append(event)
            failures += [format_function_budget_failure(function, n, events)
                         for events in by_object.values() if len(events) > n]
        return failures


def _test_budget(n: object, on_retrace: object = ON_RETRACE) -> contextlib.AbstractContextManager[list[str]]:
    """For `@pytest.mark.max_traces(n)`, its arguments checked now: yields a list that gets a
    failure message on exit if a `TraceAwareLayer`, or a function object, traced more than `n`
    times inside the block; with `on_retrace="warn"`, a warning is issued instead."""
    _check_budget(n, "@pytest.mark.max_traces(n)")
    check_on_retrace(on_retrace, "@pytest.mark.max_traces(on_retrace=...)")
    assert isinstance(n, int)  # For type checkers: checked above.
    return _counting(n, str(on_retrace))


@contextlib.contextmanager
def _counting(n: int, on_retrace: str) -> Iterator[list[str]]:
    failure: list[str] = []
    traces = _TestTraces()
    with observing(traces):
        yield failure
    failures = traces.over_budget(n)
    if failures and on_retrace == "warn":
        warnings.warn("\n".join(failures), UserWarning, stacklevel=2)
    elif failures:
        failure.append("\n".join(failures))
