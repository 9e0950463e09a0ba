"""The words of every reason and hint: one sentence per `Reason`, one fix per `Hint`.

`classify_run` decides with codes; this module alone turns a `Verdict` into the
`reason` and `hint` a `TraceEvent` carries, so wording changes here only.

This module picks the words for a verdict and words the ones that need its facts; the hints
each backend words its own way, or that name an argument, are tables in `backend_hints`.
"""

from __future__ import annotations

import functools

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect
from traceguard._core.keras_names import KERAS_STEP_FUNCTIONS as _KERAS_STEPS
from traceguard._core.verdicts import Hint, Reason, Verdict
from traceguard._reports.backend_hints import (
    BY_ARGUMENT,
    BY_BACKEND,
    FIXED_STRUCTURE,
    PYTHON_VALUE,
    TF_DEVICE_CONTEXT,
)
from traceguard._reports.bodies import body_hint, body_reason, is_body
from traceguard._reports.compilations import compilation_hint, compilation_reason
from traceguard._reports.hint_words import HINTS
from traceguard._reports.step_fixes import step_fix
from traceguard._reports.torch_words import torch_hint, torch_reason


def _varying_length(verdict: Verdict) -> str:
    (change, *_) = verdict.changes
    what = f"Dimension {change.axis} of `{change.argument}` (e.g. a sequence length) varies"
    if verdict.backend == Backend.JAX:
        return (f"{what}: `jax.jit` compiles once per shape. Pad the inputs to a fixed length, or "
                "bucket them to a few lengths.")
    if verdict.keras_call is not None or verdict.function in _KERAS_STEPS:
        return (f"{what}, and each new length costs a trace of the step. Pad the inputs to one length "
                "(`keras.utils.pad_sequences`, `dataset.padded_batch`) or bucket them to a few lengths "
                "(`tf.data.Dataset.bucket_by_sequence_length`).")
    return (f"{what}, and each new length costs a trace. Give the tf.function an `input_signature` "
            "with None for that dimension, or pad/bucket the inputs to a few lengths.")


def _none_dimension(verdict: Verdict) -> str:
    text = ("Each new shape costs a trace: give the tf.function an `input_signature` with None "
            "for the dimension that varies, or use `tf.function(reduce_retracing=True)`.")
    if verdict.data != "dataset" and verdict.of_function:
        return text  # No `tf.data` pipeline seen: nothing to say of its batches.
    # A batch: every change is dimension 0 of a tensor, all from one size to one smaller size.
    sizes = {(change.old, change.new) if change.aspect is Aspect.DIM and change.axis == 0 else (None, None)
             for change in verdict.changes}
    old, new = next(iter(sizes)) if len(sizes) == 1 else (None, None)
    if isinstance(old, int) and isinstance(new, int) and new < old:
        text += (" If it is the last, partial batch of a dataset, `dataset.batch(batch_size, "
                 "drop_remainder=True)` removes it.")
    return text


def _relaxed_dimension(verdict: Verdict) -> str:
    (change, *_) = verdict.changes
    call = verdict.keras_call
    what = "batch size" if change.axis == 0 else "length"
    relaxed = f" (it traced `{change.parameter}` as `{verdict.relaxed_to}`)" if verdict.relaxed_to else ""
    expected = (f"Expected once: TensorFlow relaxed dimension {change.axis} of `{change.argument}` to "
                f"None after it changed{relaxed}, so later values reuse this graph.")
    if change.axis == 0 and call is not None and call.method in ("predict", "predict_on_batch"):
        return (f"{expected} To skip this retrace too, predict in batches of one "
                "size, or call the model in your own `tf.function` with an `input_signature` whose "
                "batch dimension is None.")
    if change.axis:
        return (f"{expected} To skip this retrace too, pad the inputs to one {what} "
                "(`keras.utils.pad_sequences`, `dataset.padded_batch`), or give None for it in an "
                "`input_signature`.")
    if verdict.of_function and verdict.relaxed_to is not None:
        return (f"{expected} `reduce_retracing` is on already: to skip this retrace too, give the "
                f"function that signature from the start, an `input_signature` with "
                f"`{verdict.relaxed_to}` for `{change.parameter}`.")
    return f"{expected} To skip this retrace too, give None for it in an `input_signature`."


def _partial_batch_arrays(verdict: Verdict) -> str:
    call = verdict.keras_call
    samples, batch_size = (call.samples, call.batch_size or 32) if call is not None else (None, 32)
    if samples and samples % batch_size:
        facts = (f"`fit` got {samples} samples in batches of {batch_size}: the last batch of "
                 f"{samples % batch_size} has a new shape and costs a trace, the first time it comes (later "
                 "`fit` calls of the model reuse it).")
    else:
        facts = ("The last batch is partial: its new shape costs a trace, the first time it comes (later "
                 "`fit` calls of the model reuse it).")
    return (f"{facts} Arrays have no `drop_remainder`: choose a `batch_size` that divides the number "
            "of samples, or trim `x` and `y` to a multiple of it "
            "(`n = len(x) // batch_size * batch_size; x, y = x[:n], y[:n]`).")


def _partial_batch(verdict: Verdict) -> str:
    call = verdict.keras_call
    method = f"`{call.method}`" if call is not None else "`fit` or `evaluate`"
    return (f"A partial last batch in {method} has a new shape and costs a trace: batch a "
            "`tf.data.Dataset` with `drop_remainder=True`, or choose a number of samples divisible by "
            "the batch size.")


def _partial_batch_evaluate(verdict: Verdict) -> str:
    call = verdict.keras_call
    samples, batch_size = (call.samples, call.batch_size or 32) if call is not None else (None, None)
    facts = (f" ({samples} samples in batches of {batch_size})"
             if samples and batch_size and samples % batch_size else "")
    return (f"The last batch of `evaluate`{facts} is partial: its new shape costs one trace. Dropping "
            "it would change the metrics: choose a `batch_size` that divides the number of samples, "
            "or accept the one-time cost.")


def _optimizer_slots(verdict: Verdict) -> str:
    shown = ", ".join(f"`{name}`" for name in verdict.created[:3])
    more = ", ..." if len(verdict.created) > 3 else ""
    return (f"The first trace created the optimizer's variables ({shown}{more}), so TensorFlow traced "
            "once more: a one-time cost. Create the optimizer outside the function, once, and build "
            "it before the first call: `optimizer.build(model.trainable_variables)`. An optimizer "
            "made inside the function fails on its second trace (\"tf.function only supports "
            "singleton tf.Variables created on the first call\").")


def _loss_creates_variable(verdict: Verdict) -> str:
    names = [name for name in verdict.created if "compile_loss/" in name] or list(verdict.created)
    shown = ", ".join(f"`{name}`" for name in names[:3])
    return (f"The loss function creates a `tf.Variable` ({shown}) each time it runs: the step's first "
            "trace made it, and the retrace may not (\"tf.function only supports singleton "
            "tf.Variables created on the first call\"). Make it a constant (`tf.constant(...)`, "
            "`keras.ops.convert_to_tensor(...)`) or create the variable once, outside the loss.")


def _varying_count(verdict: Verdict) -> str:
    return (f"`{verdict.argument}` is a list whose length varies: each length is a new structure and "
            "costs a trace, and no `input_signature` can hold a list of varying length. Pass one "
            "tensor instead: a `tf.RaggedTensor` (`tf.ragged.stack(...)`), or the tensors stacked "
            "or padded into one with a None dimension for the count.")


_HINTS_WITH_FACTS = {
    Hint.NONE_DIMENSION: _none_dimension,
    Hint.OPTIMIZER_SLOTS: _optimizer_slots,
    Hint.VARYING_COUNT: _varying_count,
    Hint.LOSS_CREATES_VARIABLE: _loss_creates_variable,
    Hint.RELAXED_DIMENSION: _relaxed_dimension,
    Hint.VARYING_LENGTH: _varying_length,
    Hint.PARTIAL_BATCH_ARRAYS: _partial_batch_arrays,
    Hint.PARTIAL_BATCH: _partial_batch,
    Hint.PARTIAL_BATCH_EVALUATE: _partial_batch_evaluate,
}


def _names(function: str | None, backend: Backend) -> tuple[bool, str, str, str]:
    """Whether the backend is JAX, its tracer, its engine, and where the run was traced."""
    jax = backend == Backend.JAX
    tracer, engine = ("jax.jit", "JAX") if jax else ("tf.function", "TensorFlow")
    if backend == Backend.TORCH:
        tracer, engine = "torch.compile", "torch"
    where = f"{tracer} `{function}`" if function else ("a JAX trace" if jax else "a graph")
    return jax, tracer, engine, where


# A compilation without a trace: worded in `compilations`.
_COMPILATION_REASONS = (Reason.XLA_COMPILE, Reason.RECOMPILE)
_COMPILATION_HINTS = (Hint.XLA_FIXED_SHAPES, Hint.XLA_DROP_REMAINDER, Hint.XLA_BATCH_DIVIDES,
                      Hint.XLA_PREDICT_PAD, Hint.RECOMPILE_SAME_SIGNATURE)


def reason_text(verdict: Verdict) -> str:
    """One sentence: why the run happened."""
    if is_body(verdict):
        return body_reason(verdict)
    if verdict.reason in _COMPILATION_REASONS:
        return compilation_reason(verdict)
    torch_words = torch_reason(verdict) if verdict.backend == Backend.TORCH else None
    if torch_words is not None:
        return torch_words
    if verdict.reason is Reason.SAME_TRACE:
        _, tracer, _, where = _names(verdict.function, verdict.backend)
        how = (f"as the body of a `{verdict.control_flow}` traced within it (an RNN cell, "
               "`keras.ops.while_loop`, ...)")
        return (f"Part of the same trace of {where}: its Python body ran this layer {how}; "
                "one trace, not a new one.")
    if verdict.reason is Reason.FIRST_TRACE and verdict.control_flow:
        return (f"First trace of {_names(verdict.function, verdict.backend)[3]} for this signature, "
                f"in the body of a `{verdict.control_flow}` traced within it.")
    if verdict.reason is Reason.ENCLOSING_CHANGED:
        return (f"{_subject(verdict.function, verdict.backend)} traced again because "
                f"{_what_changed(verdict.changes, 'its own arguments')} changed: "
                f"{'; '.join(map(str, verdict.changes))}. This layer's arguments did not change.")
    if verdict.reason is Reason.SIGNATURE_CHANGED:
        return (f"{_subject(verdict.function, verdict.backend)} traced again because "
                f"{_what_changed(verdict.changes, 'the signature')} changed: "
                f"{'; '.join(map(str, verdict.changes))}.")
    if verdict.reason is Reason.SAME_ARGUMENTS and verdict.of_function and verdict.backend != Backend.JAX:
        return _TF_SAME_KEY.format(subject=_subject(verdict.function, verdict.backend))
    if verdict.reason is Reason.SAME_ARGUMENTS and verdict.of_function and verdict.backend == Backend.JAX:
        return (f"{_subject(verdict.function, verdict.backend)} traced again, and its cache key shows no "
                "difference from an earlier trace's: the arguments' pytree (node types, static fields, "
                "keyword or positional), their shapes, dtypes and weak types, the static arguments and the "
                "tracing context are the same. JAX keys on these and on the function object only, so "
                "that earlier entry had left JAX's cache (`jax.clear_caches()`, or its size limit), or "
                "traceguard no longer held its key.")
    if verdict.reason is Reason.SAME_ARGUMENTS and verdict.of_function:
        return (f"{_subject(verdict.function, verdict.backend)} traced again with the arguments of an "
                "earlier trace: something outside its arguments changed (a captured Python value or "
                "global, the tracing context), or the earlier trace was not kept.")
    return _reason_of_place(verdict.reason, verdict.function, verdict.backend, verdict.objects)


# A tf.function retrace whose cache key, as read, equals its closest earlier one's: say so, and what
# else TensorFlow keys on (tracing_compilation._maybe_define_function: the arguments' types with the
# types of by-reference captures, looked up in the call's function context); never guess a cause.
_TF_SAME_KEY = ("{subject} traced again, and its cache key shows no difference from its closest earlier "
                "trace kept: the same argument types, looked up in the same function context (the graph "
                "it is called from, device scope, cross-replica context, variable policy, XLA context). "
                "TensorFlow keys on nothing else but the types of values the function captures by "
                "reference, which traceguard does not read. A Python value the body reads from its "
                "closure or a global is not part of the key: a new value does not retrace (the graph "
                "keeps the old one).")


def _what_changed(changes: tuple, arguments: str) -> str:
    """What the changes are of: the arguments, the backend's tracing context, or both."""
    context = [change.aspect is Aspect.CONTEXT for change in changes]
    if all(context):
        return "its tracing context"
    return f"its tracing context and {arguments}" if any(context) else arguments


def _subject(function: str | None, backend: Backend) -> str:
    jax, tracer, _, _ = _names(function, backend)
    if function:
        return f"The {tracer} `{function}`"
    return "The JAX trace" if jax else "The graph"


@functools.lru_cache(maxsize=256)
def _reason_of_place(reason: Reason, function: str | None, backend: Backend,
                     objects: int | None = None) -> str:
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
    if reason is Reason.NEW_FUNCTION_OBJECT and objects:
        return (f"First trace of {where} as a new function object (#{objects} so far) from the same code "
                "as earlier ones: not a retrace of one object, but the code made anew. Each object "
                "starts with no traces, so one made per call, per loop iteration or per model traces "
                "once more.")
    if reason is Reason.NEW_FUNCTION_OBJECT:
        return (f"First trace of {where} as a new tf.function object wrapping the same Python function "
                "as an earlier one that traced this signature already: each tf.function object keeps "
                "its own traces, so one created in a loop or per call traces once more each time.")
    if reason is Reason.FIRST_TRACE:
        return (f"First trace of {where} for this signature: {engine} ran the Python body to "
                f"build a {'jaxpr' if jax else 'graph'}.")
    if reason is Reason.VARIABLE_RETRACE:
        return (f"{subject} traced the same signature again: its first trace created variables, "
                "so TensorFlow lifted them out and traced once more with variable creation disabled.")
    return (f"{subject} traced again although this layer's arguments did not change: the layer runs "
            "in every trace of the function, so what made the function trace again (its own arguments, "
            "or the context it was called in; see the function's record) made this run.")


def hint_text(verdict: Verdict) -> str | None:
    """How to avoid the run, or None when it is expected."""
    hint = verdict.hint
    if hint is None:
        return None
    fix = step_fix(verdict) or (torch_hint(verdict) if verdict.backend == Backend.TORCH else None)
    if fix is not None:
        return fix
    if hint in (Hint.DEFINE_BODY_ONCE, Hint.WEAK_CARRY):
        return body_hint(verdict)
    if hint in _HINTS_WITH_FACTS:
        return _HINTS_WITH_FACTS[hint](verdict)
    if hint in _COMPILATION_HINTS:
        return compilation_hint(verdict)
    if hint is Hint.PYTHON_VALUE_AS_TENSOR:
        return PYTHON_VALUE[_backend(verdict)].format(argument=verdict.argument)
    if (hint is Hint.TRACING_CONTEXT and verdict.argument == "device_functions"
            and _backend(verdict) is not Backend.JAX):
        return TF_DEVICE_CONTEXT
    if hint in BY_BACKEND:
        return BY_BACKEND[hint][_backend(verdict)].format(argument=verdict.argument,
                                                           function=verdict.function)
    if hint in BY_ARGUMENT:
        return BY_ARGUMENT[hint].format(argument=verdict.argument)
    if hint is Hint.FIXED_STRUCTURE:
        return FIXED_STRUCTURE[_backend(verdict)]
    if hint is Hint.RESTORED_FUNCTION:
        return HINTS[hint].format(function=verdict.function)
    return HINTS[hint]


def _backend(verdict: Verdict) -> Backend:
    return Backend.JAX if verdict.backend == Backend.JAX else Backend.TENSORFLOW
