"""The words of a forecast: each foreseen trace's reason and fix, and a forecast's check.

Reads `_core.forecasts` values only; `_diagnosis.forecast` makes them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from traceguard._core.forecasts import ForecastReason, ForeseenTrace, Outside, Unforeseeable, WatchedTrace

_WIDTH = 100
_KERAS = {"keras3": "Keras 3", "keras2": "Keras 2"}
_STEPS = {"train": "train step", "test": "test step", "predict": "predict step"}

_OUTSIDE = {
    Unforeseeable.BACKEND: "{detail}: forecasts cover Keras on TensorFlow (Keras 3 and Keras 2).",
    Unforeseeable.KERAS_VERSION: "{detail} makes step functions other than the ones forecasts know "
                                 "(measured on Keras 3.15).",
    Unforeseeable.NOT_COMPILED: "{detail}: `fit` and `evaluate` need `compile()` first.",
    Unforeseeable.CUSTOM_STEP: "the model overrides {detail}: a custom step's traces depend on its Python "
                               "code, which a forecast does not run.",
    Unforeseeable.EXISTING_FUNCTIONS: "the model has step functions ({detail}) from an earlier call, with "
                                      "traces a forecast does not know; forecast before the first call, or "
                                      "after `compile()` again.",
    Unforeseeable.DISTRIBUTED: "the model runs under {detail}, whose per-replica traces are not foreseen.",
    Unforeseeable.OPTIMIZER: "the optimizer {detail} is not one whose variables a forecast knows "
                             "(a custom or legacy optimizer).",
    Unforeseeable.DATA: "{detail}: forecasts read arrays (or lists and dicts of them) and "
                        "`tf.data.Dataset`s of dense tensors, not generators or `PyDataset`s.",
    Unforeseeable.DATASET_BATCH: "the dataset's batch dimension is unknown ({detail}), and Keras 3's "
                                 "`predict` traces each batch size it meets.",
    Unforeseeable.PREDICT_STEPS_PER_EXECUTION: "`steps_per_execution` is {detail}: Keras 3's `predict` then "
                                               "traces each count of batches, not foreseen.",
}

_OWNERS = (
    ("layers", "the weights of the unbuilt layers {}"),
    ("optimizer", "the {} optimizer's slot variables"),
    ("metrics", "the compiled metrics' state"),
    ("loss", "the compiled losses' trackers"),
)


def _first_trace(facts: Mapping[str, str]) -> str:
    text = "The step function's first call traces it."
    if "samples" in facts and facts["last_batch"] != facts["batch_size"]:
        samples, size, last = facts["samples"], facts["batch_size"], facts["last_batch"]
        batches = (f"{samples} samples are less than a batch of {size}" if samples == last
                   else f"{samples} samples in batches of {size} leave a last batch of {last}")
        text += (f" Its batch dimension is None: {batches}, and Keras's dataset of the arrays "
                 "gives every batch that one spec, so a partial batch does not retrace.")
    return text


def reason_words(trace: ForeseenTrace) -> str:
    """Why the trace is foreseen, in one or two sentences."""
    facts = trace.facts
    if trace.reason is ForecastReason.VARIABLE_CREATION:
        owners = "; ".join(words.format(facts[key]) for key, words in _OWNERS if key in facts)
        return (f"Its first trace creates variables ({owners}), so TensorFlow traces it again "
                "without creating them.")
    if trace.reason is ForecastReason.NEW_BATCH_SIZE:
        return (f"The last batch has {facts['last_batch']} samples, not {facts['first_batch']}: `predict` "
                "calls its step with each batch, and a new batch size retraces once (Keras then relaxes the "
                "batch dimension to None, so later sizes reuse that graph).")
    return _first_trace(facts)


def hint_words(trace: ForeseenTrace) -> str | None:
    """How to avoid the trace, or None when it is expected."""
    facts = trace.facts
    if trace.reason is ForecastReason.VARIABLE_CREATION:
        fixes = []
        if "layers" in facts:
            fixes.append("build the model (an `Input`, or `model.build(input_shape)`)")
        if "optimizer" in facts:
            fixes.append("build the optimizer: `model.optimizer.build(model.trainable_variables)`")
        if "metrics" in facts or "loss" in facts:
            fixes.append("the metrics' and losses' state is a one-time cost")
        return "Before the call, " + "; ".join(fixes) + "."
    if trace.reason is ForecastReason.NEW_BATCH_SIZE:
        return ("Pass a `batch_size` that divides the number of samples, or accept this one retrace: "
                "later calls reuse the relaxed graph.")
    return None


def _signature(signature: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={spec}" for name, spec in signature.items()) or "-"


def _add(lines: list[str], label: str, text: str) -> None:
    lines.extend(textwrap.wrap(text, _WIDTH, initial_indent=f"   {label}: ",
                               subsequent_indent=f"   {' ' * len(label)}  "))


def _outside_lines(outside: Sequence[Outside]) -> list[str]:
    return [line for item in outside for line in textwrap.wrap(
        _OUTSIDE[item.code].format(detail=item.detail), _WIDTH, initial_indent="  - ",
        subsequent_indent="    ")]


def format_forecast(method: str, keras: str, traces: Sequence[ForeseenTrace],
                    outside: Sequence[Outside]) -> str:
    """The text of `Forecast.summary()`."""
    head = f"Forecast of {method} ({_KERAS.get(keras, keras)})"
    if outside:
        return "\n".join([f"{head}: outside what a forecast foresees, so nothing is foreseen:",
                          *_outside_lines(outside)])
    retraces = sum(trace.kind != "trace" for trace in traces)
    functions = len({(trace.function, trace.step) for trace in traces})
    plural = "" if retraces == 1 else "s"
    lines = [f"{head}: {len(traces)} traces of {functions} step function{'' if functions == 1 else 's'} "
             f"({retraces} retrace{plural})"
             if traces else f"{head}: no traces (the model runs its steps eagerly)."]
    for number, trace in enumerate(traces, 1):
        lines.append(f"#{number} {trace.kind} of {trace.function} ({_STEPS[trace.step]})  "
                     f"({_signature(trace.signature)})")
        _add(lines, "why", reason_words(trace))
        hint = hint_words(trace)
        if hint:
            _add(lines, "fix", hint)
    return "\n".join(lines)


def format_check(method: str, agreed: Sequence[tuple[ForeseenTrace, WatchedTrace]],
                 missed: Sequence[ForeseenTrace], unforeseen: Sequence[WatchedTrace],
                 outside: Sequence[Outside]) -> str:
    """The text of `ForecastCheck.summary()`."""
    if outside:
        return "\n".join([f"Forecast of {method}: not checked, the case is outside what it foresees:",
                          *_outside_lines(outside)])
    verdict = "the forecast held" if not (missed or unforeseen) else "the forecast did not hold"
    lines = [f"Forecast of {method} against the watched run: {len(agreed)} agreed, {len(missed)} missed, "
             f"{len(unforeseen)} unforeseen; {verdict}."]
    lines += [f"  agreed      {trace.kind} of {trace.function}  ({_signature(trace.signature)})"
              for trace, _ in agreed]
    lines += [f"  missed      {trace.kind} of {trace.function}  ({_signature(trace.signature)}): "
              "foreseen, did not happen" for trace in missed]
    lines += [f"  unforeseen  {trace.kind} of {trace.function}  ({_signature(trace.signature)}): "
              "happened, not foreseen" for trace in unforeseen]
    return "\n".join(lines)
