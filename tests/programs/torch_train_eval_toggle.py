"""torch.compile: switching a compiled module between `train()` and `eval()` compiles once per mode, not every time.

Source:
  https://github.com/pytorch/pytorch/issues/110803

The reporter alternated `model.train()` and `model.eval()` on a
`torch.compile`d module and saw guard failures on every switch
(`__nn_module_guard_0(L['self'])`), 8 recompiles of `forward` and then the
cache limit: "I could understand a single recompile, if the model config
changing invalidates a guard, but remarkably this happens every single time".
The maintainers fixed Dynamo (closed as fixed): a module's `training` flag is
now guarded as a value, and the compile for each mode stays in the cache, so
toggling costs one recompile for the second mode and none after. The expected
diagnosis: one recompile because `self.training` changed `True -> False`, once
per value of the flag (as Keras's `training=` argument), nothing to fix unless
the second compile matters; a bool flag cannot be made dynamic, so
`dynamic=True` is no fix. Here the reporter's toggle on CPU with
`backend="eager"`, 3 rounds of train/eval.

Expected:
  backend: torch
  function: forward
  cause: training-flag
  changed: "self: value"
  fix: one compile per value of module.training is expected (the compile for each mode is kept); nothing to fix
  fix_keywords: ["once per value", "per mode", "each mode", "nothing to fix"]
  forbidden_keywords: ["dynamic=True"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "self", "aspect": "value"}]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `forward` with a cache entry), torch 2.14.1
"""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(self.linear(x))


def main():
    model = torch.compile(Model(), backend="eager")
    x = torch.ones(2, 4)
    for _ in range(3):
        model.train()
        model(x)
        model.eval()
        model(x)


if __name__ == "__main__":
    main()
