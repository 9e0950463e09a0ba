"""The words of a `torch.compile` compile and recompile, and of their fixes.

A Dynamo frame compile is recorded as a function trace (`_compat/torch`); its changes
are torch's own guard failure in the user's terms. Measured with torch 2.14.1: with
`torch._dynamo.config.automatic_dynamic_shapes` (the default), a second size of a
dimension recompiles the frame with that dimension dynamic, and a second value of a
Python int with the int dynamic: later sizes and values reuse that compile.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from traceguard._core.changes import Aspect
from traceguard._core.function_runs import FunctionRuns
from traceguard._core.functions import FunctionTrace
from traceguard._core.specs import Site
from traceguard._core.verdicts import Hint, Reason, Verdict
from traceguard._reports.torch_guard_words import guarded_value_hint

# The name torch gives the frame it compiles after a graph break, before `<function>_at_<line>`
# (torch/_dynamo/resume_execution.py, `TORCH_DYNAMO_RESUME_IN_PREFIX`; `_compat.torch.resume`).
PREFIX = "torch_dynamo_resume_in"
_WIDTH = 100  # The report's width (`text`).
# A reason's compile id ("0/1: "), as Dynamo prefixes it.
_COMPILE_ID = re.compile(r"^\s*\d+/\d+:\s*")


def torch_reason(verdict: Verdict) -> str | None:
    """Why torch compiled, or None to take the general sentence."""
    name = f"`{verdict.function}`" if verdict.function else "the frame"
    after = verdict.resumed_after
    if after is not None:  # A frame Dynamo compiled after a graph break: a part of the function.
        frame = f"{PREFIX}_{verdict.function}_at_{after.line}"
        name = f"the part of {name} after the graph break at {_short(after)} (torch's frame `{frame}`)"
    if verdict.reason is Reason.FIRST_TRACE and verdict.of_function:
        return (f"First compile of {name} by torch.compile: Dynamo traced its Python body into a graph "
                "and the backend compiled it.")
    if verdict.reason is Reason.PART_OF_TRACE and verdict.of_function and after is not None:
        return (f"First compile of {name}: Dynamo compiles the code after a graph break as a frame of "
                "its own, with its own guards, the first time it runs; part of compiling the function, "
                "not a recompile.")
    if verdict.reason is Reason.SIGNATURE_CHANGED and verdict.of_function:
        return (f"torch.compile recompiled {name}: a guard of its earlier compile failed: "
                f"{'; '.join(map(str, verdict.changes))}.")
    return None


def _short(site: Site) -> str:
    return f"{site.path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{site.line}"


def torch_hint(verdict: Verdict) -> str | None:
    """The fix of a recompile, or None to take the general one."""
    fix = _torch_hint(verdict)
    after = verdict.resumed_after
    if fix is None or after is None or not verdict.argument:
        return fix
    # A frame after a graph break takes the function's live values as its arguments.
    return (f"`{verdict.argument}` is a value of `{verdict.function}` live at the graph break at "
            f"{_short(after)}, which torch passes to the frame after it. {fix}")


def _torch_hint(verdict: Verdict) -> str | None:
    argument = verdict.argument
    if verdict.hint is Hint.DYNAMIC_DIMENSION:
        change = next((c for c in verdict.changes if c.aspect is Aspect.DIM), None)
        axis = change.axis if change is not None else 0
        return (f"Dimension {axis} of `{argument}` varies. torch recompiles for its second size with "
                "that dimension dynamic (automatic dynamic shapes), so later sizes reuse it; to compile "
                f"once, mark it dynamic before the first call (`torch._dynamo.mark_dynamic({argument}, "
                f"{axis})`) or use `torch.compile(..., dynamic=True)`.")
    if verdict.hint is Hint.DYNAMIC_VALUE:
        return (f"`{argument}` is a Python number torch.compile specialised the graph on; this recompile "
                "made it dynamic (automatic dynamic shapes: the new compile passes other values), so later "
                f"values reuse it. To compile once, pass it as a tensor (`torch.tensor({argument})`) or "
                "use `torch.compile(..., dynamic=True)`.")
    if verdict.hint is Hint.SPECIALISED_VALUE:
        return (f"torch.compile keeps `{argument}` guarded by its exact value: the Python code needs the "
                "concrete number (a Python loop bound such as `range(...)`, which Dynamo unrolls, an `if` "
                "on it, a shape), so automatic dynamic shapes cannot make it symbolic and every new value "
                "compiles again, whatever `dynamic` is set to. Write that part as tensor ops (a "
                "`torch.cumsum` over a slice instead of the Python loop, `torch.where` instead of the `if`), "
                "or keep the value to a few values.")
    if verdict.hint is Hint.MODE_FLAG:
        return (f"Expected, once per value: torch.compile guards the bool `{argument}` (a mode flag such "
                "as `module.training`, switched by `train()`/`eval()`) by its value and keeps the compile "
                "of each mode, so switching back reuses it. Nothing to fix; a bool cannot be made dynamic.")
    if verdict.hint is Hint.PYTHON_VALUE_AS_TENSOR:
        return (f"`{argument}` is a Python value torch.compile specialised the graph on: a new value "
                "recompiles (torch makes a number dynamic only where it can stay symbolic, so a value read "
                f"by Python code recompiles every time). Pass it as a tensor (`torch.tensor({argument})`).")
    if verdict.hint is Hint.REQUIRES_GRAD:
        return (f"`{argument}` changed `requires_grad` (a module's output requires grad, a fresh tensor "
                "does not): torch.compile guards it per tensor and compiles once for each, and later calls "
                "reuse both. For inference, run under `torch.no_grad()` (or pass "
                f"`{argument}.detach()`), so no input requires grad.")
    if verdict.hint is Hint.OBJECT_IDENTITY:
        return (f"Dynamo guards `{argument}` by identity: a new object (a new model or layer) fails the "
                "guard and recompiles. Build the object once and reuse it.")
    if verdict.hint is Hint.TRACING_CONTEXT:
        return ("A guard torch.compile put on a value outside the arguments (a global, an attribute, a "
                "config) failed: keep that value fixed between calls, or read it as a tensor argument.")
    return guarded_value_hint(verdict)


def torch_details(record: FunctionTrace) -> str:
    """What torch itself said of a compile, after traceguard's sentence: the guard that failed, in
    torch's words (the first line, without its compile id and source comment), and the graph
    breaks in it with where each happened. `""` for other backends' records."""
    parts = []
    if record.backend_reasons:
        line = _COMPILE_ID.sub("", record.backend_reasons[0].strip().splitlines()[0]).split("  #", 1)[0]
        parts.append(f"torch's guard failure: `{line.strip()}`.")
    for what, where in record.graph_breaks:
        parts.append(f"Graph break: {_break_text(what, where)}; the code after it compiles as a frame of "
                     "its own.")
    return " ".join(parts)


def _break_text(what: str, where: Site) -> str:
    whose = " (Keras's code)" if "/keras/" in where.path.replace("\\", "/") else ""
    return f"{what} at {_short(where)}{whose}"


def frames_text(runs: FunctionRuns) -> str | None:
    """How many frames Dynamo split a function into at its graph breaks, and the breaks: "compiled
    as 3 frames (2 graph breaks: ...)"; None for a function without a graph break."""
    breaks = runs.graph_breaks
    if not breaks:
        return None
    frames = runs.frames
    text = (f"compiled as {frames} frame{'s' if frames != 1 else ''} ({len(breaks)} graph "
            f"break{'s' if len(breaks) != 1 else ''}: {'; '.join(_break_text(*b) for b in breaks)})")
    unsplit = len(breaks) + 1 - frames
    if unsplit > 0:
        text += f"; no frame after {'it' if len(breaks) == 1 else f'{unsplit} of them'} compiled a graph"
    return text


def graph_break_lines(functions: Sequence[FunctionRuns]) -> list[str]:
    """The report's section on the functions Dynamo split at graph breaks; [] when none was."""
    split = [(runs, frames_text(runs)) for runs in functions]
    split = [(runs, text) for runs, text in split if text]
    if not split:
        return []
    lines = ["", f"Graph breaks ({len(split)} function{'s' if len(split) != 1 else ''}):"]
    for runs, text in split:
        lines += textwrap.wrap(f"{runs.function}: {text}", _WIDTH, initial_indent="  ",
                               subsequent_indent="    ")
    return lines + textwrap.wrap(
        "Dynamo compiles the code after a graph break as a frame of its own, with its own guards, "
        "recompiles and compile time, and runs the break itself in Python: a function with N breaks "
        "is up to N + 1 graphs, not one.", _WIDTH, initial_indent="  ", subsequent_indent="  ")
