"""torch.compile: a first batch of size 1 is specialised (0/1 specialisation), so batch 2 recompiles.

Source:
  https://github.com/pytorch/pytorch/issues/135430
  https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html

The reporter compiled a model and timed it with an input of batch size 1 and
then larger ones, and saw size 1 treated differently from sizes 2 and up. The
maintainers' answer (ezyang): "0/1 are always specialized (unless you
`mark_unbacked`)": torch never makes a dimension of size 0 or 1 symbolic, so a
first call with batch 1 compiles a graph for exactly 1, and batch 2 fails that
size guard and recompiles (with dimension 0 dynamic, from 2 up, so 3 and 4
reuse it). Here a `Linear` model called with batches 1, 2, 3, 4 (`backend="eager"`:
the point is Dynamo's guards). Measured with torch 2.14.1: 2 compiles, the
second for `tensor 'x' size mismatch at index 0. expected 1, actual 2`; the
same 2 compiles with `torch.compile(dynamic=True)` and with
`torch._dynamo.mark_dynamic(x, 0)` before each call (size 1 is specialised
anyway), 1 compile with `torch._dynamo.decorators.mark_unbacked(x, 0)`. So a
hint must not offer `dynamic=True` or `mark_dynamic` as the way to compile
once: the fix is `mark_unbacked`, or a first (warm-up) batch larger than 1.

Expected:
  backend: torch
  function: forward
  cause: shape-batch-partial
  changed: "x: dim 0"
  fix: sizes 0 and 1 are always specialised (dynamic=True and mark_dynamic do not help) - mark_unbacked(x, 0), or warm up with a batch larger than 1
  fix_keywords: ["mark_unbacked"]
  forbidden_keywords: ["dynamic=True", "mark_dynamic("]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "dim", "axis": 0}]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `forward` with a cache entry), torch 2.14.1
"""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.relu(self.linear(x))


def main():
    model = torch.compile(Model(), backend="eager")
    with torch.no_grad():
        for batch in (1, 2, 3, 4):
            model(torch.randn(batch, 16))


if __name__ == "__main__":
    main()
