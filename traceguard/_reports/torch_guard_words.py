"""The words of the torch fixes that follow what torch does with a guarded value (held-out set 4, #39).

Measured with torch 2.14.1 (`tests/diagnosis/test_torch_guard_fixes.py`): sizes 0 and 1 are always
specialised (batches 1, 2, 3 compile twice by default, with `dynamic=True` and with `mark_dynamic`,
once with `mark_unbacked`); a `str` is guarded by equality and never made dynamic; an int read from an
attribute or a global is guarded by exact value on every compile, `dynamic=True` or not (an
nn.Module's can be made dynamic with `allow_unspec_int_on_nn_module`); the global grad mode gets one
compile per value, kept; an inference tensor and a normal one, one compile each.
"""

from __future__ import annotations

from traceguard._core.changes import Aspect
from traceguard._core.verdicts import Hint, Verdict

_WORDS = {
    Hint.STATIC_ATTRIBUTE: (
        "`{argument}` is an int torch.compile reads from an attribute or a global, not from an argument: "
        "torch guards such an int by its exact value on every compile (automatic dynamic shapes do not "
        "reach it, whatever `dynamic` is set to), so each new value compiles again, up to the recompile "
        "limit. For an nn.Module's int attribute (a step counter), set "
        "`torch._dynamo.config.allow_unspec_int_on_nn_module = True` (one more compile, then it stays "
        "dynamic); or keep the value in a tensor (a buffer updated in place), or pass it as an argument."
    ),
    Hint.STRING_VALUE: (
        "`{argument}` is a Python string: torch.compile guards it by its value and never makes a string "
        "dynamic, so each new text compiles again, whatever `dynamic` is set to. Do the string work "
        "(tokenizing) outside the compiled function and compile what runs on the resulting tensor, whose "
        "length can be dynamic."
    ),
    Hint.INFERENCE_TENSOR: (
        "`{argument}` was made under `torch.inference_mode()` at one call and not at the other: "
        "torch.compile's tensor guard checks the dispatch keys, and an inference tensor has no autograd "
        "keys, so each kind compiles once (both kept). Create the inputs one way: all outside inference "
        "mode, or under `torch.no_grad()`, which makes normal tensors."
    ),
    Hint.GLOBAL_MODE: (
        "Expected, once per value: torch.compile guards the global `{argument}` (set by `torch.no_grad()`, "
        "`torch.inference_mode()`, `torch.enable_grad()`) and keeps the compile made under each value, so "
        "switching back reuses it. Nothing to fix; to compile once, call it under one mode."
    ),
}


def guarded_value_hint(verdict: Verdict) -> str | None:
    """The fix of a recompile by one of the hints above, or None."""
    if verdict.hint is Hint.SIZE_ONE_SPECIALISED:
        change = next((c for c in verdict.changes if c.aspect is Aspect.DIM), None)
        axis, size = (change.axis, change.old) if change is not None else (0, 1)
        argument = verdict.argument
        return (f"Dimension {axis} of `{argument}` was {size} at the earlier compile: torch always "
                "specialises sizes 0 and 1 (0/1 specialisation), whatever `dynamic` is set to and with "
                "`mark_dynamic` too, so the next size recompiles; that compile made the dimension dynamic "
                f"from 2 up, and size {size} keeps its own. To compile once, mark it unbacked before the "
                f"first call (`torch._dynamo.decorators.mark_unbacked({argument}, {axis})`), or make the "
                "first call with a size above 1.")
    words = _WORDS.get(verdict.hint)  # type: ignore[arg-type]
    return words.format(argument=verdict.argument) if words is not None else None
