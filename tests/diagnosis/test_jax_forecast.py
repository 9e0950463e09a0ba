"""`traceguard.forecast` on Keras 3's JAX backend: outside what it foresees, and it says so.

Measured (Keras 3.15.1, JAX 0.10.2): `fit` on 70 samples in batches of 32 traces `train_step`
for the batch of 32 and again for the last batch of 6 (a `jax.jit` cache miss per batch
shape, the model's whole state an argument), and no variable retrace. Not foreseen yet.
"""

import keras
import numpy as np
import pytest

import traceguard as tg

pytestmark = pytest.mark.backend("jax")


def test_forecast_on_jax_says_it_is_outside_and_checks_nothing():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x, y = np.ones((70, 4)), np.ones((70, 1))
    forecast = tg.forecast(model, x, y, batch_size=32)
    assert not forecast.foreseeable and forecast.traces == ()
    assert [item.code.value for item in forecast.outside] == ["backend"]
    assert "Keras 3 on JAX" in str(forecast)
    with tg.watch() as watched:
        model.fit(x, y, batch_size=32, verbose=0)
    steps = [(event.function, event.kind.value)
             for runs in watched.functions.values() for event in runs.events]
    assert steps == [("train_step", "trace"), ("train_step", "retrace")]
    assert not forecast.check(watched).ok
