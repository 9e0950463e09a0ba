"""What JAX keys besides abstract values, recorded on real runs (#38).

The call's positional/keyword structure, a pytree node's type and auxiliary data
(static fields), a dict's keys, a compilation for a newly committed argument, and
Python run under JAX transformations that keep no cache (Keras `jit_compile=False`).
Each case is also held against `jax_explain_cache_misses` in
tests/stories/test_jax_explain_parity.py.
"""


import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import keras

import traceguard as tg

pytestmark = pytest.mark.backend("jax")


def _function_events(explanation, name):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == name]
    return runs.events


# --- Python under transformations that keep no cache ---------------------------------------
def test_keras_fit_with_jit_compile_false_records_eager_runs_and_no_retrace():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="fc1"),
                              keras.layers.Dense(1, name="out")])
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
    rng = np.random.default_rng(0)
    with tg.watch() as explanation:
        model.fit(rng.random((64, 4)), rng.random((64, 1)), batch_size=16, verbose=0)
    counts = explanation.layers["fc1"].counts()
    # Before #38: 1 trace and 3 retraces "because something outside the layer changed".
    assert (counts["trace"], counts["retrace"], counts["eager"]) == (0, 0, 4)
    assert explanation.functions == {}
    assert explanation.uncached == {("grad",): ("train_step", "jit_compile=False")}
    report = str(explanation)
    assert report.count("Keras ran `train_step` without `jax.jit` (`jit_compile=False`)") == 1
    assert "nothing is compiled" in report


def test_grad_and_vmap_run_eagerly_are_no_trace_but_inside_jit_they_are():
    layer = keras.layers.Dense(2)
    layer.build((None, 3))

    def loss(x):
        return layer(x).sum()

    with tg.watch() as explanation:
        jax.grad(loss)(jnp.ones((4, 3)))
        jax.grad(loss)(jnp.ones((4, 3)))
        jax.vmap(loss)(jnp.ones((5, 4, 3)))
        jax.jit(jax.grad(loss))(jnp.ones((4, 3)))
    runs = explanation.layers[layer.name]
    assert [event.kind.value for event in runs.events] == ["trace"]
    assert runs.counts()["eager"] == 3
    assert explanation.uncached == {("grad",): None, ("vmap",): None}
