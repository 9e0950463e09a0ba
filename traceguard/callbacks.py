"""Keras callbacks: `TraceMonitor` watches the traces of `fit`, `evaluate` and `predict`.

The behaviour lives in `TraceMonitorMixin`; `TraceMonitor` is the mixin on the
`Callback` of `tf.keras` and `traceguard.keras2.TraceMonitor` on Keras 2's, as each
Keras runs only its own callbacks (tf_keras asks every callback for hooks that Keras 3's
`Callback` does not have).
"""

from __future__ import annotations

import logging
import os
import pathlib
import threading
import warnings
import weakref
from typing import Any

from traceguard import _compat
from traceguard._core.events import TraceEvent, TraceKind
from traceguard._diagnosis.explanation import Explanation
from traceguard._diagnosis.filler import Filler
from traceguard._diagnosis.no_retrace import ALLOW_FIRST_TRACES, ON_RETRACE, RetraceGuard
from traceguard._diagnosis.trace_file import TraceFileWriter, check_trace_file_path
from traceguard._record.observers import add_observer, remove_observer
from traceguard._reports.tensorboard import TensorBoardWriter
from traceguard._reports.text import format_late_retrace

__all__ = ["TraceMonitor", "TraceMonitorMixin"]

logger = logging.getLogger("traceguard")

_METHODS = {"train": "fit", "test": "evaluate", "predict": "predict"}
# When `TraceMonitor(no_retrace_after=...)` starts failing retraces.
NO_RETRACE_AFTER = ("epoch", "call")


class _Observer:
    """Forwards runs to a monitor without keeping it alive: Keras does not call
    `on_train_end` when `fit` raises, so the registration can outlive the call."""

    def __init__(self, monitor: TraceMonitorMixin) -> None:
        self._monitor = weakref.ref(monitor)

    retracing_note = staticmethod(Filler.retracing_note)

    def record_event(self, layer: Any, event: TraceEvent) -> None:
        monitor = self._monitor()
        if monitor is None:
            remove_observer(self)
        else:
            monitor._on_event(layer, event)
            monitor._guard.record_event(layer, event)

    def record_eager(self, layer: Any) -> None:
        monitor = self._monitor()
        if monitor is not None:
            monitor._filler.record_eager(layer)

    def record_function(self, record: Any) -> None:
        monitor = self._monitor()
        if monitor is None:
            remove_observer(self)
        else:
            monitor._filler.record_function(record)
            monitor._guard.record_function(record)

    def record_function_cost(self, record: Any, cost: Any) -> None:
        monitor = self._monitor()
        if monitor is not None:
            monitor._filler.record_function_cost(record, cost)


class TraceMonitorMixin:
    """The behaviour of `TraceMonitor`, for the `Callback` class of any Keras.

    Mix it in before the Keras `Callback` class; see `TraceMonitor` for the
    arguments.
    """

    def __init__(self, html: str | os.PathLike[str] | None = None,
                 log_dir: str | os.PathLike[str] | None = None,
                 trace_file: str | os.PathLike[str] | None = None,
                 trace_file_label: str | None = None, no_retrace_after: str | None = None) -> None:
        super().__init__()  # The Keras `Callback`.
        if no_retrace_after is not None and no_retrace_after not in NO_RETRACE_AFTER:
            raise ValueError("`TraceMonitor(no_retrace_after=...)` expects one of "
                             f"{', '.join(map(repr, NO_RETRACE_AFTER))}, or None. "
                             f"Received: no_retrace_after={no_retrace_after!r}")
        self.no_retrace_after = no_retrace_after
        # `no_retrace()`'s guard, with its defaults, armed during the calls after warm-up.
        monitor = weakref.ref(self)  # The guard must not keep the monitor alive (see `_Observer`).
        self._guard = RetraceGuard(ON_RETRACE, allow_first_traces=ALLOW_FIRST_TRACES,
                                   where=lambda: monitor()._guard_place())  # type: ignore[union-attr]
        self._guard.armed = False
        self.html = _checked_html_path(html)
        self.trace_file = None if trace_file is None else \
            check_trace_file_path(trace_file, trace_file_label, "TraceMonitor")
        self._trace_file_label = trace_file_label
        self._tensorboard = None if log_dir is None else TensorBoardWriter(_checked_log_dir(log_dir))
        self.report = Explanation("TraceMonitor")
        self._filler = Filler(self.report)
        self._observer = _Observer(self)
        self._lock = threading.Lock()
        self._active: list[str] = []  # Calls in progress, outermost first: ["fit", "evaluate"].
        self._calls = 0  # Outermost calls begun.
        self._epoch = 0
        self._late_retraces: list[tuple[TraceEvent, str]] = []

    # --- from the recorder, through `_Observer` ---
    def _on_event(self, layer: Any, event: TraceEvent) -> None:
        name = self._filler.record_event(layer, event)
        where = self._where() if event.kind is TraceKind.RETRACE else ""
        if self._tensorboard is not None:
            self._tensorboard.record(name, event, where)
        if event.kind is TraceKind.RETRACE and (self._calls > 1 or self._epoch > 0):
            with self._lock:
                self._late_retraces.append((event, where))

    def _where(self) -> str:
        """The call in progress, as warnings name it: "fit call 2, epoch 1"."""
        where = f"{self._active[-1] if self._active else 'a call'} call {self._calls}"
        if self._active and self._active[0] == "fit":
            where += f", epoch {self._epoch + 1}"
        return where

    # --- Keras hooks ---
    def set_model(self, model: Any) -> None:
        _check_same_keras(self, model)
        super().set_model(model)  # type: ignore[misc]

    def on_train_begin(self, logs: Any = None) -> None:
        self._begin("train")

    def on_train_end(self, logs: Any = None) -> None:
        self._end()

    def on_test_begin(self, logs: Any = None) -> None:
        self._begin("test")

    def on_test_end(self, logs: Any = None) -> None:
        self._end()

    def on_predict_begin(self, logs: Any = None) -> None:
        self._begin("predict")

    def on_predict_end(self, logs: Any = None) -> None:
        self._end()

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self._epoch = epoch
        self._arm()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._warn_late_retraces()
        if self._tensorboard is not None:
            self._tensorboard.write(epoch)

    # --- bookkeeping ---
    def _begin(self, mode: str) -> None:
        # Only `evaluate` nests (validation inside `fit`); any other begin starts a new
        # outermost call, also when an earlier call raised and never reached its end.
        nested = mode == "test" and self._active == ["fit"]
        if not nested:
            self._active.clear()
            self._calls += 1
            self._epoch = 0
        self._active.append(_METHODS[mode])
        if self.report._trace_file is not None:  # Closed at the end of each outermost call.
            self.report._trace_file.reopen()
        elif self.trace_file is not None:
            self.report._trace_file = TraceFileWriter(self.trace_file, self._trace_file_label)
        add_observer(self._observer)
        self._arm()

    def _end(self) -> None:
        method = self._active.pop() if self._active else "?"
        self._warn_late_retraces()
        if self._active:
            return
        self._guard.armed = False
        if self.no_retrace_after is None:
            remove_observer(self._observer)
        # Else the monitor goes on recording between calls: a later call's traces then
        # compare with the earlier calls' (the function records last while it listens).
        logger.info("TraceMonitor: layer body runs after %s (call %d):\n%s",
                    method, self._calls, self.report.table())
        if self._tensorboard is not None and method != "fit":  # fit wrote at each epoch's end.
            self._tensorboard.write()
        if self.html is not None:
            self._write_html()
        if self.report._trace_file is not None:
            self.report._trace_file.close(self.report.layers.values())

    def _arm(self) -> None:
        after = self.no_retrace_after
        self._guard.armed = bool(self._active) and (
            (after == "call" and self._calls > 1)
            or (after == "epoch" and (self._calls > 1 or self._epoch > 0)))

    def _guard_place(self) -> str:
        return f"after the first {self.no_retrace_after} (`TraceMonitor(no_retrace_after=" \
               f"{self.no_retrace_after!r})`), during {self._where()}"

    def _write_html(self) -> None:
        assert self.html is not None  # Called only then.
        try:
            self.report.to_html(self.html)
        except OSError as error:  # The training is done; a lost report must not fail it.
            logger.warning("TraceMonitor: could not write the HTML report to %r: %s", str(self.html), error)

    def _warn_late_retraces(self) -> None:
        with self._lock:
            late, self._late_retraces = self._late_retraces, []
        # One retrace of a step is seen by each layer it runs: one warning names them all.
        layers_by_retrace: dict[tuple[Any, ...], list[str]] = {}
        for event, where in sorted(late, key=lambda item: item[0].timestamp):  # Outer layers first.
            key = (event.function, where, event.changes, event.hint or event.reason)
            layers_by_retrace.setdefault(key, []).append(f"'{event.layer}'")
        for (function, where, changes, fix), layers in layers_by_retrace.items():
            warnings.warn(format_late_retrace(layers, _compat.TRACER, function, where, changes, fix),
                          UserWarning, stacklevel=_compat.user_stacklevel())


def _check_same_keras(monitor: Any, model: Any) -> None:
    """Fails, naming the monitor to use, when `model` is of another Keras than `monitor`.

    A Keras runs only its own callbacks: tf_keras's `fit` would fail on a missing
    private hook of a Keras 3 `Callback`, with no word of the cause.
    """
    model_keras = _compat.flavor_of_class(type(model))
    own_keras = _compat.flavor_of_class(type(monitor))
    if model_keras is None or own_keras is None or model_keras is own_keras:
        return
    fitting = "traceguard.callbacks.TraceMonitor" if model_keras is _compat.DEFAULT_FLAVOR \
        else "traceguard.keras2.TraceMonitor" if not model_keras.is_keras_3 else None
    advice = f"Use `{fitting}()` for it." if fitting else \
        "Make it a `TraceMonitor` of that Keras: `class Monitor(traceguard.callbacks.TraceMonitorMixin, " \
        "keras.callbacks.Callback)`."
    raise TypeError(
        f"`{type(monitor).__module__}.{type(monitor).__qualname__}` is a {own_keras.describe()} callback "
        f"and {model_keras.describe()} runs only its own callbacks. {advice} "
        f"Received: a model of {model_keras.describe()}, "
        f"{type(model).__qualname__} {getattr(model, 'name', None)!r}"
    )


def _checked_html_path(html: object) -> pathlib.Path | None:
    if html is None:
        return None
    if not isinstance(html, (str, os.PathLike)):
        raise TypeError("`TraceMonitor(html=...)` expects the path of the HTML file to write (str or "
                        f"path-like), or None. Received: html={html!r}")
    path = pathlib.Path(html)
    if path.is_dir() or not path.parent.is_dir():
        raise ValueError("`TraceMonitor(html=...)` expects a file in an existing directory. "
                         f"Received: html={html!r}")
    return path


def _checked_log_dir(log_dir: object) -> str:
    if not isinstance(log_dir, (str, os.PathLike)):
        raise TypeError("`TraceMonitor(log_dir=...)` expects a directory for TensorBoard summaries "
                        f"(str or path-like), or None. Received: log_dir={log_dir!r}")
    if os.path.isfile(log_dir):
        raise ValueError("`TraceMonitor(log_dir=...)` expects a directory, created if missing; it is an "
                         f"existing file. Received: log_dir={log_dir!r}")
    return os.fspath(log_dir)


if _compat.keras is None:  # Plain JAX, or TensorFlow alone: no Keras to call back.
    _compat.keras3_flavor()  # Raises the ImportError that says why, and the fix.


class TraceMonitor(TraceMonitorMixin, _compat.keras.callbacks.Callback):  # type: ignore[misc,name-defined]  # Keras is untyped.
    """Reports the layer traces made by `fit`, `evaluate` and `predict`, and warns of late retraces.

    While a `fit`, `evaluate` or `predict` call it is passed to runs, the
    monitor records every body run of the `TraceAwareLayer`s (and, under
    `traceguard.watch()` or `python -m traceguard run`, of every Keras layer).
    At the end of each call it logs a table of counts by kind per layer on the
    `traceguard` logger at INFO level, and keeps all it saw, across calls, in
    `report`. A retrace after the first epoch, or in a later call than the
    first (the second `fit`, an `evaluate` after `fit`, ...), usually costs time
    on every occurrence: each one is reported with a `UserWarning` that names
    the layer, what changed and the fix, at the end of its epoch or call.

    It is a callback of `tf.keras`, whichever Keras that is when traceguard is
    imported (as `traceguard.TraceAwareLayer` is a layer of it); for a tf_keras
    model next to Keras 3, use `traceguard.keras2.TraceMonitor`.

    Args:
        html: Path (str or path-like) of a self-contained HTML report of
            `report` (a timeline per layer, then tables), rewritten at the end
            of each `fit`, `evaluate` or `predict` call. Its directory must
            exist. Defaults to `None`, no HTML report.
        log_dir: Directory (str or path-like) for TensorBoard summaries: at
            the end of each epoch, and of each `evaluate` or `predict` call
            outside `fit`, the scalars `traceguard/<layer>/<kind>` (runs of
            kind `trace`, `variable_retrace` and `retrace` so far) and, for
            each layer that retraced since, the text
            `traceguard/<layer>/retrace_reason` (what changed, why, the fix).
            Created if missing. Defaults to `None`, no summaries.
        trace_file: Path (str or path-like) of a trace file: opened by the
            first `fit`, `evaluate` or `predict` call, it gets one JSON line per
            layer body run and per function trace as each happens, and the
            eager run counts at the end of each call (when the file is
            closed until the next call). `python -m traceguard
            report FILE` renders it without TensorFlow. It may hold fields,
            filled when the file opens, so that every worker of a
            multi-worker job runs the same code: `{worker}` (`"worker-1"`,
            `"chief-0"` from `TF_CONFIG`, `"process-1"` under
            `jax.distributed`, else `"<host>-<pid>"`), `{task_type}`,
            `{task_index}`, `{process_index}`, `{pid}`, `{host}`. Its
            directory must exist. Defaults to `None`, no file.
        trace_file_label: String, how reports name this process when they
            merge or compare several trace files. Defaults to `None`: the
            worker in a multi-worker job (`"worker-1"`), else
            `"<host>:<pid>"`.
        no_retrace_after: When `traceguard.no_retrace()` starts, with its
            defaults: a retrace fails the call, with `traceguard.RetraceError`
            raised from the step that retraced. One of `{"epoch", "call"}`:
            after the first epoch of the first `fit` (and in every later
            call), or in the calls after the first one. Each function's first
            trace is its warm-up, wherever it happens (a first `predict`
            passes); a retrace of a step fails (a partial last batch, a new
            shape). The monitor then keeps recording between calls, so that a
            later call's traces compare with the earlier ones'. Defaults to
            `None`: retraces are reported with a warning only.

    Raises:
        TypeError: If `html`, `log_dir` or `trace_file` is not a str or
            path-like, or `trace_file_label` not a str; when a
            `fit`, `evaluate` or `predict` call begins, if the model is of
            another Keras.
        ValueError: If the directory of `html` or `trace_file` does not
            exist, `trace_file` holds an unknown field, `log_dir` is an
            existing file, or `no_retrace_after` is not one of the accepted
            values.
        traceguard.RetraceError: With `no_retrace_after`, from the `fit`,
            `evaluate` or `predict` call whose step retraced.

    Example:

    ```python
    monitor = traceguard.callbacks.TraceMonitor(html="traces.html", log_dir="logs/traceguard")
    model.fit(x[:64], y[:64], batch_size=32, callbacks=[monitor])
    model.fit(x[:70], y[:70], batch_size=32, callbacks=[monitor])  # Warns: partial batch.
    print(monitor.report)
    ```
    """
