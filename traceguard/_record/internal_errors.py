"""The one logger of traceguard's own failures: bookkeeping never breaks the user's call."""

from __future__ import annotations

import logging
import threading

from traceguard import _compat

logger = logging.getLogger("traceguard")

_reported: set[str] = set()
_reported_lock = threading.Lock()


def log_internal_error(where: str, consequence: str = "the call goes on unrecorded") -> None:
    """Logs the exception being handled once per `where` (threads may fail at once)."""
    with _reported_lock:
        first = where not in _reported
        _reported.add(where)
    if first:
        logger.exception("traceguard failed while %s; %s (reported once). Please report this "
                         "with %s.", where, consequence, _compat.describe_versions())
