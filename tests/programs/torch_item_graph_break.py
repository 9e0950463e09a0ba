"""torch.compile: `Tensor.item()` in the compiled function is a graph break, and the code after it compiles apart.

Source:
  https://github.com/rusty1s/pytorch_scatter/issues/457
  https://github.com/pytorch/pytorch/issues/163798
  https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

The reporter, new to `torch.compile`, asked about the warning "Graph break
from `Tensor.item()`, consider setting: torch._dynamo.config.capture_scalar_outputs
= True". The established cause is torch's own (the graph-break site's gb0124,
and laithsakka in pytorch/pytorch#163798): with `capture_scalar_outputs=False`
(the default) Dynamo cannot put `.item()` in the graph; it stops the graph
there, runs `.item()` eagerly, and compiles the rest of the function as a
separate frame (`torch_dynamo_resume_in_...`), whose Python float input is
then guarded by value. Fix: `torch._dynamo.config.capture_scalar_outputs =
True` (or keep the value a tensor: `x / x.sum()`). Here a normalisation by a
`.item()` sum, called three times (`backend="eager"`). Measured with torch
2.14.1: `f` compiles once with 1 graph break (`Unsupported Tensor.item() call
with capture_scalar_outputs=False`); the resume frame compiles twice (its
float `___stack0 == ...`, then dynamic); with `capture_scalar_outputs = True`,
one compile and no break.

Expected:
  backend: torch
  function: f
  cause: graph-break
  changed: "(none - the code after the break compiles as a frame of its own)"
  fix: Tensor.item() breaks the graph - torch._dynamo.config.capture_scalar_outputs = True, or keep the value a tensor
  fix_keywords: ["capture_scalar_outputs = True", "capture_scalar_outputs=True"]
  traces: 3
  kinds: ["trace", "trace", "retrace"]
  set: heldout4
  status: open
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `f` with a cache entry, its resume frame `torch_dynamo_resume_in_f_at_N` counted under `f` as traceguard records it, a part of `f`: `f`'s own compile 1, the resume frame's 2), torch 2.14.1
"""
import torch


@torch.compile(backend="eager")
def f(x):
    total = x.sum().item()
    return x / total


def main():
    for _ in range(3):
        f(torch.rand(8))


if __name__ == "__main__":
    main()
