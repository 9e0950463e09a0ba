"""The words of a fix, checked against what JAX does: three `fit` calls pay one partial-batch retrace."""

import numpy as np
import pytest

import traceguard as tg

pytestmark = pytest.mark.backend("jax")


def test_partial_batch_fix_says_the_retrace_is_paid_once_not_per_fit_call():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    with tg.watch() as report:
        for _ in range(3):
            model.fit(np.ones((70, 3), "float32"), np.ones((70, 2), "float32"), batch_size=32, verbose=0)
    (step,) = [runs for runs in report.functions.values() if runs.function == "train_step"]
    assert [event.kind.value for event in step.events] == ["trace", "retrace"]  # JAX's own cache misses.
    hint = step.events[1].hint
    assert "the first time it comes (later `fit` calls of the model reuse it)" in hint
    assert "once per `fit` call" not in hint
    assert "1. `train_step`: 1 retrace (#2), " in report.summary()
