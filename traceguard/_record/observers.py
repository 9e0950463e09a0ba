"""Who is told of every run: `watch()`, `explain()`, `TraceMonitor` and the test helpers.

Observers register for a block (`observing`) and are told of each logged event
and each eager run, from any thread. A failing observer is logged once and never
breaks the user's call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from traceguard._core.events import TraceEvent
from traceguard._record.internal_errors import log_internal_error


class Observer(Protocol):
    """What the recorder calls on an observer; both may be called from any thread."""

    def record_event(self, layer: Any, event: TraceEvent) -> object:
        """Receives each logged `TraceEvent` of `layer`."""

    def record_eager(self, layer: Any) -> None:
        """Receives each eager run of `layer`, logged or not."""


# Read on every run, so a tuple replaced whole under the lock: readers take no lock.
observers: tuple[Observer, ...] = ()
_lock = threading.Lock()


def add_observer(observer: Observer) -> None:
    """Tells `observer` of every run from now on."""
    global observers
    with _lock:
        if all(o is not observer for o in observers):
            observers = (*observers, observer)


def remove_observer(observer: Observer) -> None:
    global observers
    with _lock:
        observers = tuple(o for o in observers if o is not observer)


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[Observer]:
    """Tells `observer` of every run inside the block, however the block ends."""
    add_observer(observer)
    try:
        yield observer
    finally:
        remove_observer(observer)


def notify_event(layer: Any, event: TraceEvent) -> None:
    for observer in observers:
        try:
            observer.record_event(layer, event)
        except Exception:
            log_internal_error("reporting a run")


def notify_eager(layer: Any) -> None:
    for observer in observers:
        try:
            observer.record_eager(layer)
        except Exception:
            log_internal_error("reporting a run")
