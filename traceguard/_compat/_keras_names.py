"""Names Keras and the backends give things, which other modules compare against.

Plain constants: importing this module imports no Keras or backend.
"""

from __future__ import annotations

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


def is_keras_step_function(name: str | None) -> bool:
    """Whether `name` is a step function Keras's `fit`, `evaluate` or `predict` made."""
    return name in KERAS_STEP_FUNCTIONS
