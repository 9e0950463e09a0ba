"""torch.compile: a tensor argument the function never uses changes size, and nothing recompiles (a fixed report).

Source:
  https://github.com/pytorch/pytorch/issues/131893

ezyang's report: `f(x, y)` binds `z = y` and returns `x * 2`; called with `y`
of 4 and then 6 elements, torch recompiled, triggered by `tensor 'L['y']' size
mismatch at index 0. expected 4, actual 6`, although `y` is never used ("Static
shape guards are put on tensors even if they never actually get used"). The
issue was closed as fixed: Dynamo no longer installs shape guards on a tensor
the graph does not use. Measured with torch 2.14.1, the report's code as written
(`fullgraph=True, backend='eager'`) and one more size of `y`: `f` compiles
once for `y` of 4, 6 and 9 elements. A negative control: a report must count no
recompile and blame no change of `y`.

Expected:
  backend: torch
  function: f
  cause: none-expected
  changed: "(nothing)"
  fix: nothing recompiles - torch guards only the tensors the graph uses (fixed since the report)
  fix_keywords: []
  traces: 1
  kinds: ["trace"]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `f` with a cache entry), torch 2.14.1
"""
import torch


@torch.compile(fullgraph=True, backend="eager")
def f(x, y):
    z = y  # noqa: F841 - the report's unused binding
    return x * 2


def main():
    f(torch.randn(3), torch.randn(4))
    f(torch.randn(3), torch.randn(6))
    f(torch.randn(3), torch.randn(9))


if __name__ == "__main__":
    main()
