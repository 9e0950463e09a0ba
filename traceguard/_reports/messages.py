"""The words of every reason and hint: one sentence per `Reason`, one fix per `Hint`.

`classify_run` decides with codes; this module alone turns a `Verdict` into the
`reason` and `hint` a `TraceEvent` carries, so wording changes here only.
"""

from __future__ import annotations

import functools

from traceguard._core.classify import Hint, Reason, Verdict

_HINTS: dict[Hint, str] = {
    Hint.DEFINE_BUILD: (
        "Expected once per layer: Keras runs `call` on symbolic inputs to create the "
        "weights when the layer has no `build()`, and to infer output shapes in a functional "
        "model. Define `build(input_shape)` to create the weights (and "
        "`compute_output_shape()` to skip the pass in functional models)."
    ),
    Hint.CREATE_VARIABLES_FIRST: (
        "Create the variables before the first traced call: call the layer once on a sample "
        "input before wrapping it in `tf.function`, or give it a `build(input_shape)` that "
        "creates its weights (building its sublayers) and call `layer.build(input_shape)` "
        "first. TensorFlow then traces once."
    ),
    Hint.BUILD_OPTIMIZER_FIRST: (
        "Keras 2 creates the optimizer's variables in the first trace of `train_function`, "
        "so TensorFlow traces it twice once per model. To trace once, build the optimizer "
        "before `fit`: `model.optimizer.build(model.trainable_variables)`."
    ),
    Hint.CREATE_FUNCTION_ONCE: (
        "Create the tf.function once, outside the loop or the function called per step, and "
        "reuse it."
    ),
    Hint.KEEP_OUTSIDE_VALUES_FIXED: (
        "Create the tf.function once and reuse it; pass values that vary as "
        "tensors, not Python objects."
    ),
    Hint.TRAINING_VALUE: (
        "Expected once per value of `training`: each value gets its own graph. Pass "
        "a Python bool consistently, not a mix of tensors and bools."
    ),
    Hint.PARTIAL_BATCH: (
        "A partial last batch has a new shape and costs a trace: batch with "
        "`drop_remainder=True`, or choose a dataset size divisible by the batch size."
    ),
    Hint.NONE_DIMENSION: (
        "Each new shape costs a trace: give the tf.function an `input_signature` with None "
        "for the dimension that varies, or use `tf.function(reduce_retracing=True)`."
    ),
    Hint.FIXED_SHAPES: (
        "Each new shape costs a trace: `jax.jit` compiles once per input shape. Pad or "
        "bucket the inputs to a few fixed shapes."
    ),
    Hint.ONE_DTYPE: "Cast the inputs to one dtype before the call; each dtype costs a trace.",
    Hint.ONE_RANK: "Each rank costs a trace: reshape inputs to one rank, or use `input_signature`.",
}

# Hints worded per backend, with the argument they name.
_PYTHON_VALUE = {
    "tensorflow": ("Each new Python value of `{argument}` is a new signature: pass it as a tensor "
                   "(e.g. `tf.constant(...)`) so the graph takes it as an input, or keep it fixed."),
    "jax": ("Each new Python value of `{argument}` is a new signature: pass it as an array "
            "(e.g. `jnp.asarray(...)`) so the trace takes it as an input, or keep it fixed."),
}
_FIXED_STRUCTURE = {
    "tensorflow": ("Keep the structure of the arguments fixed between calls, or use an "
                   "`input_signature`; each distinct structure costs a trace."),
    "jax": ("Keep the shapes, dtypes and structure of the arguments fixed between calls; "
            "each distinct combination costs a trace."),
}


def _names(function: str | None, backend: str) -> tuple[bool, str, str, str]:
    """Whether the backend is JAX, its tracer, its engine, and where the run was traced."""
    jax = backend == "jax"
    tracer, engine = ("jax.jit", "JAX") if jax else ("tf.function", "TensorFlow")
    where = f"{tracer} `{function}`" if function else ("a JAX trace" if jax else "a graph")
    return jax, tracer, engine, where


def reason_text(verdict: Verdict) -> str:
    """One sentence: why the run happened."""
    if verdict.reason is Reason.SIGNATURE_CHANGED:
        return (f"{_subject(verdict.function, verdict.backend)} traced again because the signature "
                f"changed: {'; '.join(verdict.changes)}.")
    return _reason_of_place(verdict.reason, verdict.function, verdict.backend)


def _subject(function: str | None, backend: str) -> str:
    jax, tracer, _, _ = _names(function, backend)
    if function:
        return f"The {tracer} `{function}`"
    return "The JAX trace" if jax else "The graph"


@functools.lru_cache(maxsize=256)
def _reason_of_place(reason: Reason, function: str | None, backend: str) -> str:
    jax, _, engine, where = _names(function, backend)
    subject = _subject(function, backend)
    if reason is Reason.EAGER:
        return f"Ran eagerly: {engine} executed `call` op by op, outside any graph."
    if reason is Reason.SYMBOLIC:
        place = f" inside {where}" if function else ""
        return ("Keras ran `call` on symbolic inputs to build the layer or infer its output "
                f"shapes{place}; no graph is kept.")
    if reason is Reason.SAVE:
        return f"Traced by SavedModel saving or `export` to write {where} into the saved model."
    if reason is Reason.NEW_FUNCTION_OBJECT:
        return (f"{subject} is a new tf.function object wrapping the same Python function as "
                "an earlier one that traced this signature already; each tf.function object "
                "keeps its own traces, so one created in a loop or per call traces every time.")
    if reason is Reason.FIRST_TRACE:
        return (f"First trace of {where} for this signature: {engine} ran the Python body to "
                f"build a {'jaxpr' if jax else 'graph'}.")
    if reason is Reason.VARIABLE_RETRACE:
        return (f"{subject} traced the same signature again: its first trace created variables, "
                "so TensorFlow lifted them out and traced once more with variable creation disabled.")
    return (f"{subject} traced again although this layer's arguments did not change: something "
            "outside the layer changed (an argument of the enclosing function, a captured Python "
            "value, or the function was created anew).")


def hint_text(verdict: Verdict) -> str | None:
    """How to avoid the run, or None when it is expected."""
    hint = verdict.hint
    if hint is None:
        return None
    if hint is Hint.PYTHON_VALUE_AS_TENSOR:
        return _PYTHON_VALUE[_backend(verdict)].format(argument=verdict.argument)
    if hint is Hint.FIXED_STRUCTURE:
        return _FIXED_STRUCTURE[_backend(verdict)]
    return _HINTS[hint]


def _backend(verdict: Verdict) -> str:
    return "jax" if verdict.backend == "jax" else "tensorflow"
