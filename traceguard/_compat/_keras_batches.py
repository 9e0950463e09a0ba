"""The batch sizes a Keras `fit`, `evaluate` or `predict` step runs now, when its step takes an iterator.

Keras on TensorFlow hands its step function (Keras 3's `multi_step_on_iterator`, Keras 2's
`train_function`) the data's iterator, and the step takes each batch inside its graph:
the shape of the batch an XLA-compiled step gets is never seen in Python. Keras knows it,
from the loop in the `fit` or `evaluate` frame:

- Keras 3 (keras/src/trainers/epoch_iterator.py, 3.0 to 3.15): the frame's local
  `epoch_iterator` hands out the iterator (its `_current_iterator`) and counts the steps
  handed out (`_steps_seen`, raised before it yields them), `steps_per_execution` per
  call, out of `_num_batches`.
- Keras 2 (tf_keras/src/engine/data_adapter.py, Keras 2.12 to 2.15 and tf_keras): the
  frame's local `data_handler` yields the iterator (the frame's `iterator`), and the
  call's steps run from its `_current_step` to `_current_step + _step_increment`, out of
  `_inferred_steps`.

The batch size and the last batch's come from the data adapter: Keras 3's public
properties `batch_size` and `partial_batch_size`, Keras 2's methods of those names, or,
for a `tf.data.Dataset`, from the backend's reading of its `batch()`.
`tests/compat/tensorflow/test_compat_tf_costs.py` checks each name on the installed Keras.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from traceguard._compat._keras_calls import _KERAS_DIRS

_METHODS = ("fit", "evaluate", "predict")  # Keras 3's `predict` hands its step the batches.
KERAS3_FIELDS = ("_steps_seen", "steps_per_execution", "_num_batches", "data_adapter", "_current_iterator")
KERAS2_FIELDS = ("_current_step", "_step_increment", "_inferred_steps", "_adapter")
# id(iterator) -> (a weak reference to the Keras object counting its steps, its Keras version).
_counters: dict[int, tuple[Any, int]] = {}
BatchesOf = Callable[[Any], "tuple[int, int | None] | None"]


def _counter_of(iterator: Any, start: Any) -> tuple[Any, int] | None:
    """The Keras object counting the steps run on `iterator`, and 3 or 2 (its Keras)."""
    known = _counters.get(id(iterator))
    if known is not None:
        counter = known[0]()
        if counter is not None and (known[1] == 2 or getattr(counter, "_current_iterator", None) is iterator):
            return counter, known[1]
    frame = start
    while frame is not None:
        code = frame.f_code
        if code.co_name in _METHODS and code.co_filename.startswith(_KERAS_DIRS):
            local = frame.f_locals
            found = None
            candidate = local.get("epoch_iterator")
            if getattr(candidate, "_current_iterator", None) is iterator \
                    and all(hasattr(candidate, name) for name in KERAS3_FIELDS):
                found = (candidate, 3)
            candidate = local.get("data_handler")
            if found is None and local.get("iterator") is iterator \
                    and all(hasattr(candidate, name) for name in KERAS2_FIELDS):
                found = (candidate, 2)
            if found is not None:
                if len(_counters) > 64:
                    _counters.clear()
                try:
                    _counters[id(iterator)] = (weakref.ref(found[0]), found[1])
                except TypeError:
                    pass
                return found
        frame = frame.f_back
    return None


def step_batch_sizes(iterator: Any, start: Any = None, batches_of: BatchesOf | None = None
                     ) -> tuple[int, ...] | None:
    """The batch size of each step the current call of a Keras step on `iterator` runs.

    Walks the stack from `start` (the caller's frame by default) to the Keras
    `fit`/`evaluate` frame, once per iterator. `batches_of(adapter)`: the backend's
    reading of an adapter whose batch sizes Keras does not know (a `tf.data.Dataset`'s):
    (batch size, the partial last batch's size or None), or None. None when not known.
    """
    found = _counter_of(iterator, sys._getframe(1) if start is None else start)
    if found is None:
        return None
    counter, version = found
    adapter = counter.data_adapter if version == 3 else counter._adapter
    try:
        batch_size, partial = adapter.batch_size, adapter.partial_batch_size
        if version == 2:  # Methods on Keras 2.
            batch_size, partial = batch_size(), partial()
    except NotImplementedError:  # Keras's `DataAdapter` base: a generator's adapter knows no sizes.
        return None
    if not isinstance(batch_size, int) and batches_of is not None:
        read = batches_of(adapter)
        if read is not None:
            batch_size, partial = read
    if not isinstance(batch_size, int):
        return None
    if version == 3:
        batches, seen = counter._num_batches, counter._steps_seen
        first, end = max(seen - counter.steps_per_execution, 0), seen
    else:
        batches, first = counter._inferred_steps, counter._current_step
        end = first + counter._step_increment + 1
    if isinstance(batches, int) and batches > 0:
        end = min(end, batches)
    return tuple(partial if partial and step == batches - 1 else batch_size for step in range(first, end))
