"""The optimizers whose variables a step's first trace created, named as the user's code names them.

A Keras step's first trace that creates variables is traced again (TensorFlow lifts
them), and the fix is to build those optimizers before `fit`. A custom `train_step`
may use its own optimizers (`self.d_optimizer`, `self.g_optimizer`), not
`model.optimizer`: building the wrong one changes nothing. So the optimizers are
found by the variables' owners: each Keras 3 optimizer held by an attribute of the
model whose `variables` include the created ones, and the attribute of the model
whose `trainable_variables` are exactly the ones the optimizer was built for
(`_trainable_variables`, which `BaseOptimizer.build` sets:
https://github.com/keras-team/keras/blob/v3.15.0/keras/src/optimizers/base_optimizer.py).
A Keras 3 variable on TensorFlow holds its `tf.Variable` as `_value`
(https://github.com/keras-team/keras/blob/v3.15.0/keras/src/backend/common/variables.py),
the object `tf.function`'s `_created_variables` references.
tests/compat/tensorflow/test_compat_keras_optimizers.py checks both.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

from traceguard._compat._keras_calls import is_keras_frame, keras_method_frame
from traceguard._core.keras_names import OptimizerBuild


def _is_optimizer(value: Any) -> bool:
    return hasattr(value, "apply_gradients") and hasattr(value, "_trainable_variables") \
        and hasattr(value, "variables")


def _ids(variables: Any) -> set[int]:
    return {id(getattr(variable, "_value", variable)) for variable in variables or ()}


def _user_name(model: Any, frame: Any) -> str:
    """The name the code that called `fit` gives the model (`gan`), else `model`."""
    caller = frame.f_back
    while caller is not None and is_keras_frame(caller):
        caller = caller.f_back  # Keras's own wrappers of `fit` (the traceback filter).
    if caller is not None:
        # Before Python 3.13 (PEP 667), reading a function frame's `f_locals` leaves a snapshot on
        # the frame that keeps its objects alive after the code deletes them (a `TraceMonitor` the
        # user dropped went on watching): only a module's scope, whose locals are its globals.
        function_frame = caller.f_code.co_flags & inspect.CO_OPTIMIZED
        scopes = (caller.f_locals, caller.f_globals) if sys.version_info >= (3, 13) or not function_frame \
            else (caller.f_globals,)
        for scope in scopes:
            for name, value in scope.items():
                if value is model and name.isidentifier() and not name.startswith("_"):
                    return name
    return "model"


def optimizer_builds(created: Sequence[Any], start: Any = None) -> tuple[OptimizerBuild, ...]:
    """The optimizers of the model being fitted that own any of `created` (live variables), with
    the expressions that build them; () when none is found (no Keras method on the stack)."""
    frame = keras_method_frame(sys._getframe(1) if start is None else start)
    if frame is None or not created:
        return ()
    model = frame.f_locals["self"]
    created_ids = _ids(created)
    attributes = [(name, value) for name, value in vars(model).items() if not name.startswith("_")]
    name = _user_name(model, frame)
    builds = []
    for attribute, optimizer in attributes:
        if not _is_optimizer(optimizer) or not created_ids & _ids(optimizer.variables):
            continue
        built_for = _ids(optimizer._trainable_variables)
        target = next((f"{name}.{other}.trainable_variables" for other, value in attributes
                       if value is not optimizer and hasattr(value, "trainable_variables")
                       and not _is_optimizer(value) and _ids(value.trainable_variables) == built_for), None)
        if target is None and _ids(model.trainable_variables) == built_for:
            target = f"{name}.trainable_variables"
        builds.append(OptimizerBuild(f"{name}.{attribute}", target))
    return tuple(builds)


__all__ = ["optimizer_builds"]
