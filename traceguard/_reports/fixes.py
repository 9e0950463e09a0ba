"""The words and code of fix-its, their checks, and of retraces that changed nothing."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.fixes import ArgumentSpec, FixCheck, FixIt
from traceguard._core.function_runs import FunctionEvent
from traceguard._core.signature import diff_signatures

_WIDTH = 100
_FIX_NAMES = {"input_signature": "this input_signature", "reduce_retracing": "reduce_retracing=True",
              "tensor_argument": "these arguments as tensors"}


def _tensor_spec(argument: ArgumentSpec) -> str:
    shape = "None" if argument.dims is None else \
        "[" + ", ".join("None" if dim is None else str(dim) for dim in argument.dims) + "]"
    return f"tf.TensorSpec(shape={shape}, dtype=tf.{argument.dtype})"


def _subject(fix: FixIt) -> str:
    return f"`tf.function` of the {fix.wrapped_object}" if fix.wrapped_object else f"`{fix.function}`"


def format_fix(fix: FixIt) -> str:
    """A fix-it (`FixIt`) as a sentence and the code to paste."""
    where = ""
    if fix.definition:
        where = f" (defined at {os.path.basename(fix.definition.path)}:{fix.definition.line})"
    lines = [f"Fix-it for {_subject(fix)}{where}, {fix.traces} traces of {len(fix.signatures)} signatures:"]
    # A function gets a decorator; a callable object (a layer) is wrapped where it is made.
    opening = "  tf.function(layer, " if fix.wrapped_object else "  @tf.function("
    if fix.kind == "input_signature":
        lines += [f"{opening}input_signature=["]
        lines += [f"      {_tensor_spec(argument)},  # {argument.name}" for argument in fix.arguments]
        lines += ["  ])"]
    elif fix.reduce_retracing:
        lines += [f"{opening}reduce_retracing=True)"]
    if fix.kind != "tensor_argument" or fix.reduce_retracing:
        lines[-1] += f"  # layer: the {fix.wrapped_object}" if fix.wrapped_object else ""
        if not fix.wrapped_object:
            lines.append(f"  def {fix.function}(...): ...")
    for name in fix.to_tensors:
        example = fix.examples.get(name)
        dtype = "" if fix.tensor_dtype == ("float32" if type(example) is float else "int32") \
            else f", dtype=tf.{fix.tensor_dtype}"
        lines.append(_wrap(f"and pass `{name}` as a tensor, not a Python number: "
                           f"`tf.constant({example!r}{dtype})` where you passed `{example!r}` "
                           "(or a tensor you already have)", "  ", "  "))
    if fix.kind == "reduce_retracing":
        lines.append("  (an input_signature cannot be written: not every argument is a tensor)")
    return "\n".join(lines)


def format_fix_check(check: FixCheck) -> str:
    """What replaying a fix-it did: the signatures replayed and the traces before -> after."""
    fix = check.fix
    if check.before is None or check.after is None:
        return f"{_subject(fix)}: not verified: {check.problem}."
    numbers = (f" (`{'`, `'.join(fix.to_tensors)}` as {fix.tensor_dtype} `tf.constant`s of the "
               "recorded value)") if fix.to_tensors else ""
    text = (f"{_subject(fix)}: {check.before} traces -> {check.after} with {_FIX_NAMES[fix.kind]}; "
            f"replayed the {check.replayed} recorded signatures as zero tensors of their specs{numbers} "
            "against two new copies of the function (as written, and fixed); side effects in its "
            "body ran during the replay.")
    if check.problem:
        text += f" Not conclusive: {check.problem}."
    elif check.after >= check.before:
        text += " The fix did not reduce the traces."
    return text


def format_fixes(fixes: Sequence[FixIt]) -> str:
    """The fix-its section of a report; empty when there are none."""
    if not fixes:
        return ""
    return "\n\n".join([f"Fix-its ({len(fixes)}; check them with explanation.verify_fixes() or "
                        "`run --verify-fixes`):", *(format_fix(fix) for fix in fixes)])


def format_fix_checks(checks: Sequence[FixCheck]) -> str:
    """The verified fix-its section: each fix and its check."""
    if not checks:
        return "Fix-its: none (no tf.function retraced in a way a fix-it covers)."
    parts = [f"Fix-its, verified by replay ({len(checks)}):"]
    parts += [f"{format_fix(check.fix)}\n{_wrap(format_fix_check(check), '  check: ', '         ')}"
              for check in checks]
    return "\n\n".join(parts)


def _wrap(text: str, first: str, rest: str) -> str:
    return textwrap.fill(text, _WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def backend_of(event: FunctionEvent) -> Backend | None:
    """The backend that traced `event` (its verdict's), or None when it has no verdict."""
    return None if event.verdict is None else event.verdict.backend


def same_graph_changes(event: FunctionEvent, events: Sequence[FunctionEvent] | None) -> Sequence[Change]:
    """What differs between a retrace and the earlier trace that built its graph (in `events`,
    the function's traces); its own changes, from its closest signature, if that one is not there."""
    earlier = next((other for other in events or () if other.serial == event.same_graph_as), None)
    changes = diff_signatures(earlier.signature, event.signature) if earlier is not None else ()
    return changes or event.changes


def same_graph_text(changes: Sequence[Change], earlier: str, backend: Backend | None = None) -> str:
    """Why a retrace that built the same graph as an earlier trace was waste, and what to relax:
    what the backend can relax (`jax.jit` has no `None` dimension: a shape is relaxed by padding)."""
    relax = []
    jax = backend == Backend.JAX
    for change in changes:
        aspect = getattr(change, "aspect", None)
        if aspect is Aspect.DIM:
            relax.append(f"`{change.argument}` dim {change.axis} (pad it to one length: `jax.jit` has no "
                         "`None` dimension)" if jax else
                         f"`{change.argument}` dim {change.axis} (`None` in an input_signature)")
        elif aspect is Aspect.RANK:
            relax.append(f"`{change.argument}`'s rank (one rank for every call)" if jax else
                         f"`{change.argument}`'s rank (`shape=None` in an input_signature)")
        elif aspect is Aspect.CALL_STRUCTURE:
            relax.append(f"how `{change.argument}` is passed (the same way at every call)")
        elif aspect is Aspect.STATIC_FIELD:
            relax.append(f"`{change.argument}` (the graph does not use it: make it a data field)")
        elif aspect is Aspect.SHARDING:
            relax.append(f"`{change.argument}`'s sharding (one sharding for every call)")
        elif aspect is Aspect.VALUE:
            relax.append(f"`{change.argument}` (the graph does not use it: remove it from the arguments)")
        elif aspect is Aspect.IDENTITY:
            relax.append(f"`{change.argument}` (compared by identity: objects that compared equal would "
                         "share one trace)")
        elif aspect is Aspect.WEAK_TYPE:
            relax.append(f"`{change.argument}`'s weak type (pass it typed every time)")
        elif aspect is Aspect.CONTEXT:
            relax.append(f"`{change.argument}` (the graph is the same in both contexts: call it from one)")
        else:
            relax.append(str(change))
    if not relax:  # No argument differs: what made it trace again is outside them.
        return f"the same graph as {earlier} (same ops, wiring and constants): this retrace was pure waste."
    return (f"the same graph as {earlier} (same ops, wiring and constants; only shapes or unused values "
            "differ): this retrace was pure waste. Safe to relax: " + "; ".join(relax) + ".")
