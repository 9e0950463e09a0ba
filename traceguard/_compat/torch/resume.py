"""Which function a Dynamo resume frame continues.

After a graph break Dynamo compiles the rest of the function as a new code object
named `f"{TORCH_DYNAMO_RESUME_IN_PREFIX}_{co_name}_at_{lineno}"`, the prefix being
`torch_dynamo_resume_in`, `co_name` the function's own name and `lineno` the line of
the break (torch/_dynamo/resume_execution.py, torch 2.14.1). A function that breaks
twice gives two resume frames, both named after the function (measured, torch 2.14.1:
`torch_dynamo_resume_in_twice_at_214`, then `..._at_216`), not a resume of a resume.

Upstream: https://github.com/pytorch/pytorch/blob/v2.14.1/torch/_dynamo/resume_execution.py
"""

from __future__ import annotations

import re

from torch._dynamo import resume_execution as _resume_execution

PREFIX = "torch_dynamo_resume_in"
if getattr(_resume_execution, "TORCH_DYNAMO_RESUME_IN_PREFIX", None) != PREFIX:
    raise ImportError(
        "torch._dynamo.resume_execution.TORCH_DYNAMO_RESUME_IN_PREFIX is not "
        f"{PREFIX!r}: traceguard cannot tell resume frames in this torch release"
    )

_RESUME = re.compile(rf"^{PREFIX}_(?P<name>.+)_at_(?P<line>\d+)$")


def resumed(co_name: str) -> tuple[str, int] | None:
    """The function a resume frame continues and the line of its break; None otherwise."""
    match = _RESUME.match(co_name)
    if match is None:
        return None
    return match.group("name"), int(match.group("line"))
