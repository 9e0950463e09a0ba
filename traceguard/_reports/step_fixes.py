"""The fixes of a step's variable retrace and of `predict`'s new shapes, worded with the run's facts.

A variable retrace of a whole function names the optimizers whose variables its first
trace created, as the user's code reaches them (`gan.d_optimizer`), found from the
variables' owners: a custom `train_step` may use its own optimizers, and building
`model.optimizer` instead changes nothing. A `predict` retrace names every dimension
that changed (the batch size and the sequence length).
"""

from __future__ import annotations

from traceguard._core.backends import Backend
from traceguard._core.keras_names import variable_owner
from traceguard._core.verdicts import Hint, Verdict

# The function-level hints of a first trace that created variables.
VARIABLE_HINTS = (Hint.STEP_CREATED_OTHER_VARIABLES, Hint.STEP_CREATED_VARIABLES, Hint.OPTIMIZER_SLOTS)


def _builds(verdict: Verdict) -> str:
    return " and ".join(f"`{build}`" for build in verdict.optimizers)


def _metrics_note(verdict: Verdict) -> str:
    if any(variable_owner(name) == "metric" for name in verdict.created):
        return (" The compiled metrics' state it also created is a one-time cost (evaluating one batch "
                "before `fit` moves it to the test step).")
    return ""


def variable_retrace_fix(verdict: Verdict) -> str | None:
    """The fix of a function's variable retrace, or None to use the hint's own words."""
    if not verdict.of_function or verdict.hint not in VARIABLE_HINTS:
        return None
    named = len(verdict.optimizers)
    if verdict.hint is Hint.STEP_CREATED_OTHER_VARIABLES:
        if not named:
            return ("The step's first trace created variables that are not its layers' (the optimizer's "
                    "slots, such as Adam's moments, or the compiled metrics' state), so TensorFlow traced "
                    "it once more, once per model. Build the optimizers the step uses before `fit`, with "
                    "the variables each updates: `model.optimizer.build(model.trainable_variables)` for "
                    "a compiled model's, and likewise any optimizer a custom `train_step` keeps; the "
                    "metrics' state is a one-time cost.")
        which = "the optimizer the step uses" if named == 1 else f"the {named} optimizers the step uses"
        return (f"The step's first trace created the variables of {which} (e.g. Adam's moments), so "
                f"TensorFlow traced it once more, once per model. Build {'it' if named == 1 else 'them'} "
                f"before `fit`: {_builds(verdict)}.{_metrics_note(verdict)}")
    if verdict.hint is Hint.STEP_CREATED_VARIABLES and named:
        return ("The step's first trace created variables (unbuilt layers' weights and the optimizer's "
                "slots), so TensorFlow traced it once more, once per model. Build the model before `fit` "
                "(an `Input`, or `model.build(input_shape)`), then the optimizer the step uses: "
                f"{_builds(verdict)}.{_metrics_note(verdict)}")
    if verdict.hint is Hint.OPTIMIZER_SLOTS and named:
        return (f"The first trace created the optimizer's variables, so TensorFlow traced once more: a "
                f"one-time cost. Build it before the first call: {_builds(verdict)}.")
    return None


def _dimensions(verdict: Verdict) -> tuple[str, list[int]]:
    """"batch size 1 -> 32 and dimension 1 (the length) 8 -> 40", and the axes that changed."""
    parts, axes = [], []
    for change in verdict.changes:
        if change.axis is None:
            continue
        axes.append(change.axis)
        what = "batch size" if change.axis == 0 else f"dimension {change.axis}" + (
            " (the sequence length)" if change.axis == 1 else "")
        parts.append(f"{what} {change.old} -> {change.new}")
    return " and ".join(dict.fromkeys(parts)), sorted(set(axes))


def predict_shape_fix(verdict: Verdict) -> str:
    """The fix of a `predict` retrace, naming every dimension that changed."""
    changed, axes = _dimensions(verdict)
    changed = changed or "a new batch size"
    other = [axis for axis in axes if axis]
    jax = verdict.backend == Backend.JAX
    pad = (" and pad the sequences to one length (`keras.utils.pad_sequences`)" if other else "")
    if jax:
        return (f"`predict` got inputs of a new shape ({changed}): on JAX each shape costs a trace and a "
                f"compilation of the predict step (there is no None dimension). Predict in batches of "
                f"one size{pad}, dropping the predictions of padded rows; dropping the last batch "
                "instead would lose predictions.")
    dims = "batch and length dimensions are" if other else "batch dimension is"
    return (f"`predict` got inputs of a new shape ({changed}): a trace (Keras then relaxes the changed "
            f"dimensions to None, so later shapes reuse the graph). To trace once, predict in batches of "
            f"one size{pad}, or call the model in your own `tf.function` with an `input_signature` whose "
            f"{dims} None.")


def step_fix(verdict: Verdict) -> str | None:
    """A function's fix worded with the run's facts, or None to use the hint's own words."""
    if verdict.hint is Hint.PREDICT_BATCH_SIZE and verdict.of_function:
        return predict_shape_fix(verdict)
    return variable_retrace_fix(verdict)


__all__ = ["VARIABLE_HINTS", "predict_shape_fix", "step_fix", "variable_retrace_fix"]
