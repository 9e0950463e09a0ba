"""torch.compile: a call under `torch.inference_mode()` and one outside compile once each, then reuse.

Source:
  https://github.com/pytorch/pytorch/issues/123784

The reporter (davidberard98) called a compiled `fn` once inside
`torch.inference_mode()` and once outside and saw a recompile whose only reason
was `___check_global_state()`, and asked for the reason to be logged. The
established cause: Dynamo guards the global grad mode (`GlobalStateGuard`, with
autocast and other global flags): a compile made with grad disabled is not
valid with grad enabled. torch now names it (`GLOBAL_STATE changed:
grad_mode`). Each mode keeps its own compile, so switching back and forth
reuses both: one compile per mode, expected, nothing to fix (keep inference
calls under one mode). Here the report's code, both modes twice
(`backend="eager"`: the point is Dynamo's guards). Measured with torch 2.14.1:
2 compiles of `fn`, the second for `GLOBAL_STATE changed: grad_mode`, none
when the modes repeat.

Expected:
  backend: torch
  function: fn
  cause: tracing-context
  changed: "grad_mode: value"
  fix: expected - torch.compile guards the global grad mode and keeps one compile per mode; switching back reuses it, nothing to fix
  fix_keywords: ["once per", "nothing to fix"]
  forbidden_keywords: ["tensor argument"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"aspect": "context"}]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `fn` with a cache entry), torch 2.14.1
"""
import torch


def fn(x):
    return x.sin().cos()


def main():
    fn_c = torch.compile(fn, backend="eager")
    x = torch.rand((4, 4))
    for _ in range(2):
        with torch.inference_mode():
            fn_c(x)
        fn_c(x)


if __name__ == "__main__":
    main()
