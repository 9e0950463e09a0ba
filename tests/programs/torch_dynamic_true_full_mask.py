"""torch.compile(dynamic=True): a mask built with `torch.full((L, L))` from the input's length compiles once.

Source:
  https://github.com/pytorch/pytorch/issues/123810

The reporter, deploying a BLOOM-style model, built an attention mask with
`torch.full((L, L), torch.finfo(torch.float16).min)` where `L` comes from
`x.shape`, compiled it with `dynamic=True`, and saw a recompile for every input
length (2x3, 2x4, 2x5) under `TORCH_LOGS=recompiles`, although a dynamic
compile should serve every length. The PyTorch maintainers treated it as a bug
(Inductor specialised the symbolic size of `torch.full`) and fixed it; the
issue is closed. Measured with torch 2.14.1 on CPU, with the reporter's code
and default backend (Inductor): `fn` compiles once for the three lengths. A
negative control: a report must not invent a recompile; it may say that the
function compiled once with dynamic shapes.

Expected:
  backend: torch
  function: fn
  cause: none-expected
  changed: "(nothing)"
  fix: none needed - dynamic=True compiles fn once for every length (the specialisation bug was fixed)
  fix_keywords: []
  traces: 1
  kinds: ["trace"]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `fn` with a cache entry), torch 2.14.1
"""
import functools

import torch

device = "cpu"  # the report used "cuda"


def fn(x):
    _, L = x.shape
    return torch.full((L, L), torch.finfo(torch.float16).min, device=device)


def main():
    cfn = torch.compile(fn, dynamic=True)
    input_fn = functools.partial(torch.randint, 10, 1000, device=device)
    cfn(input_fn((2, 3)))
    cfn(input_fn((2, 4)))  # expect don't recompile here
    cfn(input_fn((2, 5)))  # expect don't recompile here


if __name__ == "__main__":
    main()
