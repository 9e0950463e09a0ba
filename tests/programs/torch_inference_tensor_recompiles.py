"""torch.compile: a tensor created under `torch.inference_mode()`, then a normal one, recompiles once.

Source:
  https://github.com/pytorch/pytorch/issues/148983
  https://github.com/pytorch/pytorch/issues/131975

zou3519's report (seen in vLLM): `x` made inside `torch.inference_mode()`, `y`
made outside, and a compiled `f` called with `x`, then `y`, recompiles. The
established cause (StrongerXi on the thread): Dynamo's tensor guard
(`TENSOR_MATCH`) checks each input's dispatch key set; an inference tensor has
no autograd keys (`AutogradCPU`), a normal tensor has them, so the same shape
and dtype still fail the guard. Both compiles are kept: each kind of tensor
reuses its own. The fix: make the inputs one kind (create them all outside
inference mode, or all inside; `torch.no_grad()` instead of `inference_mode()`
makes normal tensors). Here the report's code, then each tensor again
(`fullgraph=True, backend="eager"`, the report's own). Measured with torch
2.14.1: 2 compiles of `f`, the second for `tensor 'x' dispatch key set
mismatch. expected DispatchKeySet(CPU, BackendSelect, ADInplaceOrView), actual
DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU)`: the device
is the same (CPU), so a report must not call it a device change.

Expected:
  backend: torch
  function: f
  cause: tracing-context
  changed: "x: inference"
  fix: an inference-mode tensor and a normal tensor have different dispatch keys (autograd), which torch guards - create inputs one way (outside inference_mode, or torch.no_grad()); one compile each, reused
  fix_keywords: ["inference_mode", "inference tensor"]
  forbidden_keywords: ["device CPU -> ", "Pass it as a tensor"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "inference"}]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `f` with a cache entry), torch 2.14.1
"""
import torch


@torch.compile(backend="eager", fullgraph=True)
def f(x):
    return x.sin()


def main():
    with torch.inference_mode():
        x = torch.randn(3)
    y = torch.randn(3)
    f(x)
    f(y)
    f(x)
    f(y)


if __name__ == "__main__":
    main()
