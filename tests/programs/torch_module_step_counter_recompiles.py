"""torch.compile over a module with an int step counter attribute: every call recompiles.

Source:
  https://github.com/pytorch/pytorch/issues/115711
  https://github.com/pytorch/pytorch/issues/128319
  https://github.com/pytorch/pytorch/pull/154867

The report (yanboliang, pytorch/pytorch#115711): a module keeps `self.step = 0`
and does `self.step += 1` in `forward`; compiled, it recompiles at every call:
"Dynamo would produce guard for this and triggers re-compilation since this is
used as a counter". The established cause (anijain2305, #128319 and the hint
torch added in #154867): "torch.compile considers integer attributes of the
nn.Module to be static. If you are observing recompilation, you might want to
make this integer dynamic using
torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this
integer into a tensor." The report's module on CPU, 5 calls
(`backend="eager"`, the report's own). Measured with torch 2.14.1: 5 compiles,
each for `self.step == N`; also 4 of 4 calls with `dynamic=True` (which does
not reach module int attributes); 2 compiles with
`allow_unspec_int_on_nn_module = True`.

Expected:
  backend: torch
  function: forward
  cause: python-value-arg
  changed: "self: value"
  fix: int attributes of an nn.Module are static (guarded by value; dynamic=True does not help) - torch._dynamo.config.allow_unspec_int_on_nn_module = True, or keep the counter as a tensor
  fix_keywords: ["allow_unspec_int_on_nn_module"]
  forbidden_keywords: ["dynamic=True"]
  traces: 5
  kinds: ["trace", "retrace", "retrace", "retrace", "retrace"]
  changes: [{"argument": "self", "aspect": "value"}, "*"]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `forward` with a cache entry), torch 2.14.1
"""
import torch


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        return self.layer(x)


def main():
    m = MyModule()
    opt_m = torch.compile(backend="eager")(m)
    for _ in range(5):
        opt_m(torch.randn(3, 4))


if __name__ == "__main__":
    main()
