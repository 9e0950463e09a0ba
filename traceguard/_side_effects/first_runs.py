"""What already ran or printed, per layer and input signature: the memory of "once".

`side_effects(print="once")`, `trace_once` and `traceguard.print` under XLA
remember keys here: in the memory of the innermost trace-aware layer whose
`call` is running (keyed by that run's signature), or, outside any layer, in
a memory of their own. Memories are bounded and die with their layer.
"""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from collections.abc import Hashable
from typing import Any

from traceguard._compat import spec_of
from traceguard._core.specs import ValueSpec
from traceguard._record.internal_errors import log_internal_error as _log_internal_error
from traceguard._record.runs import EagerRun

logger = logging.getLogger("traceguard")

REMEMBERED_KEYS = 1024  # Per memory; the oldest key is forgotten first.


class Memory:
    """First-time bookkeeping of one layer or one function."""

    __slots__ = ("lock", "entries")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.entries: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()

    def store(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.entries[key] = value
            if len(self.entries) > REMEMBERED_KEYS:
                self.entries.popitem(last=False)

    def claim(self, key: Hashable) -> bool:
        """True the first time `key` is claimed."""
        with self.lock:
            if key in self.entries:
                return False
            self.store(key, True)
            return True


# Keyed by the layer's `LayerTraceState`: a copied layer starts with a fresh state, so fresh memory.
_layer_memories: weakref.WeakKeyDictionary[Any, Memory] = weakref.WeakKeyDictionary()
_layer_memories_lock = threading.Lock()


def memory_of_layer(run: EagerRun) -> Memory:
    """The memory of the layer whose `call` is running `run`."""
    with _layer_memories_lock:
        memory = _layer_memories.get(run.state)
        if memory is None:
            memory = _layer_memories[run.state] = Memory()
        return memory


def signature_key(run: EagerRun) -> Hashable:
    """The run's input signature as a key (None if it cannot be read)."""
    try:
        return tuple(run.input_signature().items())
    except Exception:  # Bookkeeping must never break the user's call.
        log_internal_error("reading the signature of a run")
        return None


def arguments_key(args: tuple, kwargs: dict) -> Hashable:
    """Outside a layer: tensors by spec, Python scalars by value, other objects by identity."""

    def key(value: Any) -> Hashable:
        spec = spec_of(value)
        if isinstance(spec, ValueSpec) and not (
                value is None or isinstance(value, (bool, int, float, str, bytes))):
            return ("object", id(value))
        return spec

    return tuple(map(key, args)), tuple(sorted((name, key(value)) for name, value in kwargs.items()))


def log_internal_error(where: str) -> None:
    _log_internal_error(where, "the call goes on with plain `print`")
