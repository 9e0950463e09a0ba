"""The words of each `Hint` whose text needs no fact of the run: one fix per hint.

`messages` words the others (the ones that name an argument, a batch size, a backend)
and looks these up; wording changes here only.
"""

from __future__ import annotations

from traceguard._core.verdicts import Hint

HINTS: dict[Hint, str] = {
    Hint.FIRST_STEP_GRADIENTS: (
        "Expected once per model: the first step ran before any gradient existed, and torch.compile "
        "guarded on that (`zero_grad`'s `p.grad is None`); the second step recompiles once they exist, "
        "and later steps reuse it. Nothing to fix."
    ),
    Hint.DYNAMIC_DIMENSION: (
        "A dimension that varies recompiles `torch.compile`: mark it dynamic before the first call "
        "(`torch._dynamo.mark_dynamic(tensor, axis)`) or use `torch.compile(..., dynamic=True)`."
    ),
    Hint.DYNAMIC_VALUE: (
        "A Python number torch.compile specialised on was made dynamic by its recompile, so later values "
        "reuse it; pass it as a tensor to compile once."
    ),
    Hint.SPECIALISED_VALUE: (
        "A Python value read by Python code (a loop bound, an `if`) stays guarded by its exact value: every "
        "new value compiles again. Write that part as tensor ops, or keep the value to a few values."
    ),
    Hint.MODE_FLAG: (
        "Expected, once per value: a bool mode flag is guarded by its value and the compile of each "
        "mode is kept. Nothing to fix."
    ),
    Hint.SIZE_ONE_SPECIALISED: (
        "torch always specialises sizes 0 and 1, whatever `dynamic` says: the next size recompiles once. "
        "To compile once, `torch._dynamo.decorators.mark_unbacked(tensor, axis)` before the first call, "
        "or a first size above 1."
    ),
    Hint.GLOBAL_MODE: (
        "Expected, once per value: torch.compile guards the global grad mode and keeps the compile made "
        "under each. Nothing to fix."
    ),
    Hint.STATIC_ATTRIBUTE: (
        "An int read from an attribute or a global is guarded by its exact value on every compile "
        "(whatever `dynamic` is set to): keep it in a tensor, pass it as an argument, or, for an "
        "nn.Module's attribute, set `torch._dynamo.config.allow_unspec_int_on_nn_module = True`."
    ),
    Hint.STRING_VALUE: (
        "A Python string argument is guarded by its value and never made dynamic: do the string work "
        "(tokenizing) outside the compiled function and compile what runs on the resulting tensors."
    ),
    Hint.INFERENCE_TENSOR: (
        "A tensor made under `torch.inference_mode()` and a normal one compile once each: create the "
        "inputs one way (all outside inference mode, or use `torch.no_grad()`, which makes normal tensors)."
    ),
    Hint.REQUIRES_GRAD: (
        "A tensor argument's `requires_grad` changed: one compile for each, both kept. For inference, run "
        "under `torch.no_grad()` or pass the tensor `.detach()`ed."
    ),
    Hint.ONE_LAYOUT: (
        "A tensor argument's strides changed (a transposed or sliced view): make it `.contiguous()` "
        "before the call, so every call passes one layout."
    ),
    Hint.ONE_DEVICE: (
        "A tensor argument is on another device than at the earlier compile: move the inputs to one "
        "device before the call."
    ),
    Hint.SYMBOLIC_PASS: (
        "Expected once per layer: Keras runs `call` on symbolic inputs to create the "
        "weights when the layer has no `build()`, and to infer output shapes in a functional "
        "model. Define `build(input_shape)` to create the weights (and "
        "`compute_output_shape()` to skip the pass in functional models)."
    ),
    Hint.DEFINE_BUILD: (
        "Expected once per layer: it has no `build()`, so Keras ran `call` on symbolic inputs "
        "to create its weights and build its sublayers. Define `build(input_shape)` to create "
        "them, and Keras calls it instead."
    ),
    Hint.DEFINE_COMPUTE_OUTPUT_SHAPE: (
        "Expected once per call of the layer on symbolic inputs (building a functional or "
        "Sequential model): Keras ran `call` to infer the layer's output. Define "
        "`compute_output_shape(input_shape)`, and Keras uses it instead."
    ),
    Hint.ENCLOSING_SYMBOLIC_PASS: (
        "Keras ran `call` inside the symbolic pass of a layer or model that calls this layer: "
        "what avoids that pass (a `build()` or a `compute_output_shape()` on the enclosing "
        "layer) avoids this run too."
    ),
    Hint.KERAS2_FUNCTIONAL: (
        "Expected once per call of the layer in a functional model: Keras 2 runs every layer's "
        "`call` on symbolic inputs to infer its outputs as it builds the model, whatever the "
        "layer defines. A one-time cost; nothing to fix."
    ),
    Hint.CREATE_VARIABLES_FIRST: (
        "Create the variables before the first traced call: call the layer once on a sample "
        "input before wrapping it in `tf.function`, or give it a `build(input_shape)` that "
        "creates its weights (building its sublayers) and call `layer.build(input_shape)` "
        "first. TensorFlow then traces once."
    ),
    Hint.STEP_CREATED_OTHER_VARIABLES: (
        "This layer was built already: the step's first trace created other variables, the "
        "optimizer's (e.g. Adam's moments) or the compiled metrics' state, so TensorFlow traced "
        "it once more, once per model. Nothing to fix in the layer: the step's own fix names the "
        "optimizers to build before `fit`. The metrics' are a one-time cost (evaluating one batch "
        "before `fit` moves it to the test step)."
    ),
    Hint.STEP_CREATED_VARIABLES: (
        "The step's first trace created variables (an unbuilt layer's weights, the optimizer's "
        "slots such as Adam's moments, or the compiled metrics' state), so TensorFlow traced it once "
        "more, once per model. Build the model before `fit` (an `Input`, or `model.build(input_shape)`) "
        "and the optimizer (`model.optimizer.build(model.trainable_variables)`); the metrics' are a "
        "one-time cost."
    ),
    Hint.BUILD_MODEL_FIRST: (
        "The step's first trace built this layer (it had no weights yet), so TensorFlow traced it once "
        "more. Build the model before `fit`: give it an `Input`, call `model.build(input_shape)`, or "
        "call it once on a batch."
    ),
    Hint.FUNCTION_CREATED_OTHER_VARIABLES: (
        "This layer was built already: something else created variables in the function's "
        "first trace (another layer, an optimizer's slots, a `tf.Variable`), so TensorFlow "
        "traced it once more. Create those variables before the first call: build the other "
        "layers, `optimizer.build(model.trainable_variables)`, or make the `tf.Variable` "
        "outside the function."
    ),
    Hint.BUILD_OPTIMIZER_FIRST: (
        "Keras 2 creates the optimizer's variables in the first trace of `train_function`, "
        "so TensorFlow traces it twice once per model. To trace once, build the optimizer "
        "before `fit`: `model.optimizer.build(model.trainable_variables)`."
    ),
    Hint.RECOMPILED_MODEL: (
        "The same model got a new step function: `compile()` (or `make_train_function(force=True)`) "
        "drops the one it had, so the next `fit`/`evaluate`/`predict` makes and traces a new one. "
        "Compile once, before the loop; to change the learning rate between runs, assign "
        "`model.optimizer.learning_rate` instead of compiling again."
    ),
    Hint.REUSE_MODEL: (
        "Build the model once and reuse it: each new Keras model (one built per iteration, or a "
        "`keras.Model(...)` made per inference) gets new step functions, which trace again. "
        "For a sub-model, make it once outside the loop; to run it per batch, call `model(x)` "
        "or `model.predict_on_batch(x)` on the same model object."
    ),
    Hint.METRIC_STATE: (
        "The first trace created the metrics' state variables, so TensorFlow traced once more: a "
        "one-time cost per function. To avoid it, create the metrics outside the function and "
        "build them before the first call (e.g. update them once eagerly)."
    ),
    Hint.TRAINING_VALUE: (
        "Expected once per value of `training`: each value gets its own graph. Pass "
        "a Python bool consistently, not a mix of tensors and bools."
    ),
    Hint.PARTIAL_BATCH_DATASET: (
        "The last batch of the dataset is partial: its new shape costs a trace. Batch with "
        "`dataset.batch(batch_size, drop_remainder=True)`, or choose a dataset size divisible by "
        "the batch size."
    ),
    Hint.ONE_BATCH_SIZE: (
        "Each new batch size costs a trace of the step: pass batches of one size to "
        "`train_on_batch`/`test_on_batch`, or use `fit`, which traces the partial last batch once."
    ),
    Hint.FIXED_SHAPES: (
        "Each new shape costs a trace: `jax.jit` compiles once per input shape. Pad or "
        "bucket the inputs to a few fixed shapes."
    ),
    Hint.ONE_DTYPE: "Cast the inputs to one dtype before the call; each dtype costs a trace.",
    Hint.ONE_RANK: "Each rank costs a trace: reshape inputs to one rank, or use `input_signature`.",
    Hint.RESTORED_FUNCTION: (
        "`{function}` was restored by `tf.saved_model.load`: it can only run the concrete functions "
        "saved with it (a new signature fails with \"Could not find matching concrete function\"), "
        "and its `input_signature` cannot be changed on the loaded object. Save the function with an "
        "`input_signature` that covers every call (e.g. `tf.TensorSpec([None, ...])` for a dimension "
        "that varies, or `tf.saved_model.save(obj, path, signatures=obj.f.get_concrete_function("
        "tf.TensorSpec(...)))`), or call its serving signature, `loaded.signatures[\"serving_default\"]`, "
        "which takes the saved specs."
    ),
}


__all__ = ["HINTS"]
