"""torch.compile: an LR scheduler changes a float learning rate that Adam's compiled `step` is guarded on.

Source:
  https://github.com/pytorch/pytorch/issues/120934
  https://discuss.pytorch.org/t/torch-dynamo-hit-config-cache-size-limit-when-adding-lr-scheduler/197738
  https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html

The reporter compiled a training step with an AdamW optimizer; after adding an
LR scheduler, each step took long to settle and torch warned "torch._dynamo hit
config.cache_size_limit (8)", last reason `L['self'].param_groups[0]['lr'] ==
4.83e-05`. The established cause (the PyTorch maintainers, and the recipe
"(beta) Running the compiled optimizer with an LR Scheduler" written for it): a
Python float learning rate is a constant Dynamo guards on by exact value (floats
are not made dynamic), so every scheduler step that changes it fails the guard
and recompiles; after 8 compiles the frame hits the recompile limit and runs
eagerly from then on. Fix: wrap the learning rate in a tensor
(`lr=torch.tensor(0.01)`), so the scheduler updates a tensor and the compiled
step is reused. Here the recipe's structure (`opt.step(); sched.step()` in one
compiled function) on CPU with `backend="eager"` (same guards and recompiles
as Inductor), Adam on a `Linear(4, 1)`, `LinearLR` over 10 steps. Measured with
torch 2.14.1 (`get_compilation_metrics()`): `fn` graph-breaks into Adam's
`step` (compiled as a frame of its own), and `step` recompiles once, reason
`self.param_groups[0]['lr'] == 0.0033333`; torch 2.14 then treats the float as
dynamic (automatic dynamic), so later learning rates reuse that compile and the
limit is no longer hit. The established cause still holds for the one recompile
(the float value guard); the fix (a tensor learning rate) removes it.

Expected:
  backend: torch
  function: step
  cause: python-value-arg
  changed: "self | lr: value"
  fix: wrap the learning rate in a tensor (lr=torch.tensor(0.01)) so scheduler steps do not fail a float value guard (before torch made floats dynamic, the frame recompiled every step up to recompile_limit)
  fix_keywords: ["torch.tensor", "tensor"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "self", "aspect": "value"}]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of Adam's `step` with a cache entry; `fn` 1, `wrapper` 1, a resume frame 1), torch 2.14.1
"""
import torch

model = torch.nn.Linear(4, 1)
model(torch.ones(2, 4)).sum().backward()  # gradients exist, as after a backward pass in training
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=10)


@torch.compile(backend="eager")
def fn():
    opt.step()
    sched.step()


def main():
    for _ in range(10):
        fn()


if __name__ == "__main__":
    main()
