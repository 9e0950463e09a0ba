"""The optimizers a Keras step's first trace created variables for (`_compat._keras_optimizers`).

When one of these fails after a Keras or TensorFlow upgrade, what the module reads
moved: `BaseOptimizer._trainable_variables` (set by `build`), a Keras variable's
`_value` (the `tf.Variable` that `tf.function`'s `_created_variables` references),
or the `fit` frame the step runs under.
"""

import sys

import numpy as np
import pytest
import tensorflow as tf

from traceguard import _compat
from traceguard._compat import _keras_optimizers
from traceguard._core.keras_names import OptimizerBuild

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3's optimizers")
def test_the_internals_read_are_where_this_keras_keeps_them():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    assert [id(v) for v in optimizer._trainable_variables] == [id(v) for v in model.trainable_variables]
    assert all(isinstance(variable._value, tf.Variable) for variable in optimizer.variables)


class TwoOptimizers(keras.Model):
    """A custom `train_step` that updates each half with an optimizer of its own."""

    def __init__(self):
        super().__init__()
        self.first = keras.layers.Dense(2)
        self.second = keras.layers.Dense(1)
        self.found = None

    def compile(self, first_optimizer, second_optimizer):
        super().compile()
        self.first_optimizer, self.second_optimizer = first_optimizer, second_optimizer

    def call(self, x):
        return self.second(self.first(x))

    def train_step(self, data):
        x, y = data
        for optimizer, layer in ((self.first_optimizer, self.first), (self.second_optimizer, self.second)):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x) - y))
            gradients = tape.gradient(loss, layer.trainable_variables)
            optimizer.apply_gradients(zip(gradients, layer.trainable_variables))
        # Under `fit`, as the trace hook is: which optimizers own the variables made so far.
        created = [variable._value for optimizer in (self.first_optimizer, self.second_optimizer)
                   for variable in optimizer.variables]
        self.found = _keras_optimizers.optimizer_builds(created)
        return {"loss": loss}


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3's optimizers")
def test_the_optimizers_a_step_uses_are_named_from_the_model_and_the_caller():
    gan = TwoOptimizers()
    gan(np.ones((1, 3), "float32"))
    gan.compile(keras.optimizers.Adam(), keras.optimizers.SGD(momentum=0.9))
    gan.fit(np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), epochs=1, verbose=0)
    # `fit` is called from this function: its locals are read on Python >= 3.13 only (before PEP 667
    # a read leaves a snapshot that keeps them alive), so the model is `model` there.
    name = "gan" if sys.version_info >= (3, 13) else "model"
    assert gan.found == (OptimizerBuild(f"{name}.first_optimizer", f"{name}.first.trainable_variables"),
                         OptimizerBuild(f"{name}.second_optimizer", f"{name}.second.trainable_variables"))
    assert str(gan.found[0]) == f"{name}.first_optimizer.build({name}.first.trainable_variables)"
    assert _keras_optimizers.optimizer_builds(list(gan.variables)) == ()  # No `fit` on the stack.
