"""XLA: models and functions compiled with jit_compile=True work with trace-aware layers."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras, kinds

import traceguard as tg


def relu_dense_class(base):
    """The same layer on `base`, so the traced and plain models match weight for weight."""

    class ReluDense(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(8)

        def call(self, inputs):
            return tf.nn.relu(self.dense(inputs))

    return ReluDense


class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
    pass


def compiled_model(traced):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = relu_dense_class(tg.TraceAwareLayer if traced else keras.layers.Layer)(name="hidden")(inputs)
    outputs = (TracedDense if traced else keras.layers.Dense)(2, name="out")(hidden)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    return model


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.random((64, 4)).astype("float32"), rng.random((64, 2)).astype("float32")


def fit_and_predict(model, data):
    x, y = data
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return history.history["loss"], model.predict(x, batch_size=16, verbose=0)


def test_jit_compiled_model_trains_and_predicts_as_the_plain_model(data):
    traced = compiled_model(traced=True)
    for name in ("hidden", "out"):
        traced.get_layer(name).trace_log.clear()
    traced_loss, traced_predictions = fit_and_predict(traced, data)
    plain_loss, plain_predictions = fit_and_predict(compiled_model(traced=False), data)
    assert traced_loss == plain_loss
    np.testing.assert_array_equal(traced_predictions, plain_predictions)
    # Keras runs the layers in its jit-compiled `one_step_on_data`: one for fit, one for predict.
    for name in ("hidden", "out"):
        events = traced.get_layer(name).trace_log
        assert [(e.kind.value, e.function) for e in events] == [("trace", "one_step_on_data")] * 2
        assert all(e.error is None for e in events)


def test_jit_compiled_tf_function_records_the_same_kinds_as_without_xla():
    xla_layer, plain_layer = (relu_dense_class(tg.TraceAwareLayer)() for _ in range(2))
    xla_step = tf.function(xla_layer, jit_compile=True)
    assert xla_step(tf.ones((3, 4))).shape == (3, 8)
    tf.function(plain_layer)(tf.ones((3, 4)))
    assert kinds(xla_layer) == kinds(plain_layer) == ["symbolic", "trace", "variable_retrace"]
    xla_step(tf.ones((5, 4)))
    assert kinds(xla_layer)[-1] == "retrace"
    assert xla_layer.trace_log[-1].changes == ("inputs: dim 0 3 -> 5",)
