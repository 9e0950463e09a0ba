"""`traceguard.no_retrace()` on Keras 3's JAX backend: raised from `jax.jit` and from `fit`."""

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from helpers import texts

import traceguard as tg
from traceguard._compat import _function_tracing
from traceguard._record import observers

pytestmark = pytest.mark.backend("jax")

HERE = __file__


def line_of(text):
    with open(HERE) as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


def assert_clean():
    assert observers.observers == () and observers.function_records is None
    assert not _function_tracing.is_installed() and _function_tracing.running_traces() == ()


def test_jit_retrace_inside_the_block_raises_from_the_jitted_call():
    @jax.jit
    def double(x):
        return x * 2

    with tg.watch():
        double(jnp.ones((3,)))
        with tg.no_retrace():
            double(jnp.ones((3,)))
            with pytest.raises(tg.RetraceError) as raised:
                double(jnp.ones((4,)))  # jit-call
    error = raised.value
    assert type(error) is tg.RetraceError  # Not wrapped by JAX.
    assert (error.function, error.kind, texts(error.changes)) == ("double", "retrace", ("x: dim 0 3 -> 4",))
    assert str(error.call_site) == f"{HERE}:{line_of('# jit-call')}"
    assert str(error).startswith("`double` retraced inside the `traceguard.no_retrace()` block.\n")
    assert "   why: The jax.jit `double` traced again because the signature changed: x: dim 0 3 -> 4.\n" \
        in str(error)
    assert_clean()
    assert double(jnp.ones((4,))).tolist() == [2.0] * 4  # Outside the block it traces and runs.


def test_fit_with_a_partial_batch_raises_from_fit_on_jax():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((70, 4), "float32"), np.ones((70, 1), "float32")
    with tg.watch():
        model.fit(x[:64], y[:64], batch_size=32, verbose=0)
        with tg.no_retrace():
            with pytest.raises(tg.RetraceError) as raised:
                model.fit(x, y, batch_size=32, verbose=0)  # fit-call
    error = raised.value
    assert type(error) is tg.RetraceError
    assert (error.function, error.kind) == ("train_step", "retrace")
    assert texts(error.changes) == ("data[0]: dim 0 32 -> 6", "data[1]: dim 0 32 -> 6")
    assert str(error.call_site) == f"{HERE}:{line_of('# fit-call')}"
    assert "`fit` got 70 samples in batches of 32: the last batch of 6" in error.hint
    assert "`train_step` (the step of `fit`) retraced inside the `traceguard.no_retrace()` block." \
        in str(error)
    assert_clean()
