import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402

keras = _compat.keras


class SeedLayer(tg.TraceAwareLayer):
    """The layer of the question "why does tf.function trace my layer twice?"."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(32)

    def call(self, inputs):
        return self.dense(inputs)


class PlainSeedLayer(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(32)

    def call(self, inputs):
        return self.dense(inputs)


@pytest.fixture
def seed_input():
    return tf.random.uniform([60, 28, 28], seed=1)


def kinds(layer):
    return [event.kind.value for event in layer.trace_log]


def output_lines(capfd):
    """Lines written to stdout since the last read, by Python or by tf.print (fd 1); no stderr."""
    captured = capfd.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()
