"""The words of a `no_retrace` failure: what traced, where, what changed, why, the fix."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from traceguard._core.changes import Change
from traceguard._core.signature import Signature
from traceguard._core.specs import Site
from traceguard._core.verdicts import Reason

_WIDTH = 100

# What a trace's reason says in a failure's first line; any other, "retraced".
_TRACED = {
    Reason.FIRST_TRACE: "traced for the first time",
    Reason.NEW_FUNCTION_OBJECT: "traced again, as a new function object from the same code,",
    Reason.VARIABLE_RETRACE: "traced again after its first trace created variables",
    Reason.XLA_COMPILE: "compiled again without a retrace (XLA, for new input shapes)",
    Reason.RECOMPILE: "compiled again without a retrace",
}


def unrecorded_retrace_reason(origin: str, name: str, traces: int) -> str:
    """The `why` of a retrace whose function traced before traceguard recorded it."""
    times = "once" if traces == 1 else f"{traces} times"
    return (f"The {origin} `{name}` traced again for a signature its cache did not hold; it had traced "
            f"{times} before traceguard recorded it, so its first trace seen here is a retrace.")


def format_guard_failure(subject: str, why: Reason | None, where: str, *,
                         signature: Signature, changes: Sequence[Change], reason: str,
                         hint: str | None, call_site: Site | None, layers: Sequence[str] = (),
                         baseline_recorded: bool = True) -> str:
    """The text of a `RetraceError` (or warning) from a `no_retrace` block or `TraceMonitor`.

    `subject` reads "`train_step`" or "Layer 'dense'"; `why` is the trace's `Reason` (None:
    a retrace); `where` ends the first line
    ("inside the `traceguard.no_retrace()` block"); `layers` are the layers that
    traced inside the function's trace, already worded ("'dense' (retrace)").
    """
    traced = _TRACED.get(why, "retraced") if why is not None else "retraced"
    lines = [f"{subject} {traced} {where}."]

    def add(label: str, text: str) -> None:
        lines.extend(textwrap.wrap(text, _WIDTH, initial_indent=f"   {label}: ",
                                   subsequent_indent=" " * (len(label) + 5)))

    if call_site:
        add("called at", str(call_site))
    add("signature", ", ".join(f"{arg}={spec}" for arg, spec in signature.items()) or "-")
    if changes:
        add("changed", "; ".join(map(str, changes)))
    elif why in (None, Reason.FIRST_TRACE, Reason.SIGNATURE_CHANGED, Reason.SAME_ARGUMENTS) \
            and not baseline_recorded:
        add("changed", "unknown: traceguard did not record the function's earlier traces, so it knows "
                       "no earlier signature to compare with. Run the warm-up inside "
                       "`traceguard.watch()` to see what changed.")
    add("why", reason)
    if hint:
        add("fix", hint)
    if layers:
        add("layers traced in it", ", ".join(layers))
    return "\n".join(lines)
