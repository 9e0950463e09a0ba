"""The Keras vocabulary: names Keras and the backends give things, and the Keras methods.

Plain constants and values: importing this module imports no Keras or backend.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Function names Keras gives the steps of fit/evaluate/predict (Keras 3, then tf_keras).
KERAS_STEP_FUNCTIONS = frozenset({
    "one_step_on_data", "one_step_on_iterator", "multi_step_on_iterator",
    "one_step_on_data_distributed", "train_function", "test_function", "predict_function",
    "train_step", "test_step", "predict_step",
})

# Dense tensor and array classes of TensorFlow, Keras, NumPy and JAX: a signature shows
# their specs without a type label (`float32[2,3]`, not `EagerTensor float32[2,3]`).
DENSE_TENSOR_TYPES = frozenset({
    "Tensor", "EagerTensor", "SymbolicTensor", "KerasTensor", "ndarray",
    "Variable", "ResourceVariable", "ArrayImpl", "DynamicJaxprTracer",
})


# Whose a variable is, by the names Keras gives: optimizer variables (Keras 3:
# `adam/iteration`, `adam/dense_kernel_momentum`; Keras 2: `Adam/dense/kernel/m`,
# `Adam/iter`) and metric state (`mean_absolute_error/total`, `count`).
_OPTIMIZER_VARIABLE = re.compile(
    r"(?i)(^|/)(adam|adamw|adamax|nadam|sgd|rmsprop|adagrad|adadelta|adafactor|ftrl|lion|lamb|"
    r"loss_scale_optimizer|optimizer)(_\d+)?/|(^|/)(iteration|iter|learning_rate)(:\d+)?$|"
    r"_(momentum|velocity|momentums|velocities)(:\d+)?$")
_METRIC_VARIABLE = re.compile(r"(^|/)(total|count|true_positives|false_positives|false_negatives|"
                              r"true_negatives|accumulator)(:\d+)?$")
# A variable a loss function makes: Keras 3 names the compiled loss's scope `compile_loss`.
_LOSS_VARIABLE = re.compile(r"(^|/)compile_loss/")
VARIABLE_OWNERS = ("optimizer", "metric", "loss", "other")


def variable_owner(name: str) -> str:
    """One of `VARIABLE_OWNERS`, read from a variable's name or path."""
    if _LOSS_VARIABLE.search(name):
        return "loss"
    if _OPTIMIZER_VARIABLE.search(name):
        return "optimizer"
    if _METRIC_VARIABLE.search(name):
        return "metric"
    return "other"


@dataclasses.dataclass(frozen=True)
class OptimizerBuild:
    """An optimizer whose variables a step's first trace created, as the user's code names it.

    Attributes:
        optimizer: The expression of the optimizer, e.g. `"gan.d_optimizer"`.
        variables: The expression of the variables it was built for, e.g.
            `"gan.discriminator.trainable_variables"`; None when no attribute
            of the model holds exactly those.
    """

    optimizer: str
    variables: str | None

    def __str__(self) -> str:
        return f"{self.optimizer}.build({self.variables or '...'})"

    def to_json(self) -> list[str | None]:
        """`[optimizer, variables]`."""
        return [self.optimizer, self.variables]

    @classmethod
    def from_json(cls, data: Sequence[str | None]) -> OptimizerBuild:
        optimizer, variables = data
        return cls(str(optimizer), variables)


def is_keras_step_function(name: str | None) -> bool:
    """Whether `name` is a step function Keras's `fit`, `evaluate` or `predict` made."""
    return name in KERAS_STEP_FUNCTIONS


KERAS_METHODS = ("fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch")


@dataclasses.dataclass(frozen=True)
class KerasCall:
    """The Keras method whose step is being traced, and the data it was given.

    Attributes:
        method: One of `KERAS_METHODS`.
        data: `"dataset"` (a `tf.data.Dataset`), `"arrays"` (NumPy arrays or tensors),
            `"other"` (a generator, a `PyDataset`, ...), or None when unknown.
        samples: The number of samples in `x` for arrays, else None.
        batch_size: The `batch_size` argument, else None.
        model: Tells the model apart from others while it lives (its `id()`), else None.
    """

    method: str
    data: str | None = None
    samples: int | None = None
    batch_size: int | None = None
    model: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "data": self.data, "samples": self.samples,
                "batch_size": self.batch_size, "model": self.model}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KerasCall:
        return cls(**data)
