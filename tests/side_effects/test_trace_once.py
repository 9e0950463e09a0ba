"""trace_once: at most once per layer and input signature, or per function outside layers."""

import inspect

import pytest
import tensorflow as tf
from conftest import keras

import traceguard as tg

pytestmark = pytest.mark.backend("tensorflow")


def test_trace_once_runs_once_per_layer_and_signature(seed_input):
    runs = []

    class Described(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @tg.trace_once
        def describe(self, inputs):
            runs.append((self.name, tuple(inputs.shape)))
            return len(runs)

        def call(self, inputs):
            self.seen = self.describe(inputs)
            return self.dense(inputs)

    layer = Described(name="described")
    step = tf.function(layer)
    step(seed_input)  # symbolic, trace, variable_retrace: one run.
    step(seed_input)
    assert runs == [("described", (60, 28, 28))]
    step(seed_input[:32])
    layer(seed_input)  # Eager, a signature already seen: the first result.
    assert runs == [("described", (60, 28, 28)), ("described", (32, 28, 28))]
    assert layer.seen == 1
    Described(name="other")(seed_input[:5])
    assert runs[-1] == ("other", (5, 28, 28)) and len(runs) == 3


def test_trace_once_outside_layers_runs_once_per_function_and_retries_after_an_error():
    calls = []

    @tg.trace_once
    def setup(value):
        calls.append(value)
        if value == "fails":
            raise KeyError(value)
        return value

    with pytest.raises(KeyError):
        setup("fails")
    assert setup("first") == "first"
    assert setup("second") == "first"
    assert calls == ["fails", "first"]
    assert inspect.signature(setup) == inspect.signature(setup.__wrapped__)
