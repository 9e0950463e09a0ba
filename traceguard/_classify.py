"""Why did the body run? A pure function of what was observed around the run.

`classify_run` knows nothing of TensorFlow: the recorder hands it the signals
it saw (eager? symbolic? saving? which tf.function, in which phase?) and the
layer's earlier traces of that function, and gets back the kind, what changed,
the reason and a hint. That keeps every rule here unit-testable without TF.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Sequence
from typing import Any

from traceguard._events import TraceKind
from traceguard._signature import Signature, diff_signatures, format_spec


class RunContext(enum.Enum):
    """Where the body ran, as seen by the recorder."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    SAVE = "save"
    GRAPH = "graph"


@dataclasses.dataclass(frozen=True)
class EarlierTrace:
    """What classification remembers of one earlier trace of a function."""

    signature: Signature
    in_creation_phase: bool  # Traced by tf.function's first, variable-creating configuration.
    # Identifies the trace the run was part of (compared with `==`); None when unknown.
    trace: Any = None


def same_trace(a: Any, b: Any) -> bool:
    """Whether two trace tokens name the same trace; unknown (None) never matches."""
    return a is not None and b is not None and a == b


@dataclasses.dataclass(frozen=True)
class Verdict:
    kind: TraceKind
    changes: tuple[str, ...]
    reason: str
    hint: str | None


# Function names Keras gives the steps of fit/evaluate/predict (Keras 3, then
# tf_keras): a changed batch dimension there is almost always a partial last batch.
KERAS_STEP_FUNCTIONS = frozenset({
    "one_step_on_data", "one_step_on_iterator", "multi_step_on_iterator",
    "one_step_on_data_distributed", "train_function", "test_function", "predict_function",
    "train_step", "test_step", "predict_step",
})

SYMBOLIC_HINT = (
    "Expected once per layer: Keras runs `call` on symbolic inputs to create the "
    "weights when the layer has no `build()`, and to infer output shapes in a functional "
    "model. Define `build(input_shape)` to create the weights (and "
    "`compute_output_shape()` to skip the pass in functional models)."
)
VARIABLE_RETRACE_HINT = (
    "Create the variables before the first traced call: call the layer once on a sample "
    "input before wrapping it in `tf.function`, or give it a `build(input_shape)` that "
    "creates its weights (building its sublayers) and call `layer.build(input_shape)` "
    "first. TensorFlow then traces once."
)

NEW_FUNCTION_HINT = (
    "Create the tf.function once, outside the loop or the function called per step, and "
    "reuse it."
)

# Keras 2's `fit` creates the optimizer's variables (slots, iteration count) in the
# first trace of `train_function` (tf_keras, Keras 2.12-2.15; measured), so TensorFlow
# traces it twice; Keras 3 builds the optimizer before tracing.
TRAIN_FUNCTION_VARIABLE_RETRACE_HINT = (
    "Keras 2 creates the optimizer's variables in the first trace of `train_function`, "
    "so TensorFlow traces it twice once per model. To trace once, build the optimizer "
    "before `fit`: `model.optimizer.build(model.trainable_variables)`."
)


def _names(function: str | None, backend: str) -> tuple[bool, str, str, str]:
    """Whether the backend is JAX, its tracer, its engine, and where the run was traced."""
    jax = backend == "jax"
    tracer, engine = ("jax.jit", "JAX") if jax else ("tf.function", "TensorFlow")
    where = f"{tracer} `{function}`" if function else ("a JAX trace" if jax else "a graph")
    return jax, tracer, engine, where


@functools.lru_cache(maxsize=256)
def _verdict_of_place(context: RunContext, function: str | None, backend: str) -> Verdict:
    """The verdict of an eager, symbolic or save run, which depends on where it ran only."""
    _, _, engine, where = _names(function, backend)
    if context is RunContext.EAGER:
        return Verdict(TraceKind.EAGER, (), f"Ran eagerly: {engine} executed `call` op by op, "
                       "outside any graph.", None)
    if context is RunContext.SYMBOLIC:
        place = f" inside {where}" if function else ""
        return Verdict(TraceKind.SYMBOLIC, (), "Keras ran `call` on symbolic inputs to build the "
                       f"layer or infer its output shapes{place}; no graph is kept.", SYMBOLIC_HINT)
    return Verdict(TraceKind.SAVE, (), f"Traced by SavedModel saving or `export` to write "
                   f"{where} into the saved model.", None)


def classify_run(
    context: RunContext,
    signature: Signature,
    function: str | None,
    in_creation_phase: bool | None,
    earlier: Sequence[EarlierTrace],
    same_origin: Sequence[EarlierTrace] = (),
    trace: Any = None,
    backend: str = "tensorflow",
) -> Verdict:
    """Classifies one body run.

    Runs that belong to the same trace (each replica's run under
    `MirroredStrategy`, or a layer called twice in one function) are classified
    against the earlier traces only, so they share that trace's kind.

    Args:
        context: Where the body ran.
        signature: The run's argument specs.
        function: The enclosing tf.function's name, if any.
        in_creation_phase: True for a trace by tf.function's first,
            variable-creating configuration; False once an earlier trace created
            variables; None when unknown.
        earlier: The layer's earlier traces of the same function, oldest first.
        same_origin: When `earlier` is empty, the layer's earlier traces by
            other tf.function objects wrapping the same Python function.
        trace: A token identifying the trace in progress, or None when unknown.
        backend: `"tensorflow"` or `"jax"`, the Keras backend: it names the
            tracer (`tf.function`, `jax.jit`) in reasons and hints.
    """
    if context is not RunContext.GRAPH:
        return _verdict_of_place(context, function, backend)
    jax, tracer, engine, where = _names(function, backend)
    subject = f"The {tracer} `{function}`" if function else ("The JAX trace" if jax else "The graph")
    if trace is not None:  # Runs of the trace in progress are not earlier traces.
        earlier = [past for past in earlier if past.trace is None or past.trace != trace]
        same_origin = [past for past in same_origin if past.trace is None or past.trace != trace]
    if not earlier and any(past.signature == signature for past in same_origin):
        return Verdict(TraceKind.RETRACE, (f"tf.function `{function}`: new object, same Python function",),
                       f"{subject} is a new tf.function object wrapping the same Python function as "
                       "an earlier one that traced this signature already; each tf.function object "
                       "keeps its own traces, so one created in a loop or per call traces every time.",
                       NEW_FUNCTION_HINT)
    if not earlier:
        return Verdict(TraceKind.TRACE, (), f"First trace of {where} for this signature: "
                       f"{engine} ran the Python body to build a {'jaxpr' if jax else 'graph'}.", None)

    same = [trace for trace in earlier if trace.signature == signature]
    if same:
        if in_creation_phase is False and any(trace.in_creation_phase for trace in same):
            return Verdict(TraceKind.VARIABLE_RETRACE, (), f"{subject} traced "
                           "the same signature again: its first trace created variables, so "
                           "TensorFlow lifted them out and traced once more with variable creation "
                           "disabled.", TRAIN_FUNCTION_VARIABLE_RETRACE_HINT
                           if function == "train_function" else VARIABLE_RETRACE_HINT)
        return Verdict(TraceKind.RETRACE, (), f"{subject} traced again "
                       "although this layer's arguments did not change: something outside the "
                       "layer changed (an argument of the enclosing function, a captured Python "
                       "value, or the function was created anew).",
                       "Create the tf.function once and reuse it; pass values that vary as "
                       "tensors, not Python objects.")

    closest, changes = closest_trace(earlier, signature)
    return Verdict(TraceKind.RETRACE, changes, f"{subject} traced again "
                   f"because the signature changed: {'; '.join(changes)}.",
                   retrace_hint(changes, closest.signature, signature, function, backend))


def closest_trace(
    earlier: Sequence[EarlierTrace], signature: Signature
) -> tuple[EarlierTrace, tuple[str, ...]]:
    """The earlier trace with the fewest changes to `signature` (the newest on a tie), and the changes.

    `earlier` holds no trace of this very signature. Each argument whose spec
    differs adds at least one change, so a trace whose count of differing
    arguments already reaches the best count is skipped without formatting its
    changes: a retrace storm compares against many earlier traces.
    """
    newest_first = reversed(earlier)
    best = next(newest_first)
    best_changes = diff_signatures(best.signature, signature)
    for trace in newest_first:
        if len(best_changes) <= 1:
            break  # No earlier trace has this very signature: none can do better.
        old = trace.signature
        differing = sum(old.get(name) != spec for name, spec in signature.items())
        differing += sum(name not in signature for name in old)
        if differing < len(best_changes):
            changes = diff_signatures(old, signature)
            if len(changes) < len(best_changes):
                best, best_changes = trace, changes
    return best, tuple(best_changes)


def retrace_hint(changes: Sequence[str], old: Signature, new: Signature, function: str | None,
                 backend: str = "tensorflow") -> str:
    """The fix that matches the first change."""
    if backend == "jax":
        return _jax_retrace_hint(changes, old, new, function)
    first = changes[0]
    name = first.split(":", 1)[0].split("[", 1)[0]
    if name == "training":
        return ("Expected once per value of `training`: each value gets its own graph. Pass "
                "a Python bool consistently, not a mix of tensors and bools.")
    if ": dim " in first:
        if function in KERAS_STEP_FUNCTIONS:
            return ("A partial last batch has a new shape and costs a trace: batch with "
                    "`drop_remainder=True`, or choose a dataset size divisible by the batch size.")
        return ("Each new shape costs a trace: give the tf.function an `input_signature` with None "
                "for the dimension that varies, or use `tf.function(reduce_retracing=True)`.")
    if ": dtype " in first:
        return "Cast the inputs to one dtype before the call; each dtype costs a trace."
    if ": rank " in first:
        return "Each rank costs a trace: reshape inputs to one rank, or use `input_signature`."
    old_spec, new_spec = old.get(name), new.get(name)
    if (old_spec or new_spec or ("",))[0] == "value" and (new_spec or old_spec or ("",))[0] == "value":
        return (f"Each new Python value of `{name}` is a new signature: pass it as a tensor "
                f"(e.g. `tf.constant(...)`) so the graph takes it as an input, or keep it fixed.")
    return ("Keep the structure of the arguments fixed between calls, or use an "
            "`input_signature`; each distinct structure costs a trace.")


def _jax_retrace_hint(changes: Sequence[str], old: Signature, new: Signature, function: str | None) -> str:
    # `jax.jit` compiles once per input shape and dtype, and per value of a static argument.
    first = changes[0]
    name = first.split(":", 1)[0].split("[", 1)[0]
    if ": dim " in first:
        if function in KERAS_STEP_FUNCTIONS:
            return ("A partial last batch has a new shape and costs a trace: batch with "
                    "`drop_remainder=True`, or choose a dataset size divisible by the batch size.")
        return ("Each new shape costs a trace: `jax.jit` compiles once per input shape. Pad or "
                "bucket the inputs to a few fixed shapes.")
    if ": dtype " in first:
        return "Cast the inputs to one dtype before the call; each dtype costs a trace."
    old_spec, new_spec = old.get(name), new.get(name)
    if (old_spec or new_spec or ("",))[0] == "value" and (new_spec or old_spec or ("",))[0] == "value":
        return (f"Each new Python value of `{name}` is a new signature: pass it as an array "
                "(e.g. `jnp.asarray(...)`) so the trace takes it as an input, or keep it fixed.")
    return ("Keep the shapes, dtypes and structure of the arguments fixed between calls; "
            "each distinct combination costs a trace.")


__all__ = ["EarlierTrace", "RunContext", "Verdict", "classify_run", "format_spec"]
