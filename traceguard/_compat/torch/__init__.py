"""The torch backend (Keras 3 on `KERAS_BACKEND=torch`): every `torch.compile` frame compile.

- `backend`: the backend interface (`_interface.Backend`) answered for torch; never imports
  TensorFlow or JAX.
- `traces`: the hook on Dynamo's frame compiles, installed while the function-trace
  sink is connected; each compile is a `FunctionTracing` for that one sink.
- `guard_reasons`: torch's own guard-failure reasons, read as `_core` changes.
- `layers`: a recorded layer's `call` that Dynamo traces, told to the recorder at trace time
  (`torch._dynamo.comptime`), as a run in the frame compile it belongs to.
"""
