"""`forecast()`: the traces Keras's `fit`, `evaluate` or `predict` will make, foreseen before they run.

Nothing runs: the model's state (built or not, its optimizer's and metrics' variables,
from `_compat._keras_training`) and the data's shapes (a `tf.data.Dataset`'s
`element_spec`, or the arrays' length and the batch size) decide each trace, by the
rules measured on each Keras (docs/forecast.md). `Forecast.check()` compares the
forecast with what `watch()` recorded while the same call ran.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard import _compat
from traceguard._compat import _keras_training
from traceguard._core.changes import Aspect
from traceguard._core.forecasts import (
    FORECAST_METHODS,
    FORESEEN_KINDS,
    ForecastReason,
    ForeseenTrace,
    Outside,
    Unforeseeable,
    WatchedTrace,
    pair_traces,
)
from traceguard._core.specs import MappingSpec, SequenceSpec, Spec, TensorSpec, format_signature, format_spec
from traceguard._diagnosis.forecast_data import Data, describe_data, split_data, unpack_validation
from traceguard._reports.forecast import format_check, format_forecast


def _check_arguments(method: str, batch_size: Any, epochs: Any, validation_split: Any) -> None:
    if method not in FORECAST_METHODS:
        raise ValueError(f"`forecast()` expects `method` to be one of {', '.join(FORECAST_METHODS)}. "
                         f"Received: method={method!r}")
    if batch_size is not None and (type(batch_size) is not int or batch_size < 1):
        raise ValueError(f"`forecast()` expects `batch_size` to be a positive int or None. "
                         f"Received: batch_size={batch_size!r}")
    if type(epochs) is not int or epochs < 0:
        raise ValueError("`forecast()` expects `epochs` to be a non-negative int. "
                         f"Received: epochs={epochs!r}")
    if not isinstance(validation_split, (int, float)) or not 0 <= validation_split < 1:
        raise ValueError("`forecast()` expects `validation_split` to be a float in [0, 1). "
                         f"Received: validation_split={validation_split!r}")


def _outside(state: _keras_training.ModelState, method: str) -> list[Outside]:
    outside = []
    if not state.known_steps:
        outside.append(Outside(Unforeseeable.KERAS_VERSION, f"Keras {state.version}"))
    if not state.compiled and method != "predict":
        outside.append(Outside(Unforeseeable.NOT_COMPILED, "the model is not compiled"))
    custom = [name for name in state.custom_steps if name == _keras_training.STEP_METHODS[method]
              or (method == "fit" and name == "test_step")]
    if custom:
        outside.append(Outside(Unforeseeable.CUSTOM_STEP, ", ".join(f"`{name}`" for name in custom)))
    # The step functions the method runs (fit's validation runs the test step): Keras
    # reuses one an earlier call made, with the traces it holds.
    used = {"fit": ("train_function", "test_function"), "evaluate": ("test_function",),
            "predict": ("predict_function",)}[method]
    existing = [name for name in state.existing_functions if name in used]
    if existing:
        outside.append(Outside(Unforeseeable.EXISTING_FUNCTIONS, ", ".join(existing)))
    if state.distributed:
        outside.append(Outside(Unforeseeable.DISTRIBUTED, "a distribution strategy"))
    if method == "fit" and state.optimizer_variables is None and state.optimizer is not None:
        outside.append(Outside(Unforeseeable.OPTIMIZER, state.optimizer))
    return outside


def _creators(state: _keras_training.ModelState, method: str) -> dict[str, str]:
    """What the first step's trace creates variables for, by owner."""
    facts = {}
    if state.unbuilt_layers:
        facts["layers"] = ", ".join(state.unbuilt_layers)
    if method == "fit" and state.optimizer_variables:
        facts["optimizer"] = str(state.optimizer)
    if method != "predict" and state.unbuilt_metrics:
        facts["metrics"] = "compiled metrics"
    if method != "predict" and state.unbuilt_loss_trackers:
        facts["loss"] = "compiled losses"
    return facts


def _batch_facts(data: Data) -> dict[str, str]:
    if data.samples is None:
        return {}
    assert data.batch_size is not None
    return {"samples": str(data.samples), "batch_size": str(data.batch_size),
            "last_batch": str(data.samples % data.batch_size or data.batch_size)}


def _iterator_traces(state: _keras_training.ModelState, method: str, step: str, data: Data,
                     creators: Mapping[str, str]) -> list[ForeseenTrace]:
    """The traces of a step that Keras feeds from a `tf.data` iterator (fit, evaluate; predict on Keras 2)."""
    names = _keras_training.STEP_FUNCTIONS[state.flavor][method]
    spec = format_spec(data.spec())
    facts = _batch_facts(data)
    traces = [ForeseenTrace(name, step, "trace", {"iterator" if index == 0 else "data": spec},
                            ForecastReason.FIRST_TRACE, facts)
              for index, name in enumerate(names)]
    if creators:
        # The innermost function creates the variables and is traced again (measured:
        # Keras 3 retraces `one_step_on_data`, not the `multi_step_on_iterator` around it).
        traces.append(dataclasses.replace(traces[-1], kind="variable_retrace",
                                          reason=ForecastReason.VARIABLE_CREATION, facts=dict(creators)))
    return traces


def _eager_batch_outside(state: _keras_training.ModelState, data: Data) -> Outside | None:
    if state.steps_per_execution != 1:
        return Outside(Unforeseeable.PREDICT_STEPS_PER_EXECUTION, str(state.steps_per_execution))
    spec = data.spec()
    if data.samples is None and any(not leaf.dims or leaf.dims[0] is None for leaf in _tensor_specs(spec)):
        return Outside(Unforeseeable.DATASET_BATCH, format_spec(spec))
    return None


def _eager_batch_traces(state: _keras_training.ModelState, data: Data, steps: int | None,
                        creators: Mapping[str, str]) -> list[ForeseenTrace]:
    """Keras 3's `predict` on TensorFlow: a `tf.function(reduce_retracing=True)` called with each
    batch as a list of eager tensors (keras/src/backend/tensorflow/trainer.py `predict`)."""
    (name,) = _keras_training.STEP_FUNCTIONS[state.flavor]["predict"]
    sizes: list[int | None]
    if data.samples is None:
        sizes = [None]
    else:
        sizes = list(data.batch_sizes(steps))
    if not sizes:
        return []

    def batch_spec(size: int | None) -> str:
        spec = data.spec() if size is None else data.spec(size)
        return format_spec(SequenceSpec("list", (spec,), 1))

    # Each batch is traced with its own size: no partial-batch facts for the first trace.
    traces = [ForeseenTrace(name, "predict", "trace", {"data": batch_spec(sizes[0])},
                            ForecastReason.FIRST_TRACE)]
    if creators:
        traces.append(dataclasses.replace(traces[0], kind="variable_retrace",
                                          reason=ForecastReason.VARIABLE_CREATION, facts=dict(creators)))
    # With `reduce_retracing`, the first new batch size retraces and relaxes the batch
    # dimension to None; later sizes reuse that graph.
    other = next((size for size in sizes[1:] if size != sizes[0]), None)
    if other is not None:
        facts = {**_batch_facts(data), "first_batch": str(sizes[0]), "last_batch": str(other)}
        traces.append(ForeseenTrace(name, "predict", "retrace", {"data": batch_spec(other)},
                                    ForecastReason.NEW_BATCH_SIZE, facts))
    return traces


def _tensor_specs(spec: Spec) -> list[TensorSpec]:
    if isinstance(spec, TensorSpec):
        return [spec]
    if isinstance(spec, MappingSpec):
        return [leaf for _, item in spec.items for leaf in _tensor_specs(item)]
    if isinstance(spec, SequenceSpec):
        return [leaf for item in spec.items for leaf in _tensor_specs(item)]
    return []


def _validates(epochs: int, initial_epoch: int, validation_freq: Any) -> bool:
    if isinstance(validation_freq, int):
        return any((epoch + 1) % validation_freq == 0 for epoch in range(initial_epoch, epochs))
    return any(epoch + 1 in validation_freq for epoch in range(initial_epoch, epochs))


@dataclasses.dataclass(frozen=True)
class ForecastCheck:
    """A `Forecast` compared with the traces `watch()` recorded while the call ran.

    Attributes:
        method: `"fit"`, `"evaluate"` or `"predict"`.
        agreed: Pairs of a foreseen trace and the recorded trace that matches it.
        missed: Foreseen traces that did not happen.
        unforeseen: Recorded traces of Keras steps that were not foreseen.
        outside: Why the forecast foresaw nothing, when the case was outside it.
    """

    method: str
    agreed: tuple[tuple[ForeseenTrace, WatchedTrace], ...]
    missed: tuple[ForeseenTrace, ...]
    unforeseen: tuple[WatchedTrace, ...]
    outside: tuple[Outside, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the case was foreseeable and every trace agreed."""
        return not (self.outside or self.missed or self.unforeseen)

    def summary(self) -> str:
        """The agreements, then the misses, as text."""
        return format_check(self.method, self.agreed, self.missed, self.unforeseen, self.outside)

    def __str__(self) -> str:
        return self.summary()


class Forecast:
    """The traces a Keras `fit`, `evaluate` or `predict` call will make, foreseen before it runs.

    Returned by `traceguard.forecast()`. `str()` lists each foreseen trace with its
    reason; `check()` compares it with what `watch()` recorded while the call ran.

    Attributes:
        method: `"fit"`, `"evaluate"` or `"predict"`.
        traces: The `ForeseenTrace`s, in the order they are foreseen: `function`,
            `step`, `kind`, `signature`, `reason`.
        outside: Why the case is outside what a forecast foresees (then `traces`
            is empty): a custom `train_step`, a distribution strategy, ...
        keras: The Keras the model belongs to, e.g. `"keras3"`.
    """

    def __init__(self, method: str, traces: tuple[ForeseenTrace, ...], outside: tuple[Outside, ...],
                 keras: str) -> None:
        self.method = method
        self.traces = traces if not outside else ()
        self.outside = outside
        self.keras = keras

    @property
    def foreseeable(self) -> bool:
        """Whether the case is inside what a forecast foresees."""
        return not self.outside

    def count(self, kind: str | None = None) -> int:
        """How many traces are foreseen, of `kind` (`"trace"`, `"variable_retrace"`, `"retrace"`) or all."""
        return sum(kind is None or trace.kind == kind for trace in self.traces)

    def check(self, explanation: Any) -> ForecastCheck:
        """Compares the forecast with the Keras step traces an `Explanation` recorded.

        Args:
            explanation: The `traceguard.Explanation` of a `watch()` block (or
                `explain()`) in which the forecast call ran, alone.

        Returns:
            A `ForecastCheck`: `agreed`, `missed`, `unforeseen`, and `ok`.

        Raises:
            ValueError: If `explanation` is not an `Explanation`.

        Example:

        ```python
        expected = traceguard.forecast(model, x, y, batch_size=32)
        with traceguard.watch() as watched:
            model.fit(x, y, batch_size=32)
        assert expected.check(watched).ok, expected.check(watched)
        ```
        """
        functions = getattr(explanation, "functions", None)
        if not isinstance(functions, dict):
            raise ValueError("`Forecast.check()` expects the `traceguard.Explanation` of a `watch()` "
                             f"block. Received: explanation={explanation!r}")
        agreed, missed, unforeseen = pair_traces(self.traces, watched_traces(functions.values()))
        return ForecastCheck(self.method, agreed, missed, unforeseen, self.outside)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The foreseen traces as JSON-serialisable dicts."""
        return [{"function": trace.function, "step": trace.step, "kind": trace.kind,
                 "signature": dict(trace.signature), "reason": trace.reason.value, "facts": dict(trace.facts)}
                for trace in self.traces]

    def summary(self) -> str:
        """The readable forecast: each trace with its signature, why, and how to avoid it."""
        return format_forecast(self.method, self.keras, self.traces, self.outside)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        what = f"{len(self.traces)} traces" if self.foreseeable else "outside what it foresees"
        return f"<Forecast of {self.method}: {what}>"


def watched_traces(functions: Any) -> list[WatchedTrace]:
    """The Keras step traces of `FunctionRuns`: a new function object's first trace is a `trace`."""
    traces = []
    for runs in functions:
        if not runs.keras_step:
            continue
        for event in runs.events:
            kind = event.kind.value
            # A retrace whose first change is a new function object (validation's test step in
            # Keras 3 shares the train step's code) is that object's first trace.
            if kind == "retrace" and event.changes \
                    and getattr(event.changes[0], "aspect", None) is Aspect.FUNCTION_OBJECT:
                kind = "trace"
            if kind in FORESEEN_KINDS:
                signature = format_signature(event.signature)
                traces.append(WatchedTrace(event.function, kind, signature, event.serial))
    return sorted(traces, key=lambda trace: trace.serial)


def forecast(model: Any, x: Any = None, y: Any = None, *, method: str = "fit", batch_size: int | None = None,
             epochs: int = 1, sample_weight: Any = None, validation_data: Any = None,
             validation_split: float = 0.0, validation_batch_size: int | None = None,
             validation_freq: Any = 1, initial_epoch: int = 0, steps_per_epoch: int | None = None,
             steps: int | None = None) -> Forecast:
    """Foresees the traces Keras's `fit` (or `evaluate`, `predict`) will make, without running it.

    Reads the model's state (built or not, its optimizer's slot variables, its
    compiled metrics) and the data's shapes (a `tf.data.Dataset`'s `element_spec`,
    or the arrays' length and the batch size), and applies the rules measured
    on each Keras: the first trace of each step function, the second trace when
    that first trace creates variables, the batch dimension a partial last batch
    leaves unknown, validation's test step, `predict`'s retrace for a last,
    smaller batch. Arguments mirror the Keras method's. A case it cannot foresee
    (a custom `train_step`, a distribution strategy, step functions an earlier
    call made, a generator) gives a `Forecast` with `outside` set and no traces.

    Args:
        model: A compiled Keras model (Keras 3 on TensorFlow, or Keras 2).
        x: Input data: arrays (or a list or dict of them), or a `tf.data.Dataset`.
        y: Target arrays, if `x` is arrays. Defaults to `None`.
        method: One of `{"fit", "evaluate", "predict"}`. Defaults to `"fit"`.
        batch_size: As in the method. Defaults to `None` (Keras's 32).
        epochs: As in `fit`. Defaults to `1`.
        sample_weight: As in the method. Defaults to `None`.
        validation_data: As in `fit`: `(x_val, y_val)` or a dataset. Defaults to `None`.
        validation_split: As in `fit`. Defaults to `0.0`.
        validation_batch_size: As in `fit`. Defaults to `None` (`batch_size`).
        validation_freq: As in `fit`. Defaults to `1`.
        initial_epoch: As in `fit`. Defaults to `0`.
        steps_per_epoch: As in `fit`. Defaults to `None`.
        steps: As in `evaluate` and `predict`. Defaults to `None`.

    Returns:
        A `traceguard.Forecast`: `str()` is readable, `.traces` the
        `ForeseenTrace`s, `.check(explanation)` compares with a watched run.

    Raises:
        ValueError: If `model` is not a Keras model, or an argument is out of range.

    Example:

    ```python
    print(traceguard.forecast(model, x, y, batch_size=32, validation_split=0.2))
    ```
    """
    _check_arguments(method, batch_size, epochs, validation_split)
    if _compat.IS_JAX:
        return Forecast(method, (), (Outside(Unforeseeable.BACKEND, "Keras 3 on JAX"),), "keras3")
    state = _keras_training.model_state(model)
    outside = _outside(state, method)
    data = describe_data(x, y, sample_weight, batch_size, steps_per_epoch if method == "fit" else steps,
                         state.floatx)
    validation: Data | Outside | None = None
    if isinstance(data, Data) and method == "fit":
        if validation_data is None and validation_split and data.samples is not None:
            data, validation = split_data(data, validation_split)
        elif validation_data is not None:
            validation = describe_data(*unpack_validation(validation_data),
                                       validation_batch_size or batch_size, None, state.floatx)
        if not _validates(epochs, initial_epoch, validation_freq):
            validation = None
    outside += [item for item in (data, validation) if isinstance(item, Outside)]
    if method == "predict" and state.flavor == "keras3" and isinstance(data, Data):
        outside += [item for item in (_eager_batch_outside(state, data),) if item is not None]
    if outside or state.run_eagerly or (method == "fit" and epochs <= initial_epoch):
        return Forecast(method, (), tuple(outside), state.flavor)
    assert isinstance(data, Data)
    return Forecast(method, tuple(_traces(state, method, data, steps, validation, validation_batch_size)),
                    (), state.flavor)


def _traces(state: _keras_training.ModelState, method: str, data: Data, steps: int | None,
            validation: Data | Outside | None, validation_batch_size: int | None) -> list[ForeseenTrace]:
    creators = _creators(state, method)
    if method == "predict" and state.flavor == "keras3":
        traces = _eager_batch_traces(state, data, steps, creators)
    else:
        step = {"fit": "train", "evaluate": "test", "predict": "predict"}[method]
        traces = _iterator_traces(state, method, step, data, creators)
    if isinstance(validation, Data):
        if validation_batch_size and validation.samples is not None:
            validation = dataclasses.replace(validation, batch_size=validation_batch_size)
        # The train step's trace built the model, optimizer and metrics: the test step creates nothing.
        traces += _iterator_traces(state, "evaluate", "test", validation, {})
    return traces
