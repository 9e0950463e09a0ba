"""What a compiled Keras model will create and trace when `fit`, `evaluate` or `predict` first runs.

`traceguard.forecast` asks these named questions instead of reading Keras itself. Keras
builds lazily: an unbuilt model's weights, an optimizer's slot variables and compiled
metrics' state are created inside the first trace of the step function, which makes
`tf.function` trace it a second time (docs/why-two-traces.md). Keras 3 keeps the
compiled metrics and loss in `Trainer._compile_metrics` / `_compile_loss`
(keras/src/trainers/trainer.py); Keras 2 in `Model.compiled_metrics` and
`Model._steps_per_execution` (tf_keras/src/engine/training.py). `test_compat_forecast.py`
checks each on every loaded Keras.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from traceguard._compat._flavors import flavor_of_class, internal_missing

# The names Keras gives its step functions, per flavor and method: the outer function,
# then the one that runs one step inside it (Keras 3 on TensorFlow,
# keras/src/backend/tensorflow/trainer.py `_make_function`, `make_predict_function`).
STEP_FUNCTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "keras3": {"fit": ("multi_step_on_iterator", "one_step_on_data"),
               "evaluate": ("multi_step_on_iterator", "one_step_on_data"),
               "predict": ("one_step_on_data_distributed",)},
    "keras2": {"fit": ("train_function",), "evaluate": ("test_function",),
               "predict": ("predict_function",)},
}
STEP_METHODS = {"fit": "train_step", "evaluate": "test_step", "predict": "predict_step"}
EXISTING_FUNCTIONS = {"fit": "train_function", "evaluate": "test_function",
                      "predict": "predict_function"}


@dataclasses.dataclass(frozen=True)
class ModelState:
    """What a model will create in its first step, and how Keras will run its steps.

    `optimizer_variables` is None when the optimizer is not one whose variables
    are known (a custom optimizer, a Keras 2 legacy one).
    """

    flavor: str  # "keras3" or "keras2" (tf_keras, or TF 2.12-2.15's Keras 2).
    compiled: bool
    unbuilt_layers: tuple[str, ...]
    optimizer: str | None
    optimizer_variables: bool | None
    unbuilt_metrics: bool
    unbuilt_loss_trackers: bool
    steps_per_execution: int
    run_eagerly: bool
    custom_steps: tuple[str, ...]  # The `*_step` methods the model's class overrides.
    existing_functions: tuple[str, ...]  # Step functions an earlier call made.
    distributed: bool
    floatx: str
    known_steps: bool  # The Keras makes the step functions `STEP_FUNCTIONS` names.
    version: str


def _optimizer_variables(optimizer: Any, keras3: bool) -> bool | None:
    """Whether building `optimizer` creates variables; None when not known."""
    inner = getattr(optimizer, "inner_optimizer", None)  # LossScaleOptimizer wraps one.
    if inner is not None:
        optimizer = inner
    module = type(optimizer).__module__
    if keras3:
        if not module.startswith("keras.src.optimizers"):
            return None
        if optimizer.built:
            return False
        # Keras 3's SGD makes momentums only for a momentum (keras/src/optimizers/sgd.py
        # `build`); every other optimizer makes slots; EMA and gradient accumulation add more.
        plain_sgd = type(optimizer).__name__ == "SGD" and optimizer.momentum == 0
        return not plain_sgd or bool(optimizer.use_ema) or bool(optimizer.gradient_accumulation_steps)
    if ".optimizers.legacy" in module or not module.startswith(("tf_keras.", "keras.")):
        return None
    # Keras 2's optimizers (tf_keras/src/optimizers/optimizer.py) build their slots at the
    # first `apply_gradients`, SGD's momentum slots `m` included.
    return not getattr(optimizer, "_built", False)


def _nested_function_names(method: Any) -> set[str]:
    code = getattr(method, "__code__", None)
    return {const.co_name for const in (code.co_consts if code else ()) if hasattr(const, "co_name")}


def _keras3_steps_known(model: Any) -> bool:
    """Whether this Keras 3 makes the step functions `STEP_FUNCTIONS` names: Keras 3.15's
    `TensorFlowTrainer._make_function` defines `one_step_on_data` and `multi_step_on_iterator`
    (earlier releases chose `one_step_on_iterator` by `steps_per_execution`)."""
    make = getattr(type(model), "_make_function", None)
    expected = {*STEP_FUNCTIONS["keras3"]["fit"]}
    return expected <= _nested_function_names(make)


def _keras3_state(model: Any) -> dict[str, Any]:
    for name in ("_compile_metrics", "_compile_loss", "steps_per_execution"):
        if not hasattr(model, name):
            raise internal_missing(f"Keras 3's `Trainer.{name}`")
    metrics, loss = model._compile_metrics, model._compile_loss
    outputs = getattr(model, "outputs", None) or ()
    # CompileLoss adds a `Mean` tracker per loss when there are several
    # (keras/src/trainers/compile_utils.py `CompileLoss.build`).
    several_losses = len(outputs) > 1 or isinstance(getattr(loss, "_user_loss", None), (list, dict))
    strategy = getattr(model, "_distribute_strategy", None)
    return dict(
        compiled=bool(getattr(model, "compiled", False)),
        unbuilt_metrics=metrics is not None and not metrics.built,
        unbuilt_loss_trackers=loss is not None and not loss.built and several_losses,
        steps_per_execution=int(model.steps_per_execution),
        distributed=strategy is not None,
        known_steps=_keras3_steps_known(model))


def _keras2_state(model: Any) -> dict[str, Any]:
    if not hasattr(model, "_steps_per_execution") or not hasattr(model, "compiled_metrics"):
        raise internal_missing("Keras 2's `Model._steps_per_execution` and `Model.compiled_metrics`")
    import tensorflow as tf  # Keras 2 runs on TensorFlow only.

    metrics = model.compiled_metrics
    steps = model._steps_per_execution
    return dict(
        compiled=bool(getattr(model, "_is_compiled", False)),
        unbuilt_metrics=metrics is not None and not metrics.built and bool(metrics._user_metrics),
        unbuilt_loss_trackers=False,
        steps_per_execution=1 if steps is None else int(steps.numpy()),
        known_steps=True,
        distributed=tf.distribute.has_strategy()
        or getattr(model, "_distribution_strategy", None) is not None)


def model_state(model: Any) -> ModelState:
    """The `ModelState` of a Keras model."""
    flavor = flavor_of_class(type(model))
    if flavor is None or not hasattr(model, "train_step"):
        raise ValueError(f"expected a Keras model. Received: {type(model).__name__}")
    keras3 = flavor.is_keras_3
    base = flavor.keras.Model
    if not hasattr(model, "_flatten_layers"):
        raise internal_missing("Keras's `Layer._flatten_layers`")
    unbuilt = tuple(layer.name for layer in model._flatten_layers(include_self=True, recursive=True)
                    if not layer.built)
    optimizer = getattr(model, "optimizer", None)
    state = _keras3_state(model) if keras3 else _keras2_state(model)
    return ModelState(
        flavor="keras3" if keras3 else "keras2",
        unbuilt_layers=unbuilt,
        optimizer=None if optimizer is None else type(optimizer).__name__,
        optimizer_variables=None if optimizer is None else _optimizer_variables(optimizer, keras3),
        run_eagerly=bool(model.run_eagerly),
        custom_steps=tuple(name for name in STEP_METHODS.values()
                           if getattr(type(model), name) is not getattr(base, name)),
        existing_functions=tuple(name for name in EXISTING_FUNCTIONS.values()
                                 if getattr(model, name, None) is not None),
        floatx=str(flavor.keras.backend.floatx()),
        version=flavor.version,
        **state)
