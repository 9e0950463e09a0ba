"""Trace counts and retrace explanations as TensorBoard summaries, for `TraceMonitor(log_dir=...)`.

Tags (documented in the README, pinned in tests/reports/test_tensorboard.py):

- `traceguard/<layer>/<kind>`, a scalar for each of `trace`, `variable_retrace`
  and `retrace`: how many runs of that kind the layer made since the monitor
  was created. A flat line is a layer that stopped tracing; a step up is a
  retrace, at the epoch it happened.
- `traceguard/<layer>/retrace_reason`, text (Markdown): each retrace of the
  layer at that step, with its function, when, what changed, why and the fix.

Written with `tf.summary.write` and the summary metadata of TensorBoard's
scalars and text plugins, as `tf.summary.scalar` and `tf.summary.text` write
them: those two live in the `tensorboard` package, which TensorFlow 2.21 no
longer installs, and a monitor should not need it to write what TensorBoard
reads later.

One point per `fit` epoch, at the epoch's number (so the points line up with
Keras's own `TensorBoard` callback, `initial_epoch` included), and one per
`evaluate` or `predict` call made outside `fit`; a step is never written twice,
so a second `fit`, which counts its epochs from 0 again, continues after the
last step written. TensorFlow is imported, and the file writer created, at the
first write.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from typing import Any

from traceguard._core.events import TraceEvent, TraceKind

logger = logging.getLogger("traceguard")

SCALAR_KINDS = (TraceKind.TRACE.value, TraceKind.VARIABLE_RETRACE.value, TraceKind.RETRACE.value)
_TAG_PREFIX = "traceguard"


def scalar_tag(layer: str, kind: str) -> str:
    return f"{_TAG_PREFIX}/{layer}/{kind}"


def text_tag(layer: str) -> str:
    return f"{_TAG_PREFIX}/{layer}/retrace_reason"


def retrace_markdown(event: TraceEvent, where: str) -> str:
    """One retrace as Markdown, as TensorBoard's Text tab renders it."""
    lines = [f"**#{event.index} retrace** of tf.function `{event.function}` during {where}", ""]
    lines.append(f"- changed: {'; '.join(map(str, event.changes)) or 'none of its arguments'}")
    lines.append(f"- why: {event.reason}")
    if event.hint:
        lines.append(f"- fix: {event.hint}")
    return "\n".join(lines)


class TensorBoardWriter:
    """Counts a monitor's runs per layer and kind, and writes them with `tf.summary` when asked."""

    def __init__(self, log_dir: str | os.PathLike) -> None:
        self.log_dir = os.fspath(log_dir)
        self._lock = threading.Lock()
        self._counts: dict[str, collections.Counter] = {}  # Layer name (as in the report) -> kind counts.
        self._retraces: dict[str, list[str]] = {}  # Layer name -> Markdown of retraces not yet written.
        self._last_step = -1
        self._file_writer: Any = None  # A tf.summary writer, made at the first write.
        self._failed = False

    def record(self, layer: str, event: TraceEvent, where: str) -> None:
        with self._lock:
            self._counts.setdefault(layer, collections.Counter())[event.kind.value] += 1
            if event.kind is TraceKind.RETRACE:
                self._retraces.setdefault(layer, []).append(retrace_markdown(event, where))

    def write(self, epoch: int | None = None) -> None:
        """Writes the counts so far, and the retraces since the last write, at `epoch` or the next step."""
        if self._failed:
            return
        with self._lock:
            step = self._last_step + 1 if epoch is None else max(epoch, self._last_step + 1)
            counts = {layer: dict(kinds) for layer, kinds in self._counts.items()}
            retraces, self._retraces = self._retraces, {}
            self._last_step = step
        try:
            self._write(step, counts, retraces)
        except Exception as error:  # Never break the user's fit for a report; say so once.
            self._failed = True
            logger.warning("TraceMonitor: could not write TensorBoard summaries to %r, and stops trying: "
                           "%s: %s", self.log_dir, type(error).__name__, error)

    def _write(self, step: int, counts: dict[str, dict[str, int]], retraces: dict[str, list[str]]) -> None:
        import tensorflow as tf

        if self._file_writer is None:
            self._file_writer = tf.summary.create_file_writer(self.log_dir)
        # The plugin data of tensorboard/plugins/{scalar,text}/metadata.py: the plugin's name, and
        # content `ScalarPluginData(version=0)` / `TextPluginData(version=0)`, which serialize empty.
        scalar_metadata = tf.compat.v1.SummaryMetadata(
            plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))
        text_metadata = tf.compat.v1.SummaryMetadata(
            plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="text"))
        with self._file_writer.as_default(step=step):
            for layer, kinds in counts.items():
                for kind in SCALAR_KINDS:
                    tf.summary.write(scalar_tag(layer, kind), tf.constant(kinds.get(kind, 0), tf.float32),
                                     metadata=scalar_metadata)
            for layer, texts in retraces.items():
                tf.summary.write(text_tag(layer), tf.constant("\n\n".join(texts)), metadata=text_metadata)
        self._file_writer.flush()
