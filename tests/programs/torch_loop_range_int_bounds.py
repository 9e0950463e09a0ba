"""torch.compile: Python int loop bounds are specialised, so every new `start` recompiles `accumulate`.

Source:
  https://github.com/pytorch/pytorch/issues/114293
  https://docs.pytorch.org/docs/main/compile/programming_model.recompilation.html

The reporter compiled a function that accumulates an array in place with a
Python loop, `for i in range(start + 1, end)`, and called it once per step of
an outer loop with a new `start`: "Recompilation triggered at each step of the
loop". torch's own `TORCH_LOGS=recompiles` output in the report names the cause:
each recompile is triggered by `L['start'] == 3`, `== 4`, ... (and
`L['end'] == 10`): Dynamo unrolls the Python `range` loop, so the loop's int
bounds are burned into the graph and guarded on their exact value; automatic
dynamic shapes cannot make an int dynamic when it is the bound of a Python
loop. torch's recompilation guide gives the fix for int/float arguments guarded
on their value: pass them as tensors, or write the loop as tensor operations
(here a `cumsum` over a slice) so no Python value is specialised. Here the
reporter's structure on CPU with `backend="eager"` (Dynamo's guards and
recompiles are the same as Inductor's; only the backend compile is skipped),
5 values of `start`. Measured with torch 2.14.1: 5 compiles, each for
`start == N`, with the default automatic dynamic shapes and the same 5 with
`dynamic=True`: making ints dynamic does not help a Python loop bound, so a
hint must not promise that later values reuse a compile or suggest
`dynamic=True`.

Expected:
  backend: torch
  function: accumulate
  cause: python-value-arg
  changed: "start: value"
  fix: the Python int bounds of an unrolled loop are specialised per value (dynamic=True does not help) - replace the Python loop with tensor ops (cumsum over a slice)
  fix_keywords: ["cumsum", "tensor op", "python loop", "unroll"]
  forbidden_keywords: ["dynamic=True"]
  traces: 5
  kinds: ["trace", "retrace", "retrace", "retrace", "retrace"]
  changes: [{"argument": "start", "aspect": "value"}, "*"]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `accumulate` with a cache entry), torch 2.14.1
"""
import torch


@torch.compile(backend="eager")
def accumulate(x, start, end):
    for i in range(start + 1, end):
        x[i] += x[i - 1]
    return x


def main():
    x = torch.arange(10, dtype=torch.float32)
    for start in range(5):
        accumulate(x.clone(), start, 10)


if __name__ == "__main__":
    main()
