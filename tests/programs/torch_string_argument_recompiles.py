"""torch.compile over a function taking a Python string: each new text recompiles, guarded by its value.

Source:
  https://github.com/pytorch/pytorch/issues/100455

The reporter compiled a `predict(text)` that tokenizes its string argument and
runs the model; with `dynamic=True` Dynamo still recompiled for every new text,
triggered by `L['text'] == 'This is a note about Frank Sinatra ...'`. The
maintainers' answer (ezyang): "You are going to want to arrange for
torch.compile to get applied after the string is tokenized into a tensor,
since we don't have any capability to compile strings": a `str` is guarded by
its exact value and can never be made dynamic. Here a small character
tokenizer and an embedding model stand in for the reporter's, three texts,
`dynamic=True` as in the report (`backend="eager"`: the point is Dynamo's
guards). Measured with torch 2.14.1: 3 compiles of `predict`, for `text ==
'...'` of each earlier text. The fix: tokenize outside, compile the model
over the token tensor (whose length can be dynamic).

Expected:
  backend: torch
  function: predict
  cause: python-value-arg
  changed: "text: value"
  fix: a Python str is guarded by its exact value and cannot be made dynamic - tokenize outside the compiled function and compile the model over the token tensor
  fix_keywords: ["tokeniz", "outside the compiled"]
  forbidden_keywords: ["dynamic=True", "torch.tensor(text)"]
  traces: 3
  kinds: ["trace", "retrace", "retrace"]
  changes: [{"argument": "text", "aspect": "value"}, "*"]
  set: heldout4
  note: traces counted with torch._dynamo.utils.get_compilation_metrics() (frame compiles of `predict` with a cache entry), torch 2.14.1
"""
import torch

embedding = torch.nn.EmbeddingBag(128, 8)


@torch.compile(dynamic=True, backend="eager")
def predict(text):
    ids = torch.tensor([ord(character) % 128 for character in text])
    return embedding(ids.unsqueeze(0))


def main():
    texts = [
        "This is a note about Frank Sinatra who was in Saint Genis Pouilly",
        "during summer of 75. He was not recognised.",
        "Another note, of another length.",
    ]
    with torch.no_grad():
        for text in texts:
            predict(text)


if __name__ == "__main__":
    main()
