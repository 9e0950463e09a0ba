"""The words of a `torch.compile` compile and recompile, and of their fixes.

A Dynamo frame compile is recorded as a function trace (`_compat/torch`); its changes
are torch's own guard failure in the user's terms. Measured with torch 2.14.1: with
`torch._dynamo.config.automatic_dynamic_shapes` (the default), a second size of a
dimension recompiles the frame with that dimension dynamic, and a second value of a
Python int with the int dynamic: later sizes and values reuse that compile.
"""

from __future__ import annotations

import re

from traceguard._core.changes import Aspect
from traceguard._core.functions import FunctionTrace
from traceguard._core.verdicts import Hint, Reason, Verdict

# A reason's compile id ("0/1: "), as Dynamo prefixes it.
_COMPILE_ID = re.compile(r"^\s*\d+/\d+:\s*")


def torch_reason(verdict: Verdict) -> str | None:
    """Why torch compiled, or None to take the general sentence."""
    name = f"`{verdict.function}`" if verdict.function else "the frame"
    if verdict.reason is Reason.FIRST_TRACE and verdict.of_function:
        return (f"First compile of {name} by torch.compile: Dynamo traced its Python body into a graph "
                "and the backend compiled it.")
    if verdict.reason is Reason.SIGNATURE_CHANGED and verdict.of_function:
        return (f"torch.compile recompiled {name}: a guard of its earlier compile failed: "
                f"{'; '.join(map(str, verdict.changes))}.")
    return None


# The words of each torch fix that names only the argument (`{argument}`).
_WORDS = {
    Hint.DYNAMIC_VALUE: (
        "`{argument}` is a Python number torch.compile specialised the graph on; this recompile "
        "made it dynamic (automatic dynamic shapes: the new compile passes other values), so later "
        "values reuse it. To compile once, pass it as a tensor (`torch.tensor({argument})`) or "
        "use `torch.compile(..., dynamic=True)`."
    ),
    Hint.SPECIALISED_VALUE: (
        "torch.compile keeps `{argument}` guarded by its exact value: the Python code needs the "
        "concrete number (a Python loop bound such as `range(...)`, which Dynamo unrolls, an `if` "
        "on it, a shape), so automatic dynamic shapes cannot make it symbolic and every new value "
        "compiles again, whatever `dynamic` is set to. Write that part as tensor ops (a "
        "`torch.cumsum` over a slice instead of the Python loop, `torch.where` instead of the `if`), "
        "or keep the value to a few values."
    ),
    Hint.MODE_FLAG: (
        "Expected, once per value: torch.compile guards the bool `{argument}` (a mode flag such "
        "as `module.training`, switched by `train()`/`eval()`) by its value and keeps the compile "
        "of each mode, so switching back reuses it. Nothing to fix; a bool cannot be made dynamic."
    ),
    Hint.PYTHON_VALUE_AS_TENSOR: (
        "`{argument}` is a Python value torch.compile specialised the graph on: a new value "
        "recompiles (torch makes a number dynamic only where it can stay symbolic, so a value read "
        "by Python code recompiles every time). Pass it as a tensor (`torch.tensor({argument})`)."
    ),
    Hint.STATIC_ATTRIBUTE: (
        "`{argument}` is an int torch.compile reads from an attribute or a global, not from an "
        "argument: torch guards such an int by its exact value on every compile (automatic dynamic "
        "shapes do not reach it, whatever `dynamic` is set to), so each new value compiles again, up to the "
        "recompile limit. For an nn.Module's int attribute (a step counter), set "
        "`torch._dynamo.config.allow_unspec_int_on_nn_module = True` (one more compile, then it "
        "stays dynamic); or keep the value in a tensor (a buffer updated in place), or pass it as "
        "an argument."
    ),
    Hint.STRING_VALUE: (
        "`{argument}` is a Python string: torch.compile guards it by its value and never makes a "
        "string dynamic, so each new text compiles again, whatever `dynamic` is set to. Do the "
        "string work (tokenizing) outside the compiled function and compile what runs on the "
        "resulting tensor, whose length can be dynamic."
    ),
    Hint.INFERENCE_TENSOR: (
        "`{argument}` was made under `torch.inference_mode()` at one call and not at the other: "
        "torch.compile's tensor guard checks the dispatch keys, and an inference tensor has no "
        "autograd keys, so each kind compiles once (both kept). Create the inputs one way: all "
        "outside inference mode, or under `torch.no_grad()`, which makes normal tensors."
    ),
    Hint.REQUIRES_GRAD: (
        "`{argument}` changed `requires_grad` (a module's output requires grad, a fresh tensor "
        "does not): torch.compile guards it per tensor and compiles once for each, and later calls "
        "reuse both. For inference, run under `torch.no_grad()` (or pass "
        "`{argument}.detach()`), so no input requires grad."
    ),
    Hint.OBJECT_IDENTITY: (
        "Dynamo guards `{argument}` by identity: a new object (a new model or layer) fails the "
        "guard and recompiles. Build the object once and reuse it."
    ),
    Hint.TRACING_CONTEXT: (
        "A guard torch.compile put on a value outside the arguments (a global, an attribute, a "
        "config) failed: keep that value fixed between calls, or read it as a tensor argument."
    ),
}


def torch_hint(verdict: Verdict) -> str | None:
    """The fix of a recompile, or None to take the general one."""
    argument = verdict.argument
    if verdict.hint is Hint.DYNAMIC_DIMENSION:
        change = next((c for c in verdict.changes if c.aspect is Aspect.DIM), None)
        axis = change.axis if change is not None else 0
        if change is not None and change.old in (0, 1):
            return _size_one_words(argument, axis, change.old)
        return (f"Dimension {axis} of `{argument}` varies. torch recompiles for its second size with "
                "that dimension dynamic (automatic dynamic shapes), so later sizes reuse it; to compile "
                f"once, mark it dynamic before the first call (`torch._dynamo.mark_dynamic({argument}, "
                f"{axis})`) or use `torch.compile(..., dynamic=True)`.")
    if verdict.hint is Hint.MODE_FLAG and any(c.aspect is Aspect.CONTEXT for c in verdict.changes):
        return (f"Expected, once per value: torch.compile guards the global `{argument}` (set by "
                "`torch.no_grad()`, `torch.inference_mode()`, `torch.enable_grad()`) and keeps the compile "
                "made under each value, so switching back reuses it. Nothing to fix; to compile once, "
                "call it under one mode.")
    words = _WORDS.get(verdict.hint)  # type: ignore[arg-type]
    return words.format(argument=argument) if words is not None else None


def torch_details(record: FunctionTrace) -> str:
    """What torch itself said of a compile, after traceguard's sentence: the guard that failed, in
    torch's words (the first line, without its compile id and source comment), and the graph
    breaks in it with where each happened. `""` for other backends' records."""
    parts = []
    if record.backend_reasons:
        line = _COMPILE_ID.sub("", record.backend_reasons[0].strip().splitlines()[0]).split("  #", 1)[0]
        parts.append(f"torch's guard failure: `{line.strip()}`.")
    for what, where in record.graph_breaks:
        whose = " (Keras's code)" if "/keras/" in where.path.replace("\\", "/") else ""
        parts.append(f"Graph break: {what} at {where.path.rsplit('/', 1)[-1]}:{where.line}{whose}; "
                     "the code after it compiles as a frame of its own.")
    return " ".join(parts)


def _size_one_words(argument: str | None, axis: int | None, size: int) -> str:
    """A first size of 0 or 1: torch specialises those sizes always (measured with torch 2.14.1:
    batches 1, 2, 3 compile twice by default, with `dynamic=True` and with `mark_dynamic`; once
    with `mark_unbacked`)."""
    return (f"Dimension {axis} of `{argument}` was {size} at the earlier compile: torch always specialises "
            "sizes 0 and 1 (0/1 specialisation), whatever `dynamic` is set to and with `mark_dynamic` "
            "too, so the next size recompiles; that compile made the dimension dynamic from 2 up, and size "
            f"{size} keeps its own. To compile once, mark it unbacked before the first call "
            f"(`torch._dynamo.decorators.mark_unbacked({argument}, {axis})`), or make the first call "
            f"with a size above 1.")

