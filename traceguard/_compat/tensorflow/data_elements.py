"""Which tensors a `tf.data` iterator handed out last, on each thread, while function traces are watched.

A retrace of a `tf.function` fed by a `tf.data` pipeline (`for x, y in dataset:
step(x, y)`) gets its fixes from the pipeline (`dataset.batch(..., drop_remainder=True)`);
one fed anything else must not. The trace hook asks `came_from_dataset(values)`: whether
any of the call's arguments is a tensor the thread's last `next()` on a `tf.data`
iterator returned. `OwnedIterator.__next__` (tensorflow/python/data/ops/iterator_ops.py,
TF 2.12 to 2.21: what `iter(dataset)` returns) is wrapped while `tensorflow.traces`' hook is
installed, and put back with it; the wrapper keeps the `id()`s of the element's tensors
only, never the tensors.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/data/ops/iterator_ops.py
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tensorflow.python.data.ops import iterator_ops as _iterator_ops

from traceguard._compat._flavors import internal_missing

_ITERATOR = _iterator_ops.OwnedIterator
_ORIGINAL = _ITERATOR.__dict__.get("__next__")
if not callable(_ORIGINAL) or "_next_internal" not in _ORIGINAL.__code__.co_names:
    raise internal_missing("tensorflow.python.data.ops.iterator_ops.OwnedIterator.__next__")

_local = threading.local()  # .last: the ids of the tensors of this thread's last element.
_MAX_LEAVES = 64


def _next(self: Any) -> Any:
    element = _ORIGINAL(self)
    _local.last = frozenset(id(leaf) for leaf in _leaves(element))
    return element


def _leaves(value: Any, found: list | None = None) -> list:
    found = [] if found is None else found
    if len(found) >= _MAX_LEAVES:
        return found
    if isinstance(value, (tuple, list)):
        for item in value:
            _leaves(item, found)
    elif isinstance(value, Mapping):
        for item in value.values():
            _leaves(item, found)
    else:
        found.append(value)
    return found


def came_from_dataset(values: Any) -> bool:
    """Whether any tensor among `values` (nested in tuples, lists and mappings) is one this thread's
    last `next()` on a `tf.data` iterator returned."""
    last: frozenset[int] | None = getattr(_local, "last", None)
    if not last:
        return False
    return any(id(leaf) in last for leaf in _leaves(values))


def install() -> None:
    _ITERATOR.__next__ = _next


def uninstall() -> None:
    _ITERATOR.__next__ = _ORIGINAL
    _local.__dict__.pop("last", None)


__all__ = ["came_from_dataset", "install", "uninstall"]
