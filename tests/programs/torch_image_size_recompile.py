"""torch.compile: calling a compiled model on a new image size recompiles once, then the size is dynamic.

Source:
  https://github.com/huggingface/diffusers/issues/5495
  https://docs.pytorch.org/docs/main/compile/programming_model.recompilation.html

A diffusers user asked what the docs meant by "Calling the compiled pipeline
on a different image size will re-trigger compilation": does inference at
512px and then at 768px compile again, and why? The maintainer
(patrickvonplaten): "Compilation in machine learning not only depends on the
function, but also on the input shapes. If you change the input shape
torch.compile sees this as a new function that needs to be compiled." torch's
recompilation guide completes the answer: the guard failure is `tensor 'x'
size mismatch at index 2`, and with the default `dynamic=None` torch recompiles
once with the changed dimensions dynamic (automatic dynamic shapes), so a
third size reuses that compile; `dynamic=True` (or `mark_dynamic`) compiles
dynamic from the start. Here a small convolutional stand-in for the UNet
(`forward(self, sample)`), images of 8, 12 and 16 pixels, CPU,
`backend="eager"` (same guards as Inductor). Measured with torch 2.14.1:
2 compiles of `forward`, the second for `sample` dim 2 (8 -> 12).

Expected:
  backend: torch
  function: forward
  cause: shape-nonbatch
  changed: "sample: dim 2"
  fix: a new image size recompiles once with height/width dynamic (automatic dynamic shapes), later sizes reuse it; to compile once use dynamic=True or torch._dynamo.mark_dynamic(sample, 2/3)
  fix_keywords: ["mark_dynamic", "dynamic=True"]
  traces: 2
  kinds: ["trace", "retrace"]
  changes: [{"argument": "sample", "aspect": "dim", "axis": 2}]
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `forward` with a cache entry), torch 2.14.1
"""
import torch


class TinyUNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.conv_out = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, sample):
        return self.conv_out(torch.nn.functional.silu(self.conv_in(sample)))


def main():
    unet = torch.compile(TinyUNet(), backend="eager")
    with torch.no_grad():
        for size in (8, 12, 16):  # 512px, 768px, ... latents, scaled down
            unet(torch.randn(1, 4, size, size))


if __name__ == "__main__":
    main()
