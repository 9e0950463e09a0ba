"""torch.compile: a new module per call reuses `forward`'s compile; the input's `requires_grad` recompiles it once.

Source:
  https://github.com/pytorch/pytorch/issues/114511
  https://github.com/pytorch/pytorch/pull/107077

A PyTorch maintainer (Chillee) described the two ways a frame gets many cache
entries: a "unique callstack", `mods = [MyMod() for _ in range(64)]; for mod in
mods: x = torch.compile(mod)(x)`, where each module instance used to be
specialised on (its `self` guarded by identity: one compile per instance,
counted against `accumulated_cache_size_limit`), and an "identical callstack"
with new input sizes. Since then Dynamo inlines `nn.Module`s
(`inline_inbuilt_nn_modules`, the default from torch 2.5): parameters are graph
inputs and `self` is not guarded by identity, so the new instances do not
recompile. Measured with torch 2.14.1: `forward` compiles twice, and the one
recompile is not about the module: torch's reason is `tensor 'x'
requires_grad mismatch. expected requires_grad=0` - the first module got a
plain tensor, every later one the previous module's output, which requires
grad. The expected diagnosis: `x` changed `requires_grad` (False -> True),
once; later modules reuse the compile. Nothing to fix for training; for
inference run the loop under `torch.no_grad()` (or pass `x.detach()`), and no
new module object is to blame. Here the maintainer's loop with 4 modules, CPU,
`backend="eager"`.

Expected:
  backend: torch
  function: forward
  cause: requires-grad
  changed: "x: requires_grad"
  fix: x's requires_grad changed (a module output requires grad); one recompile, later modules reuse it - torch.no_grad() or x.detach() for inference; new module instances do not recompile
  fix_keywords: ["requires_grad", "no_grad", "detach"]
  forbidden_keywords: ["new object", "deallocated"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x", "aspect": "requires_grad"}]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `forward` with a cache entry), torch 2.14.1
"""
import torch


class MyMod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))


def main():
    x = torch.ones(2, 8)
    mods = [MyMod() for _ in range(4)]
    for mod in mods:
        x = torch.compile(mod, backend="eager")(x)


if __name__ == "__main__":
    main()
