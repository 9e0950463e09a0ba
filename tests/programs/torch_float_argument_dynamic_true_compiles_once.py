"""torch.compile(dynamic=True) with a Python float argument: one compile for every value (a fixed report).

Source:
  https://github.com/pytorch/pytorch/issues/149406
  https://github.com/pytorch/pytorch/pull/149564

The reporter compiled `model(x, y) = x * y` with `torch.compile(dynamic=True)`
and called it with `y=1.5`, then `y=2.5`: torch 2.5.1 recompiled, triggered by
`L['y'] == 1.5`, although `dynamic=True` was meant to avoid recompiles. The
maintainers' answer (bobrenjc93, pytorch/pytorch#149564, "fix dynamic float when
dynamic=True"): floats were made dynamic only by automatic dynamic shapes, on a
recompile; since the fix, `dynamic=True` makes them dynamic on the first
compile. Measured with torch 2.14.1 (`backend="eager"`: the report is about
Dynamo's guards): `model` compiles once for y = 1.5, 2.5, 3.5, 4.5; without
`dynamic=True` it compiles twice (`y == 1.5`, then `y` dynamic). A negative
control: a report must count no recompile of `model`.

Expected:
  backend: torch
  function: model
  cause: none-expected
  changed: "(nothing)"
  fix: nothing recompiles - dynamic=True makes the float dynamic on the first compile (torch >= 2.7)
  fix_keywords: []
  traces: 1
  kinds: ["trace"]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `model` with a cache entry), torch 2.14.1
"""
import torch

x = torch.randn((10, 10), requires_grad=False)


@torch.compile(dynamic=True, backend="eager")
def model(x, y):
    return x * y


def main():
    for y in (1.5, 2.5, 3.5, 4.5):
        model(x, y)


if __name__ == "__main__":
    main()
