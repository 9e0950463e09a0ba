"""TensorFlow's own retracing warning, with traceguard's measured cause appended.

Part of the TensorFlow backend; imported when someone watches.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/eager/polymorphic_function/polymorphic_function.py
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator

from tensorflow.python.eager.polymorphic_function import polymorphic_function as _polymorphic_function

from traceguard._compat._flavors import internal_missing

# `_FrequentTracingDetector.called_with_tracing` logs, through the "tensorflow"
# logger, "{n} out of the last {m} calls to {python_function!r} triggered
# tf.function retracing. ..." after 5 traces within 10 calls, twice at most per
# function (polymorphic_function.py, TF 2.12 to 2.21).
RETRACING_WARNING = re.compile(r"\d+ out of the last \d+ calls to (?P<function>.+?) triggered "
                               r"tf\.function retracing")
_TF_LOGGER = "tensorflow"
if "triggered tf.function" not in "".join(
        str(c) for c in _polymorphic_function._FrequentTracingDetector.called_with_tracing
        .__code__.co_consts):
    raise internal_missing("polymorphic_function._FrequentTracingDetector's retracing warning")


# How many traces of one code, each in a call made eagerly, make that warning.
_FREQUENT_TRACING = getattr(_polymorphic_function, "FREQUENT_TRACING_WARNING_THRESHOLD", None)
if not isinstance(_FREQUENT_TRACING, int):
    raise internal_missing("polymorphic_function.FREQUENT_TRACING_WARNING_THRESHOLD")


def frequent_tracing_threshold() -> int | None:
    return _FREQUENT_TRACING


class _RetracingNote(logging.Filter):
    def __init__(self, note_for: Callable[[str], str | None]) -> None:
        super().__init__()
        self.note_for = note_for

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        match = RETRACING_WARNING.match(message)
        if match is not None:
            try:
                note = self.note_for(match.group("function"))
            except Exception:  # Never lose TensorFlow's own warning.
                note = None
            if note:
                record.msg, record.args = f"{message}\n{note}", None
        return True


@contextlib.contextmanager
def retracing_warning_notes(note_for: Callable[[str], str | None]) -> Iterator[None]:
    """Appends `note_for(function_text)` to TensorFlow's retracing warning in the block.

    `function_text` is the function as the warning shows it (`repr` of the
    tf.function's `python_function`, `FunctionTracing.function_text`); a None or
    empty note leaves the warning as it is.
    """
    logger = logging.getLogger(_TF_LOGGER)
    note = _RetracingNote(note_for)
    logger.addFilter(note)
    try:
        yield
    finally:
        logger.removeFilter(note)

