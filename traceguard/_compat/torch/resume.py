"""Which function a Dynamo resume frame continues, and after which graph break.

After a graph break Dynamo compiles the rest of the function as a new code object
named `f"{TORCH_DYNAMO_RESUME_IN_PREFIX}_{co_name}_at_{lineno}"`, the prefix being
`torch_dynamo_resume_in`, `co_name` the function's own name and `lineno` the line of
the break, which is also the new code's `co_firstlineno`; torch keeps each generated
code's `ResumeFunctionMetadata` in `ContinueExecutionCache.generated_code_metadata`
(an `ExactWeakKeyDictionary` keyed by the code object), whose `code` is the function's
own code object: a resume of a resume is generated from that original code
(`generate_based_on_original_code_object`), so every resume frame maps to the
function it is part of (torch/_dynamo/resume_execution.py, torch 2.14.1). Measured on
torch 2.14.1: a function that breaks twice gives two resume frames, both named after
the function (`torch_dynamo_resume_in_twice_at_214`, then `..._at_216`), and torch's
compilation metrics list each as a frame of its own (its own `CompileId.frame_id`,
`co_name`, and `co_firstlineno` the break's line).

Upstream: https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/resume_execution.py
"""

from __future__ import annotations

import re
import types
from typing import Any

from torch._dynamo import resume_execution as _resume_execution

from traceguard._compat._flavors import internal_missing

PREFIX = "torch_dynamo_resume_in"
if getattr(_resume_execution, "TORCH_DYNAMO_RESUME_IN_PREFIX", None) != PREFIX:
    raise ImportError(
        "torch._dynamo.resume_execution.TORCH_DYNAMO_RESUME_IN_PREFIX is not "
        f"{PREFIX!r}: traceguard cannot tell resume frames in this torch release"
    )
_CACHE = getattr(_resume_execution, "ContinueExecutionCache", None)
_GENERATED: Any = getattr(_CACHE, "generated_code_metadata", None)
if not callable(getattr(_GENERATED, "get", None)) or "code" not in getattr(
        getattr(_resume_execution, "ResumeFunctionMetadata", None), "__dataclass_fields__", {}):
    raise internal_missing("torch._dynamo.resume_execution.ContinueExecutionCache.generated_code_metadata, "
                           "mapping a resume code to a ResumeFunctionMetadata with `code`")

_RESUME = re.compile(rf"^{PREFIX}_(?P<name>.+)_at_(?P<line>\d+)$")
# The arguments Dynamo adds before a resume frame's live locals: its nested resume functions and
# frame values, and the values on the stack at the break (`ContinueExecutionCache.generate`).
_TORCH_ARGUMENTS = re.compile(r"^(__nested_resume_fns|__nested_frame_values|___stack\d+)$")


def resumed(co_name: str) -> tuple[str, int] | None:
    """The function a resume frame continues and the line of its break, from the frame's name;
    None for another name."""
    match = _RESUME.match(co_name)
    if match is None:
        return None
    return match.group("name"), int(match.group("line"))


def original_code(code: Any) -> tuple[types.CodeType, int] | None:
    """For a resume frame's code: the code of the function it continues (torch's own record of
    it) and the line of the graph break it continues after; None for any other code."""
    if resumed(getattr(code, "co_name", "")) is None:
        return None
    metadata = _GENERATED.get(code)
    original = getattr(metadata, "code", None)
    if not isinstance(original, types.CodeType):
        return None
    return original, code.co_firstlineno


def is_torch_argument(name: str) -> bool:
    """Whether a resume frame's argument is Dynamo's own, not one of the function's locals."""
    return _TORCH_ARGUMENTS.match(name) is not None


def runs_part_of(code: Any, original: types.CodeType) -> bool:
    """Whether `code` (a live frame's) runs `original` or a frame of it: the function itself, its
    code as Dynamo transformed it (the same name and file), or one of its resume frames."""
    name = getattr(code, "co_name", None)
    if getattr(code, "co_filename", None) != original.co_filename:
        return False
    part = resumed(name or "")
    return name == original.co_name or (part is not None and part[0] == original.co_name)
