"""Traces foreseen before `fit`, `evaluate` or `predict`, and how they compare with the traces made.

Plain values: `_diagnosis.forecast` makes them from a model and its data,
`_reports.forecast` words them. A foreseen trace and a watched one are compared on
the function's name, the kind of trace and the signature, as text.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping

FORECAST_METHODS = ("fit", "evaluate", "predict")
# A foreseen trace's kind, in `FunctionEvent`'s words: a function object's first trace,
# the trace `tf.function` repeats after a first trace created variables, and a trace
# of the same object for a new signature.
FORESEEN_KINDS = ("trace", "variable_retrace", "retrace")


class ForecastReason(enum.Enum):
    """Why a trace is foreseen."""

    FIRST_TRACE = "first_trace"  # A step function's first call.
    VARIABLE_CREATION = "variable_creation"  # Its first trace creates variables.
    NEW_BATCH_SIZE = "new_batch_size"  # A last, smaller batch (predict on Keras 3).


class Unforeseeable(enum.Enum):
    """Why a case is outside what a forecast can foresee."""

    BACKEND = "backend"
    KERAS_VERSION = "keras_version"
    NOT_COMPILED = "not_compiled"
    CUSTOM_STEP = "custom_step"
    EXISTING_FUNCTIONS = "existing_functions"
    DISTRIBUTED = "distributed"
    OPTIMIZER = "optimizer"
    DATA = "data"
    DATASET_BATCH = "dataset_batch"
    PREDICT_STEPS_PER_EXECUTION = "predict_steps_per_execution"


@dataclasses.dataclass(frozen=True)
class ForeseenTrace:
    """One trace a Keras method is foreseen to make.

    Attributes:
        function: The backend's name for the function, e.g. `one_step_on_data`.
        step: `"train"`, `"test"` (evaluate, or validation in `fit`) or `"predict"`.
        kind: One of `FORESEEN_KINDS`.
        signature: Every argument's spec as text, as `FunctionEvent.signature`.
        reason: The `ForecastReason`.
        facts: What the words of the reason name: the variables' owners, the batch sizes.
    """

    function: str
    step: str
    kind: str
    signature: Mapping[str, str]
    reason: ForecastReason
    facts: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class WatchedTrace:
    """A trace of a Keras step function, as `watch()` recorded it, in a forecast's terms."""

    function: str
    kind: str  # One of FORESEEN_KINDS.
    signature: Mapping[str, str]
    serial: int


@dataclasses.dataclass(frozen=True)
class Outside:
    """A case a forecast does not foresee, and what makes it so."""

    code: Unforeseeable
    detail: str


def pair_traces(foreseen: tuple[ForeseenTrace, ...], watched: list[WatchedTrace]) -> tuple[
        tuple[tuple[ForeseenTrace, WatchedTrace], ...], tuple[ForeseenTrace, ...], tuple[WatchedTrace, ...]]:
    """Pairs each foreseen trace with the first unpaired watched one of the same function,
    kind and signature. Returns the pairs, the foreseen traces left, the watched ones left."""
    left = list(watched)
    agreed, missed = [], []
    for trace in foreseen:
        match = next((seen for seen in left if seen.function == trace.function and seen.kind == trace.kind
                      and dict(seen.signature) == dict(trace.signature)), None)
        if match is None:
            missed.append(trace)
        else:
            left.remove(match)
            agreed.append((trace, match))
    return tuple(agreed), tuple(missed), tuple(left)
