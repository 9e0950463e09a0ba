"""RetraceError: its public identity, and why it must stay a direct `Exception` subclass."""

import pytest
import tensorflow as tf
from conftest import keras, kinds

import traceguard as tg

pytestmark = pytest.mark.backend("tensorflow")


class RuntimeErrorSubclass(RuntimeError):
    pass


class Raises(keras.layers.Layer):
    """A built layer whose `call` raises `error_class` while traced."""

    def __init__(self, error_class, **kwargs):
        super().__init__(**kwargs)
        self.error_class = error_class
        self.built = True

    def call(self, inputs):
        raise self.error_class("raised in call")


def test_retrace_error_is_a_public_direct_exception_subclass():
    assert tg.RetraceError.__bases__ == (Exception,)
    assert tg.RetraceError.__module__ == "traceguard"
    assert tg.RetraceError.__qualname__ == "RetraceError"


def test_autograph_wraps_a_runtime_error_subclass_in_staging_error():
    # The reason RetraceError does not derive from RuntimeError: raised while
    # AutoGraph converts the caller, TF 2.21 replaces it with a StagingError.
    layer = Raises(RuntimeErrorSubclass)
    step = tf.function(lambda x: layer(x) * 2)
    with pytest.raises(Exception, match="raised in call") as info:
        step(tf.ones((2,)))
    assert type(info.value).__name__ == "StagingError"
    assert not isinstance(info.value, RuntimeErrorSubclass)


def test_autograph_lets_retrace_error_through_as_itself():
    layer = Raises(tg.RetraceError)
    step = tf.function(lambda x: layer(x) * 2)
    with pytest.raises(tg.RetraceError, match="raised in call") as info:
        step(tf.ones((2,)))
    assert type(info.value) is tg.RetraceError


def test_budget_raise_inside_an_autograph_converted_function_reaches_the_caller(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(max_traces=1, on_retrace="raise", name="budgeted")
    layer(seed_input)  # Built eagerly: each new shape costs exactly one trace.

    @tf.function
    def step(x):
        return layer(x) * 2

    step(seed_input)
    with pytest.raises(tg.RetraceError, match="Layer 'budgeted' traced 2 times") as info:
        step(seed_input[:7])
    assert type(info.value) is tg.RetraceError
    assert "Changed: inputs: dim 0 60 -> 7" in str(info.value)
    assert kinds(layer) == keras_flavor.pick(["symbolic"], []) + ["trace", "retrace"]
