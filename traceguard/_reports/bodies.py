"""The words of a body JAX traced below `jax.jit`: a `lax.scan` body, a `lax.cond` branch, ...

A verdict of such a trace has `control_flow` (JAX's `traced_for`: `scan`,
`while_body`, ...) and `body_of` (the function that ran the control flow); the
report names it as "the scan body of `ema` (`body`)".
"""

from __future__ import annotations

from traceguard._core.changes import Aspect
from traceguard._core.verdicts import Hint, Reason, Verdict

# JAX's `debug_info.traced_for`, as a user names what was traced (jax/_src/lax/control_flow/).
_WHAT = {
    "scan": ("scan body", "lax.scan"),
    "while_body": ("while_loop body", "lax.while_loop"),
    "while_cond": ("while_loop condition", "lax.while_loop"),
    "fori_loop": ("fori_loop body", "lax.fori_loop"),
    "cond": ("cond branch", "lax.cond"),
    "switch": ("switch branch", "lax.switch"),
    "checkpoint / remat": ("checkpointed function", "jax.checkpoint"),
}


def is_body(verdict: Verdict) -> bool:
    """Whether the verdict is of a body JAX traced below `jax.jit`."""
    return verdict.of_function and verdict.body_of is not None


def body_name(verdict: Verdict) -> str:
    """"the scan body of `ema` (`body`)"."""
    what = _WHAT.get(verdict.control_flow or "", (f"function JAX traced for {verdict.control_flow}", ""))[0]
    if verdict.body_of in (None, "<module>"):
        return f"the {what} `{verdict.function}`"
    return f"the {what} of `{verdict.body_of}` (`{verdict.function}`)"


def _api(verdict: Verdict) -> str:
    return _WHAT.get(verdict.control_flow or "", ("", "the control flow"))[1] or "the control flow"


def body_reason(verdict: Verdict) -> str:
    """One sentence: why the body traced."""
    name = body_name(verdict)
    subject = name[0].upper() + name[1:]
    reason = verdict.reason
    if reason is Reason.FIRST_TRACE:
        return f"First trace of {name} for this signature: JAX ran the Python body to build a jaxpr."
    if reason is Reason.PART_OF_TRACE:
        return (f"{subject} was traced as part of the trace that runs it: JAX traces a body each time "
                "the function around it traces, so this is no retrace of its own.")
    if reason is Reason.NEW_FUNCTION_OBJECT:
        return (f"{subject} is a new function object (#{verdict.objects} so far) from the same code: "
                f"run outside `jax.jit`, `{_api(verdict)}` keeps its traces per body object, and a body "
                "defined inside the function that runs it is a new object at every call, so JAX traces "
                "it and compiles the loop at every call.")
    changes = "; ".join(map(str, verdict.changes))
    if reason is Reason.SIGNATURE_CHANGED:
        return f"{subject} traced again because its arguments changed: {changes}."
    return (f"{subject} traced again with the arguments of an earlier trace: something outside its "
            "arguments changed (a captured Python value, the tracing context).")


def body_hint(verdict: Verdict) -> str | None:
    """How to avoid the body's trace; None for a hint that is not the body's own."""
    if verdict.hint is Hint.DEFINE_BODY_ONCE and verdict.reason is Reason.FIRST_TRACE:  # A lambda.
        return (f"`{verdict.function}` is written in the call to `{_api(verdict)}`: a new function "
                f"object each time that line runs, and run outside `jax.jit`, `{_api(verdict)}` keeps its "
                "traces per function object, so JAX traces it and compiles the loop again at every run. "
                "Define it once (a `def` outside the function or loop that runs it) and pass "
                "the same function object each call; or `jax.jit` the code that runs the loop.")
    if verdict.hint is Hint.DEFINE_BODY_ONCE:
        caller = verdict.body_of if verdict.body_of not in (None, "<module>") else "the caller"
        caller = f"`{caller}`" if caller != "the caller" else caller
        return (f"Define the body once, at module level (not inside {caller}), and pass what it reads "
                f"through the carry or the scanned inputs; or `jax.jit` {caller} once, so that the body "
                f"is traced only when {caller} itself traces.")
    if verdict.hint is Hint.WEAK_CARRY:
        dtype = _new_dtype(verdict) or "float32"
        return (f"The initial carry `{verdict.argument}` is weakly typed (a Python scalar such as `0` or "
                f"`0.0`), and the body returns a typed {dtype}: JAX promoted the carry to it and traced "
                f"the body a second time. Pass a typed initial carry, e.g. `jnp.{dtype}(0)` or "
                f"`jnp.zeros((), jnp.{dtype})`.")
    return None


def _new_dtype(verdict: Verdict) -> str | None:
    for change in verdict.changes:
        if str(change.argument) != verdict.argument:
            continue
        if change.aspect is Aspect.DTYPE and isinstance(change.new, str):
            return change.new
        dtype = getattr(change.new, "dtype", None)
        if isinstance(dtype, str):
            return dtype
    return None


__all__ = ["body_hint", "body_name", "body_reason", "is_body"]
