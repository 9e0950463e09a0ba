"""Why did a layer's body run? A pure function of one `Observation` of the run.

`classify_run` knows nothing of TensorFlow: the recorder hands it what it saw around
the run (eager? symbolic? saving? which function, in which phase? the layer's
earlier traces of it?) as one value, and gets back a `Verdict` of codes: the kind,
what changed, the reason and the hint. That keeps every rule here unit-testable
without a backend.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.hints import layer_variable_retrace_hint, new_object_hint, retrace_hint
from traceguard._core.keras_names import KerasCall
from traceguard._core.kinds import TraceKind
from traceguard._core.signature import Signature, diff_signatures
from traceguard._core.specs import ArgumentPath
from traceguard._core.verdicts import (
    EarlierTrace,
    EnclosingTrace,
    Hint,
    Reason,
    RunContext,
    SymbolicPass,
    Verdict,
)


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the recorder saw around one body run: everything `classify_run` decides from.

    Attributes:
        context: Where the body ran.
        signature: The run's argument specs.
        function: The enclosing function's name, if any.
        in_creation_phase: True for a trace by tf.function's first,
            variable-creating configuration; False once an earlier trace created
            variables; None when unknown.
        earlier: The layer's earlier traces of the same function, oldest first.
        same_origin: When `earlier` is empty, the layer's earlier traces by
            other function objects wrapping the same Python function.
        trace: A token identifying the trace in progress, or None when unknown.
        backend: `"tensorflow"` or `"jax"`: it names the tracer in the words.
        keras_step: Whether `function` is a step Keras's `fit`, `evaluate` or
            `predict` made.
        keras_call: The Keras method whose step is traced and its data, if known.
        control_flow: `"tf.while_loop"` or `"tf.cond"` when the run is in a body
            or branch of one, traced within the enclosing function's trace.
        enclosing: What the enclosing function's trace differs in, when function
            traces are recorded: the cause a layer cannot see (a Python argument
            of the function, a new function object).
        symbolic_pass: For a symbolic run, which of Keras's passes ran it, if known.
    """

    context: RunContext
    signature: Signature
    function: str | None = None
    in_creation_phase: bool | None = None
    earlier: Sequence[EarlierTrace] = ()
    same_origin: Sequence[EarlierTrace] = ()
    trace: Any = None
    backend: Backend = Backend.TENSORFLOW
    keras_step: bool = False
    keras_call: KerasCall | None = None
    control_flow: str | None = None
    enclosing: EnclosingTrace | None = None
    symbolic_pass: SymbolicPass | None = None


_SYMBOLIC_HINTS = {None: Hint.SYMBOLIC_PASS, SymbolicPass.BUILD: Hint.DEFINE_BUILD,
                   SymbolicPass.OUTPUT: Hint.DEFINE_COMPUTE_OUTPUT_SHAPE,
                   SymbolicPass.ENCLOSING: Hint.ENCLOSING_SYMBOLIC_PASS,
                   SymbolicPass.KERAS2: Hint.KERAS2_FUNCTIONAL}


@functools.lru_cache(maxsize=256)
def verdict_of_place(context: RunContext, function: str | None, backend: Backend,
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


def classify_run(seen: Observation) -> Verdict:
    """Classifies one body run.

    Runs that belong to the same trace (each replica's run under
    `MirroredStrategy`, or a layer called twice in one function) are classified
    against the earlier traces only, so they share that trace's kind. A run inside
    a function trace that the function's own record explains (a new function
    object, a changed Python argument of the function) takes that explanation.
    """
    if seen.context is not RunContext.GRAPH:
        return verdict_of_place(seen.context, seen.function, seen.backend, seen.symbolic_pass)
    verdict = _classify_layer_run(seen, seen.control_flow)
    enclosing = seen.enclosing
    if enclosing is None or verdict.reason not in (Reason.SAME_ARGUMENTS, Reason.FIRST_TRACE,
                                                   Reason.VARIABLE_RETRACE):
        return verdict
    if verdict.reason is Reason.VARIABLE_RETRACE and (
            enclosing.reason is not Reason.SIGNATURE_CHANGED or not enclosing.changes):
        return verdict  # The function's own trace says it is the variable retrace.
    if enclosing.reason is Reason.NEW_FUNCTION_OBJECT:
        # One kind per situation: the function's own trace is the first trace of a new object (its
        # cache was empty, whatever its code did before), and so is every layer run in it.
        return Verdict(TraceKind.TRACE, enclosing.changes, Reason.NEW_FUNCTION_OBJECT,
                       new_object_hint(seen.keras_step, enclosing.same_model), seen.function,
                       seen.backend, keras_call=seen.keras_call, objects=enclosing.objects)
    if verdict.reason is not Reason.FIRST_TRACE and enclosing.changes:
        hint, argument = retrace_hint(enclosing.changes[0], {}, {}, seen.keras_step, seen.backend,
                                      seen.keras_call)
        return Verdict(TraceKind.RETRACE, enclosing.changes, Reason.ENCLOSING_CHANGED, hint, seen.function,
                       seen.backend, argument, seen.keras_call)
    return verdict


def _classify_layer_run(seen: Observation, control_flow: str | None) -> Verdict:
    signature, function, backend, trace = seen.signature, seen.function, seen.backend, seen.trace
    earlier, same_origin = seen.earlier, seen.same_origin
    if trace is not None:  # Runs of the trace in progress are not earlier traces.
        if control_flow and any(past.trace is not None and past.trace == trace and past.signature == signature
                                for past in earlier):
            # An RNN cell in a while-loop body: the step's trace ran it once already.
            kind = _classify_layer_run(seen, None).kind
            return Verdict(kind, (), Reason.SAME_TRACE, None, function, backend, control_flow=control_flow)
        if earlier:
            earlier = [past for past in earlier if past.trace is None or past.trace != trace]
        if same_origin:
            same_origin = [past for past in same_origin if past.trace is None or past.trace != trace]
    if not earlier and same_origin and any(past.signature == signature for past in same_origin):
        # A new function object's first trace, of a signature another object of its code traced.
        change = Change(ArgumentPath(f"tf.function `{function}`"), Aspect.FUNCTION_OBJECT)
        return Verdict(TraceKind.TRACE, (change,), Reason.NEW_FUNCTION_OBJECT,
                       Hint.CREATE_FUNCTION_ONCE, function, backend)
    if not earlier:
        return Verdict(TraceKind.TRACE, (), Reason.FIRST_TRACE, None, function, backend,
                       control_flow=control_flow)

    same = [past for past in earlier if past.signature == signature]
    if same:
        # Once per signature: after the variable retrace, a trace of it again is a plain retrace.
        if seen.in_creation_phase is False and all(past.in_creation_phase for past in same):
            hint = layer_variable_retrace_hint([past.created_variables for past in same], function,
                                               seen.keras_step)
            return Verdict(TraceKind.VARIABLE_RETRACE, (), Reason.VARIABLE_RETRACE, hint, function, backend)
        return Verdict(TraceKind.RETRACE, (), Reason.SAME_ARGUMENTS, Hint.KEEP_OUTSIDE_VALUES_FIXED,
                       function, backend)

    closest, changes = closest_trace(earlier, signature)
    hint, argument = retrace_hint(changes[0], closest.signature, signature, seen.keras_step, backend,
                                  seen.keras_call)
    return Verdict(TraceKind.RETRACE, changes, Reason.SIGNATURE_CHANGED, hint, function, backend, argument,
                   seen.keras_call)


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
    for past in newest_first:
        if len(best_changes) <= 1:
            break  # No earlier trace has this very signature: none can do better.
        old = past.signature
        differing = sum(old.get(name) != spec for name, spec in signature.items())
        differing += sum(name not in signature for name in old)
        if differing < len(best_changes):
            changes = diff_signatures(old, signature)
            if len(changes) < len(best_changes):
                best, best_changes = past, changes
    return best, tuple(best_changes)


__all__ = ["Observation", "classify_run", "closest_trace", "verdict_of_place"]
