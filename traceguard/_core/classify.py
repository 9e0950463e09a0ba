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
from typing import Any, NamedTuple

from traceguard._compat._keras_calls import KerasCall
from traceguard._compat._keras_names import variable_owner
from traceguard._core.changes import Aspect, Change
from traceguard._core.events import TraceKind
from traceguard._core.functions import FunctionTrace
from traceguard._core.signature import Signature, diff_signatures


class RunContext(enum.Enum):
    """Where the body ran, as seen by the recorder."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    SAVE = "save"
    GRAPH = "graph"


class EarlierTrace(NamedTuple):
    """What classification remembers of one earlier trace of a function.

    A named tuple: the recorder makes one per trace, and a frozen dataclass costs
    a call per field more.
    """

    signature: Signature
    in_creation_phase: bool  # Traced by tf.function's first, variable-creating configuration.
    # Identifies the trace the run was part of (compared with `==`); None when unknown.
    trace: Any = None
    created_variables: bool | None = None  # Whether the layer's run created variables; None: unknown.


def same_trace(a: Any, b: Any) -> bool:
    """Whether two trace tokens name the same trace; unknown (None) never matches."""
    return a is not None and b is not None and a == b


@dataclasses.dataclass(frozen=True)
class EnclosingTrace:
    """What the whole-function trace a layer run is part of differs in (`FunctionRecords.preview`).

    `kind` is one of `FUNCTION_TRACE_KINDS`; `objects`, how many function objects
    its code has had.
    """

    kind: str
    changes: tuple[Change, ...]
    objects: int = 1


class Reason(enum.Enum):
    """Why a body run happened; `_reports.messages` words each."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    SAVE = "save"
    FIRST_TRACE = "first_trace"
    SAME_TRACE = "same_trace"  # Ran again within a trace that already ran it with this signature.
    NEW_FUNCTION_OBJECT = "new_function_object"
    VARIABLE_RETRACE = "variable_retrace"
    SAME_ARGUMENTS = "same_arguments"  # The function retraced; this layer's arguments did not change.
    SIGNATURE_CHANGED = "signature_changed"
    # The layer's arguments did not change; the enclosing function's did.
    ENCLOSING_CHANGED = "enclosing_changed"
    # A whole function: XLA compiled it for new input shapes without a trace; JAX compiled
    # it again for a signature it had traced.
    XLA_COMPILE = "xla_compile"
    RECOMPILE = "recompile"


class SymbolicPass(enum.Enum):
    """Why Keras ran a layer's `call` on symbolic inputs (`RunContext.SYMBOLIC`)."""

    BUILD = "build"  # Keras 3 built the layer, which has no `build()`, by running `call`.
    OUTPUT = "output"  # Keras 3 inferred the layer's output (a functional model).
    ENCLOSING = "enclosing"  # Keras 3 ran it inside another layer's symbolic pass.
    KERAS2 = "keras2"  # A Keras 2 functional model ran it to infer its outputs.


class Hint(enum.Enum):
    """How to avoid a run; `_reports.messages` words each."""

    # A symbolic pass: why it ran not known.
    SYMBOLIC_PASS = "symbolic_pass"
    DEFINE_BUILD = "define_build"  # Keras 3's pass building a layer without `build()`.
    DEFINE_COMPUTE_OUTPUT_SHAPE = "define_compute_output_shape"  # Keras 3's pass inferring outputs.
    ENCLOSING_SYMBOLIC_PASS = "enclosing_symbolic_pass"  # Inside another layer's pass.
    KERAS2_FUNCTIONAL = "keras2_functional"  # Keras 2's functional model: nothing to fix.
    CREATE_VARIABLES_FIRST = "create_variables_first"
    # The first trace of a Keras step created variables, none of them the layer's.
    STEP_CREATED_OTHER_VARIABLES = "step_created_other_variables"
    # The first trace of a Keras step created variables: whose is not known.
    STEP_CREATED_VARIABLES = "step_created_variables"
    # The first trace of a Keras step built the layer.
    BUILD_MODEL_FIRST = "build_model_first"
    # The first trace of a user function created variables, none of them the layer's.
    FUNCTION_CREATED_OTHER_VARIABLES = "function_created_other_variables"
    BUILD_OPTIMIZER_FIRST = "build_optimizer_first"
    CREATE_FUNCTION_ONCE = "create_function_once"
    # A Keras step traced anew for a new model object: build the model once.
    REUSE_MODEL = "reuse_model"
    # A user function's first trace created an optimizer's variables, or metrics' state.
    OPTIMIZER_SLOTS = "optimizer_slots"
    METRIC_STATE = "metric_state"
    LOSS_CREATES_VARIABLE = "loss_creates_variable"  # The loss function makes a tf.Variable.
    # A list of a varying number of tensors.
    VARYING_COUNT = "varying_count"
    KEEP_OUTSIDE_VALUES_FIXED = "keep_outside_values_fixed"
    TRAINING_VALUE = "training_value"
    PARTIAL_BATCH = "partial_batch"  # In fit/evaluate, the data's kind unknown.
    PARTIAL_BATCH_DATASET = "partial_batch_dataset"  # fit on a tf.data.Dataset: drop_remainder.
    PARTIAL_BATCH_ARRAYS = "partial_batch_arrays"  # fit on arrays: a batch size that divides.
    PARTIAL_BATCH_EVALUATE = "partial_batch_evaluate"  # Dropping samples would change the metrics.
    PREDICT_BATCH_SIZE = "predict_batch_size"  # Dropping samples would drop predictions.
    ONE_BATCH_SIZE = "one_batch_size"  # train_on_batch / test_on_batch with varying sizes.
    RELAXED_DIMENSION = "relaxed_dimension"  # TensorFlow made a dimension None: expected, once.
    VARYING_LENGTH = "varying_length"  # A dimension past the batch, such as a sequence length.
    NONE_DIMENSION = "none_dimension"
    FIXED_SHAPES = "fixed_shapes"  # jax.jit: no None dimension; pad or bucket.
    ONE_DTYPE = "one_dtype"
    ONE_RANK = "one_rank"
    PYTHON_VALUE_AS_TENSOR = "python_value_as_tensor"
    FIXED_STRUCTURE = "fixed_structure"
    # An XLA compilation without a trace: fixed shapes, by input kind.
    XLA_FIXED_SHAPES = "xla_fixed_shapes"  # Pad or bucket, or no `jit_compile` if shapes must vary.
    XLA_DROP_REMAINDER = "xla_drop_remainder"  # fit/evaluate on a tf.data.Dataset.
    XLA_BATCH_DIVIDES = "xla_batch_divides"  # fit/evaluate on arrays: a batch size that divides.
    XLA_PREDICT_PAD = "xla_predict_pad"  # predict: pad the last batch, or one batch size.
    RECOMPILE_SAME_SIGNATURE = "recompile_same_signature"  # JAX: a new device, sharding or cache.


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The classification of one run: its kind, what changed, and why, as codes.

    `function` and `backend` name the place for the words of the reason and hint;
    `argument` is the argument a hint names (`PYTHON_VALUE_AS_TENSOR`), else None.
    """

    kind: TraceKind
    changes: tuple[Change, ...]
    reason: Reason
    hint: Hint | None
    function: str | None = None
    backend: str = "tensorflow"
    argument: str | None = None
    keras_call: KerasCall | None = None  # The Keras method of the step, for a hint's numbers.
    control_flow: str | None = None  # "tf.while_loop" or "tf.cond" whose body or branch ran it.
    objects: int | None = None  # For a new function object: how many objects its code has had.
    created: tuple[str, ...] = ()  # For a function's variable retrace: the variables lifted.
    xla_functions: tuple[str, ...] = ()  # For a compilation: the `jit_compile=True` functions run.


# Keras 2's `fit` creates the optimizer's variables (slots, iteration count) in the
# first trace of `train_function` (tf_keras, Keras 2.12-2.15; measured), so TensorFlow
# traces it twice; Keras 3 builds the optimizer before tracing.
_KERAS2_TRAIN_FUNCTION = "train_function"


_SYMBOLIC_HINTS = {None: Hint.SYMBOLIC_PASS, SymbolicPass.BUILD: Hint.DEFINE_BUILD,
                   SymbolicPass.OUTPUT: Hint.DEFINE_COMPUTE_OUTPUT_SHAPE,
                   SymbolicPass.ENCLOSING: Hint.ENCLOSING_SYMBOLIC_PASS,
                   SymbolicPass.KERAS2: Hint.KERAS2_FUNCTIONAL}


@functools.lru_cache(maxsize=256)
def verdict_of_place(context: RunContext, function: str | None, backend: str,
                     symbolic_pass: SymbolicPass | None = None) -> Verdict:
    """The verdict of an eager, symbolic or save run, which depends on where it ran only (and,
    for a symbolic run, which pass ran it); of a graph run, what its place alone says (a
    trace), when its earlier traces cannot be read."""
    if context is RunContext.GRAPH:
        return Verdict(TraceKind.TRACE, (), Reason.FIRST_TRACE, None, function, backend)
    if context is RunContext.EAGER:
        return Verdict(TraceKind.EAGER, (), Reason.EAGER, None, function, backend)
    if context is RunContext.SYMBOLIC:
        return Verdict(TraceKind.SYMBOLIC, (), Reason.SYMBOLIC, _SYMBOLIC_HINTS[symbolic_pass], function,
                       backend)
    return Verdict(TraceKind.SAVE, (), Reason.SAVE, None, function, backend)


def classify_run(
    context: RunContext,
    signature: Signature,
    function: str | None,
    in_creation_phase: bool | None,
    earlier: Sequence[EarlierTrace],
    same_origin: Sequence[EarlierTrace] = (),
    trace: Any = None,
    backend: str = "tensorflow",
    keras_step: bool = False,
    keras_call: KerasCall | None = None,
    control_flow: str | None = None,
    enclosing: EnclosingTrace | None = None,
    traced_before: bool = False,
    symbolic_pass: SymbolicPass | None = None,
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
        keras_step: Whether `function` is a step Keras's `fit`, `evaluate` or
            `predict` made.
        keras_call: The Keras method (`fit`, `predict`, ...) whose step is being
            traced and the data it got, when known.
        control_flow: `"tf.while_loop"` or `"tf.cond"` when the run is in a
            body or branch of one, traced within the enclosing function's trace.
        enclosing: What the enclosing function's trace differs in, when
            function traces are recorded: it names the cause a layer cannot see
            (a Python argument of the function, a new function object).
        traced_before: Whether the layer made a graph trace before, in any
            function.
        symbolic_pass: For a symbolic run, which of Keras's passes ran it, when
            known: the hint names what would avoid that pass.
    """
    if context is not RunContext.GRAPH:
        return verdict_of_place(context, function, backend, symbolic_pass)
    verdict = _classify_layer_run(context, signature, function, in_creation_phase, earlier, same_origin,
                                  trace, backend, keras_step, keras_call, control_flow)
    if enclosing is None or verdict.reason not in (Reason.SAME_ARGUMENTS, Reason.FIRST_TRACE,
                                                   Reason.VARIABLE_RETRACE):
        return verdict
    if verdict.reason is Reason.VARIABLE_RETRACE and (enclosing.kind != "retrace" or not enclosing.changes):
        return verdict  # The function's own trace says it is the variable retrace.
    if enclosing.kind == "new_function":
        kind = TraceKind.RETRACE if traced_before else verdict.kind
        return Verdict(kind, enclosing.changes, Reason.NEW_FUNCTION_OBJECT,
                       Hint.REUSE_MODEL if keras_step else Hint.CREATE_FUNCTION_ONCE, function, backend,
                       objects=enclosing.objects)
    if verdict.reason is not Reason.FIRST_TRACE and enclosing.changes:
        hint, argument = retrace_hint(enclosing.changes[0], {}, {}, keras_step, backend, keras_call)
        return Verdict(TraceKind.RETRACE, enclosing.changes, Reason.ENCLOSING_CHANGED, hint, function,
                       backend, argument, keras_call)
    return verdict


def _classify_layer_run(context: RunContext, signature: Signature, function: str | None,
                        in_creation_phase: bool | None, earlier: Sequence[EarlierTrace],
                        same_origin: Sequence[EarlierTrace], trace: Any, backend: str, keras_step: bool,
                        keras_call: KerasCall | None, control_flow: str | None) -> Verdict:
    if context is not RunContext.GRAPH:
        return verdict_of_place(context, function, backend)
    if trace is not None:  # Runs of the trace in progress are not earlier traces.
        if control_flow and any(same_trace(past.trace, trace) and past.signature == signature
                                for past in earlier):
            # An RNN cell in a while-loop body: the step's trace ran it once already.
            kind = _classify_layer_run(context, signature, function, in_creation_phase, earlier,
                                       same_origin, trace, backend, keras_step, keras_call, None).kind
            return Verdict(kind, (), Reason.SAME_TRACE, None, function, backend, control_flow=control_flow)
        if earlier:
            earlier = [past for past in earlier if past.trace is None or past.trace != trace]
        if same_origin:
            same_origin = [past for past in same_origin if past.trace is None or past.trace != trace]
    if not earlier and same_origin and any(past.signature == signature for past in same_origin):
        change = Change(f"tf.function `{function}`", Aspect.FUNCTION_OBJECT,
                        text=f"tf.function `{function}`: new object, same Python function")
        return Verdict(TraceKind.RETRACE, (change,), Reason.NEW_FUNCTION_OBJECT,
                       Hint.CREATE_FUNCTION_ONCE, function, backend)
    if not earlier:
        return Verdict(TraceKind.TRACE, (), Reason.FIRST_TRACE, None, function, backend,
                       control_flow=control_flow)

    same = [trace for trace in earlier if trace.signature == signature]
    if same:
        # Once per signature: after the variable retrace, a trace of it again is a plain retrace.
        if in_creation_phase is False and any(trace.in_creation_phase for trace in same) \
                and all(trace.in_creation_phase for trace in same):
            hint = _variable_retrace_hint(
                [trace.created_variables for trace in same if trace.in_creation_phase],
                function, keras_step)
            return Verdict(TraceKind.VARIABLE_RETRACE, (), Reason.VARIABLE_RETRACE, hint,
                           function, backend)
        return Verdict(TraceKind.RETRACE, (), Reason.SAME_ARGUMENTS, Hint.KEEP_OUTSIDE_VALUES_FIXED,
                       function, backend)

    closest, changes = closest_trace(earlier, signature)
    hint, argument = retrace_hint(changes[0], closest.signature, signature, keras_step, backend, keras_call)
    return Verdict(TraceKind.RETRACE, changes, Reason.SIGNATURE_CHANGED, hint, function, backend, argument,
                   keras_call)


def _variable_retrace_hint(layer_created: list[bool | None], function: str | None,
                           keras_step: bool) -> Hint:
    """The fix of a variable retrace, by whether the layer's own creating run created variables."""
    if function == _KERAS2_TRAIN_FUNCTION:
        return Hint.BUILD_OPTIMIZER_FIRST
    created = True if any(layer_created) else (False if layer_created and all(
        created is False for created in layer_created) else None)
    if keras_step:  # The user wrapped nothing: never "before wrapping it in tf.function".
        by_created: dict[bool | None, Hint] = {
            False: Hint.STEP_CREATED_OTHER_VARIABLES, True: Hint.BUILD_MODEL_FIRST}
        return by_created.get(created, Hint.STEP_CREATED_VARIABLES)
    return Hint.FUNCTION_CREATED_OTHER_VARIABLES if created is False else Hint.CREATE_VARIABLES_FIRST


def closest_trace(
    earlier: Sequence[EarlierTrace], signature: Signature
) -> tuple[EarlierTrace, tuple[Change, ...]]:
    """The earlier trace with the fewest changes to `signature` (the newest on a tie), and the changes.

    `earlier` holds no trace of this very signature. Each argument whose spec
    differs adds at least one change, so a trace whose count of differing
    arguments already reaches the best count is skipped without computing its
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


# The fix for a retrace, by the aspect of its first change, on TensorFlow then on JAX
# (`jax.jit` compiles once per input shape and dtype, and per value of a static
# argument; it has no `None` dimension). A dimension in a Keras step is its own row.
_HINT_BY_ASPECT: dict[tuple[Aspect, bool], Hint] = {
    (Aspect.DIM, False): Hint.NONE_DIMENSION,
    (Aspect.DIM, True): Hint.FIXED_SHAPES,
    (Aspect.DTYPE, False): Hint.ONE_DTYPE,
    (Aspect.DTYPE, True): Hint.ONE_DTYPE,
    (Aspect.RANK, False): Hint.ONE_RANK,
}


# A batch dimension that changed in a Keras step, by the Keras method and its data.
_BATCH_HINT_BY_CALL: dict[tuple[str, str | None], Hint] = {
    ("fit", "dataset"): Hint.PARTIAL_BATCH_DATASET,
    ("fit", "arrays"): Hint.PARTIAL_BATCH_ARRAYS,
    **{("evaluate", data): Hint.PARTIAL_BATCH_EVALUATE for data in ("dataset", "arrays", "other", None)},
    **{(method, data): Hint.PREDICT_BATCH_SIZE for method in ("predict", "predict_on_batch")
       for data in ("dataset", "arrays", "other", None)},
    **{(method, data): Hint.ONE_BATCH_SIZE for method in ("train_on_batch", "test_on_batch")
       for data in ("dataset", "arrays", "other", None)},
}


def retrace_hint(change: Change, old: Signature, new: Signature, keras_step: bool = False,
                 backend: str = "tensorflow",
                 keras_call: KerasCall | None = None) -> tuple[Hint, str | None]:
    """The fix that matches a retrace's first change, and the argument it names."""
    jax = backend == "jax"
    name = change.parameter
    if name == "training" and not jax:
        return Hint.TRAINING_VALUE, name
    if change.aspect is Aspect.DIM:
        if change.axis == 0 and keras_call is not None:
            return _BATCH_HINT_BY_CALL.get((keras_call.method, keras_call.data), Hint.PARTIAL_BATCH), name
        if change.axis == 0 and keras_step:
            return Hint.PARTIAL_BATCH, name
        if change.new is None:  # TensorFlow relaxed it (`reduce_retracing`, Keras's steps).
            return Hint.RELAXED_DIMENSION, name
        if change.axis:
            return Hint.VARYING_LENGTH, name
    hint = _HINT_BY_ASPECT.get((change.aspect, jax))
    if hint is not None:
        return hint, name
    if change.aspect is Aspect.VALUE:
        return Hint.PYTHON_VALUE_AS_TENSOR, name
    if change.aspect is Aspect.FUNCTION_OBJECT:
        return (Hint.REUSE_MODEL if keras_step else Hint.CREATE_FUNCTION_ONCE), None
    old_spec, new_spec = old.get(name), new.get(name)
    if (old_spec or new_spec or ("",))[0] == "value" and (new_spec or old_spec or ("",))[0] == "value":
        return Hint.PYTHON_VALUE_AS_TENSOR, name
    if old_spec and new_spec and old_spec[0] == new_spec[0] == "seq" and old_spec[3] != new_spec[3] \
            and not jax:
        return Hint.VARYING_COUNT, name
    return Hint.FIXED_STRUCTURE, name




# --- whole-function traces ------------------------------------------------------------------
_FUNCTION_KINDS = {"first": TraceKind.TRACE, "retrace": TraceKind.RETRACE,
                   "new_function": TraceKind.RETRACE, "variable_retrace": TraceKind.VARIABLE_RETRACE,
                   "compile": TraceKind.COMPILE}


def classify_function_trace(record: FunctionTrace, old: Signature | None, backend: str = "tensorflow",
                            keras_step: bool = False, keras_call: KerasCall | None = None) -> Verdict:
    """The verdict of one whole-function trace, from its record and the closest earlier signature.

    `old` is the signature its `changes` were computed from, or None for a first trace.
    """
    name = record.name
    if record.saving:
        return verdict_of_place(RunContext.SAVE, name, backend)
    kind = _FUNCTION_KINDS.get(record.kind, TraceKind.RETRACE)
    if record.kind == "first":
        return Verdict(kind, (), Reason.FIRST_TRACE, None, name, backend)
    if record.kind == "compile":
        return compilation_verdict(record, backend, keras_call)
    if record.kind == "variable_retrace":
        owners = {variable_owner(variable) for variable in record.lifted_variables}
        if "loss" in owners:
            hint = Hint.LOSS_CREATES_VARIABLE
        elif name == _KERAS2_TRAIN_FUNCTION:
            hint = Hint.BUILD_OPTIMIZER_FIRST
        elif keras_step:
            hint = Hint.BUILD_MODEL_FIRST if owners == {"other"} else (
                Hint.STEP_CREATED_OTHER_VARIABLES if owners and "other" not in owners
                else Hint.STEP_CREATED_VARIABLES)
        elif owners == {"optimizer"}:
            hint = Hint.OPTIMIZER_SLOTS
        elif owners == {"metric"}:
            hint = Hint.METRIC_STATE
        else:
            hint = Hint.CREATE_VARIABLES_FIRST
        return Verdict(kind, record.changes, Reason.VARIABLE_RETRACE, hint, name, backend,
                       created=record.lifted_variables)
    if record.kind == "new_function":
        hint = Hint.REUSE_MODEL if keras_step else Hint.CREATE_FUNCTION_ONCE
        return Verdict(kind, record.changes, Reason.NEW_FUNCTION_OBJECT, hint, name, backend,
                       objects=record.objects)
    if not record.changes:
        return Verdict(kind, (), Reason.SAME_ARGUMENTS, Hint.KEEP_OUTSIDE_VALUES_FIXED, name, backend)
    hint, argument = retrace_hint(record.changes[0], old or {}, record.signature, keras_step, backend,
                                  keras_call)
    return Verdict(kind, record.changes, Reason.SIGNATURE_CHANGED, hint, name, backend, argument, keras_call)


def compilation_verdict(record: FunctionTrace, backend: str, keras_call: KerasCall | None) -> Verdict:
    """The verdict of a compilation without a trace (`record.kind == "compile"`)."""
    name = record.name
    if not record.changes:
        return Verdict(TraceKind.COMPILE, (), Reason.RECOMPILE, Hint.RECOMPILE_SAME_SIGNATURE, name, backend)
    method = keras_call.method if keras_call is not None else None
    if method in ("fit", "evaluate", "train_on_batch", "test_on_batch"):
        hint = Hint.XLA_DROP_REMAINDER if keras_call is not None and keras_call.data == "dataset" \
            else Hint.XLA_BATCH_DIVIDES
    elif method in ("predict", "predict_on_batch"):
        hint = Hint.XLA_PREDICT_PAD
    else:
        hint = Hint.XLA_FIXED_SHAPES
    return Verdict(TraceKind.COMPILE, record.changes, Reason.XLA_COMPILE, hint, name, backend,
                   getattr(record.changes[0], "parameter", None), keras_call,
                   xla_functions=record.xla_functions)


__all__ = ["EarlierTrace", "Hint", "Reason", "RunContext", "SymbolicPass", "Verdict",
           "classify_function_trace", "classify_run", "compilation_verdict", "closest_trace",
           "verdict_of_place"]
