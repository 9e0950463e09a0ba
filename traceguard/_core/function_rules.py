"""Why did a whole function trace? The verdict of one `FunctionTrace`, from its record alone."""

from __future__ import annotations

import dataclasses

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect
from traceguard._core.classify import verdict_of_place
from traceguard._core.functions import FunctionTrace
from traceguard._core.hints import (
    body_retrace_hint,
    function_variable_retrace_hint,
    new_object_hint,
    requested,
    retrace_hint,
)
from traceguard._core.keras_names import KerasCall, variable_owner
from traceguard._core.kinds import MISS_KINDS, TraceKind
from traceguard._core.signature import Signature
from traceguard._core.verdicts import Hint, Reason, RunContext, Verdict

# The misses no fix removes: the state metrics create in the first trace (the variable
# retrace it makes is paid once, whatever the user does), a trace asked for.
EXPECTED_HINTS = frozenset({Hint.METRIC_STATE, Hint.REQUESTED_TRACE, Hint.KERAS2_FUNCTIONAL,
                            Hint.MODE_FLAG,  # torch: one compile per value of a bool flag,
                            Hint.GLOBAL_MODE})  # or of the global grad mode.


def is_avoidable(kind: TraceKind, hint: Hint | None, reason: Reason | None = None) -> bool:
    """Whether a fix removes a function's miss: a retrace or a compilation (`MISS_KINDS`), or the
    first trace of a function object made anew from code that traced before, whose hint is a fix.
    A first trace, a save and a one-time cost are what every program pays."""
    made_anew = kind is TraceKind.TRACE and reason is Reason.NEW_FUNCTION_OBJECT
    return (kind in MISS_KINDS or (made_anew and hint is not None)) and hint not in EXPECTED_HINTS


def classify_function_trace(record: FunctionTrace, old: Signature | None,
                            backend: Backend = Backend.TENSORFLOW, keras_step: bool = False,
                            keras_call: KerasCall | None = None) -> Verdict:
    """The verdict of one whole-function trace, from its record and the closest earlier signature.

    `old` is the signature its `changes` were computed from, or None for a first trace.
    """
    verdict = _classify(record, old, backend, keras_step, keras_call)
    if record.graph_breaks or record.resumed_after is not None:  # torch: the words name the breaks.
        verdict = dataclasses.replace(verdict, resumed_after=record.resumed_after,
                                      graph_breaks=record.graph_breaks)
    if record.traced_for is None:
        return verdict
    # A body JAX traced below `jax.jit`: the words name what for, and whose body it is.
    return dataclasses.replace(verdict, control_flow=record.traced_for, body_of=record.body_of)


def _classify(record: FunctionTrace, old: Signature | None, backend: Backend, keras_step: bool,
              keras_call: KerasCall | None) -> Verdict:
    name = record.name
    if record.saving:
        return verdict_of_place(RunContext.SAVE, name, backend)
    reason = record.reason
    data = keras_call.data if keras_call is not None else record.data
    if record.kind is TraceKind.COMPILE:
        return compilation_verdict(record, backend, keras_call)
    if reason is Reason.FIRST_TRACE:
        hint = Hint.DEFINE_BODY_ONCE if is_lambda_in_its_call(record) else None
        return Verdict(record.kind, (), reason, hint, name, backend, of_function=True)
    if reason is Reason.PART_OF_TRACE:
        return Verdict(record.kind, record.changes, reason, None, name, backend, of_function=True)
    if reason is Reason.VARIABLE_RETRACE:
        owners = {variable_owner(variable) for variable in record.lifted_variables}
        hint = function_variable_retrace_hint(owners, name, keras_step)
        return Verdict(record.kind, record.changes, reason, hint, name, backend,
                       created=record.lifted_variables, optimizers=record.optimizer_builds, of_function=True)
    if reason is Reason.NEW_FUNCTION_OBJECT:
        hint = Hint.DEFINE_BODY_ONCE if record.traced_for is not None \
            else new_object_hint(keras_step, record.same_model, record.library_function)
        return Verdict(record.kind, record.changes, reason, hint, name, backend, keras_call=keras_call,
                       objects=record.objects, of_function=True)
    if record.requested or requested(record.entry):  # Asked for this signature: no call missed.
        reason = Reason.SIGNATURE_CHANGED if record.changes else Reason.SAME_ARGUMENTS
        return Verdict(record.kind, record.changes, reason, Hint.REQUESTED_TRACE, name, backend,
                       of_function=True)
    if record.restored:  # Its signatures were fixed when it was saved: the fix is in the saving.
        reason = Reason.SIGNATURE_CHANGED if record.changes else Reason.SAME_ARGUMENTS
        argument = record.changes[0].parameter if record.changes else None
        return Verdict(record.kind, record.changes, reason, Hint.RESTORED_FUNCTION, name, backend, argument,
                       of_function=True)
    if not record.changes:
        return Verdict(TraceKind.RETRACE, (), Reason.SAME_ARGUMENTS, Hint.KEEP_OUTSIDE_VALUES_FIXED, name,
                       backend, of_function=True)
    carry = body_retrace_hint(record.changes, old or {}) if record.traced_for is not None else None
    hint, argument = carry or retrace_hint(record.changes[0], old or {}, record.signature, keras_step,
                                           backend, keras_call, record.relaxed)
    relaxed = record.relaxed_signature or {}
    return Verdict(record.kind, record.changes, Reason.SIGNATURE_CHANGED, hint, name, backend, argument,
                   keras_call, data=data, relaxed_to=relaxed.get(record.changes[0].parameter),
                   of_function=True)


def is_lambda_in_its_call(record: FunctionTrace) -> bool:
    """Whether an eager control-flow body is a `lambda` written in the statement that runs the loop.

    Outside `jax.jit`, JAX keys a loop's body and condition by the function object (its explanation:
    "never seen function: <lambda>"), and a `lambda` is a new object each time its line runs, so
    each run of that line traces it and compiles the loop again (jax-ml/jax#587, #1394).
    """
    return (record.traced_for is not None and record.parent is None and record.name == "<lambda>"
            and record.definition is not None and record.definition == record.call_site)


def compilation_verdict(record: FunctionTrace, backend: Backend, keras_call: KerasCall | None) -> Verdict:
    """The verdict of a compilation without a trace (`record.kind` is `TraceKind.COMPILE`)."""
    name = record.name
    if all(change.aspect is Aspect.SHARDING for change in record.changes):  # JAX: the same trace.
        return Verdict(TraceKind.COMPILE, record.changes, Reason.RECOMPILE, Hint.RECOMPILE_SAME_SIGNATURE,
                       name, backend, of_function=True)
    method = keras_call.method if keras_call is not None else None
    if method in ("fit", "evaluate", "train_on_batch", "test_on_batch"):
        hint = Hint.XLA_DROP_REMAINDER if keras_call is not None and keras_call.data == "dataset" \
            else Hint.XLA_BATCH_DIVIDES
    elif method in ("predict", "predict_on_batch"):
        hint = Hint.XLA_PREDICT_PAD
    else:
        hint = Hint.XLA_FIXED_SHAPES
    return Verdict(TraceKind.COMPILE, record.changes, Reason.XLA_COMPILE, hint, name, backend,
                   record.changes[0].parameter, keras_call, xla_functions=record.xla_functions,
                   of_function=True)


__all__ = ["classify_function_trace", "compilation_verdict", "is_lambda_in_its_call"]
