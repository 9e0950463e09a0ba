"""Which function traces a report shows: the user's functions and Keras's steps, and a library's
own `tf.function`s only once their code traced as often as makes TensorFlow warn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceguard._core.hints import requested
from traceguard._core.keras_names import is_keras_step_function
from traceguard._diagnosis.function_runs import function_key

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace, MissCost


def is_reported(record: FunctionTrace) -> bool:
    """Whether a report shows the record: the user's functions and Keras's steps, not the
    library's own helpers (Keras's data-adapter `tf.data` functions, TensorFlow's). On torch,
    every frame compile: Keras's frames Dynamo compiles after a step's graph break (the optimizer's
    update; `torch_dynamo_resume_in_train_step_at_70`, a part of `train_step`) are compiles torch
    counts and pays for."""
    return not record.library_function or is_keras_step_function(record.name) \
        or record.origin == "torch.compile"


class LibraryTraces:
    """A library's own `tf.function`s called eagerly, held back until their code traced as often
    as makes TensorFlow warn.

    TensorFlow counts the traces of each code in calls made eagerly, whichever function
    objects made them, and warns at `_compat.frequent_tracing_threshold()` of them ("5 out of
    the last 5 calls to <function pfor.<locals>.f> triggered tf.function retracing"): a
    library's function traced that often comes from the user's loop calling its public API
    eagerly (`tf.vectorized_map` makes a new `tf.function` per eager call), and the fix is
    the user's. Then the traces held so far are reported, and each later one.
    """

    def __init__(self) -> None:
        # Per function: its traces held, each with its cost (its own until its call returns).
        self._held: dict[str, list[tuple[FunctionTrace, MissCost]]] = {}
        self._reported: set[str] = set()

    def reported(self, record: FunctionTrace) -> list[tuple[FunctionTrace, MissCost]]:
        """The records a report shows now that `record` ended, each with its cost: it, the ones held
        with it, or none."""
        if is_reported(record):
            return [(record, record.miss_cost)]
        # TensorFlow's warning counts the traces of eager `__call__`s only: not a nested function's,
        # nor one `get_concrete_function` asked for (`tf.data`'s multi-device iterator builds its
        # functions that way each time a distributed dataset is iterated, as documented).
        if record.origin != "tf.function" or record.parent is not None or record.saving \
                or record.requested or requested(record.entry):
            return []
        key = function_key(record)
        if key in self._reported:
            return [(record, record.miss_cost)]
        # Only a recording asks, and recording runs on the backend: its import is done.
        from traceguard import _compat

        threshold = _compat.frequent_tracing_threshold()
        if threshold is None:
            return []
        held = self._held.setdefault(key, [])
        held.append((record, record.miss_cost))
        if len(held) < threshold:
            return []
        self._reported.add(key)
        return self._held.pop(key)

    def completed(self, record: FunctionTrace, cost: MissCost) -> bool:
        """Whether `record`, its call returned with `cost`, is reported; a held one keeps `cost` beside it."""
        key = function_key(record)
        if is_reported(record) or key in self._reported:
            return True
        held = self._held.get(key, [])
        for number, (earlier, _) in enumerate(held):
            if earlier.index == record.index:
                held[number] = (earlier, cost)
        return False
