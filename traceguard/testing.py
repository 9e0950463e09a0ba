"""Test helpers: fail a test when a layer or a `tf.function` traces more than it should.

`assert_max_traces` is also the `trace_budget` fixture of traceguard's pytest
plugin, which adds the `@pytest.mark.max_traces(n)` marker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from traceguard._core.events import GRAPH_TRACE_KINDS, TraceEvent
from traceguard._diagnosis.explanation import Explanation, Filler
from traceguard._record.layer import TraceAwareMixin
from traceguard._record.log import next_index
from traceguard._record.observers import observing
from traceguard._reports.text import format_budget_failure

__all__ = ["assert_max_traces"]


def _check_budget(n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("`assert_max_traces()` expects a non-negative integer as the largest "
                         f"number of traces allowed. Received: n={n!r}")


def _is_tf_function(target: Any) -> bool:
    # `tf.function` objects, whatever their class in this TF version, count their traces.
    return callable(getattr(target, "experimental_get_tracing_count", None))


@contextlib.contextmanager
def assert_max_traces(target: Any, n: int) -> Iterator[None]:
    """Fails if `target` traces more than `n` times inside the block.

    Only traces made inside the block count. For a `TraceAwareLayer`, a trace
    is a `trace`, `variable_retrace` or `retrace` event in its `trace_log`; for
    a `tf.function`, a new concrete function (TensorFlow's own tracing count),
    explained by the runs of the `TraceAwareLayer`s traced in it.

    Args:
        target: A `TraceAwareLayer` (or a layer with `TraceAwareMixin`), or a
            function wrapped by `tf.function`.
        n: Non-negative integer, the largest number of traces allowed.

    Raises:
        ValueError: If `target` is neither, or `n` is not a non-negative
            integer (raised on entering the block).
        AssertionError: On leaving the block, listing the offending events
            with their reasons.

    Example:

    ```python
    with traceguard.testing.assert_max_traces(layer, 2):
        step(tf.ones((8, 4)))
    ```
    """
    _check_budget(n)
    if isinstance(target, TraceAwareMixin):
        with _layer_traces(target) as traces:
            yield
        subject = f"Layer '{target.name}'"
        count = len(traces)
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
        raise AssertionError(format_budget_failure(subject, n, count, traces))


@contextlib.contextmanager
def _layer_traces(layer: Any) -> Iterator[list[TraceEvent]]:
    collected: list[TraceEvent] = []
    first_index = next_index(layer.trace_log)  # Runs inside the block get this index or later.
    try:
        yield collected
    finally:
        collected.extend(event for event in layer.trace_log
                         if event.index >= first_index and event.kind in GRAPH_TRACE_KINDS)


@contextlib.contextmanager
def _runs_of_function(name: str | None) -> Iterator[list[TraceEvent]]:
    collected: list[TraceEvent] = []
    report = Explanation("assert_max_traces")
    try:
        with observing(Filler(report)):
            yield collected
    finally:
        collected.extend(event for event in report.events
                         if event.kind in GRAPH_TRACE_KINDS and event.function == name)


@contextlib.contextmanager
def _per_layer_budget(n: int) -> Iterator[list[str]]:
    """For `@pytest.mark.max_traces(n)`: yields a list that gets a failure message on exit
    if any `TraceAwareLayer` traced more than `n` times inside the block."""
    _check_budget(n)
    failure: list[str] = []
    report = Explanation("max_traces")
    with observing(Filler(report)):
        yield failure
    over = {runs.name: [e for e in runs.events if e.kind in GRAPH_TRACE_KINDS]
            for runs in report.layers.values() if runs.trace_aware}
    over = {name: events for name, events in over.items() if len(events) > n}
    if over:
        failure.append("\n".join(format_budget_failure(f"Layer '{name}'", n, len(events), events,
                                                  where="during the test")
                                 for name, events in over.items()))
