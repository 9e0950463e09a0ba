"""Trains traced and plain models under MirroredStrategy on two logical CPUs; prints JSON.

Run in a subprocess by tests/stories/test_distribute.py: logical devices must be set
before TensorFlow initialises its runtime, which the test process already did.
"""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402

keras = _compat.keras


class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
    pass


def describe(layer):
    return [{"kind": e.kind.value, "function": e.function, "replica": e.replica,
             "signature": {k: str(v) for k, v in e.signature.items()},
             "changes": [str(c) for c in e.changes], "error": e.error}
            for e in layer.trace_log]


def fit_and_predict(layer_class, strategy, x, y):
    keras.utils.set_random_seed(0)
    with strategy.scope():
        inputs = keras.Input((3,))
        layer = layer_class(2, name="dense")
        model = keras.Model(inputs, layer(inputs))
        model.compile(optimizer="sgd", loss="mse")
    if isinstance(layer, TracedDense):
        layer.trace_log.clear()
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    predictions = model.predict(x, batch_size=8, verbose=0)
    result = {"loss": history.history["loss"], "predictions": predictions.tolist(),
              "weights": [w.tolist() for w in model.get_weights()]}
    if isinstance(layer, TracedDense):
        result["events"] = describe(layer)
    return result


def custom_loop(strategy):
    with strategy.scope():
        layer = TracedDense(2, name="fresh")  # Built by its first trace, in replica 0.

    @tf.function
    def step(x):
        return strategy.run(layer, args=(x,))

    step(tf.ones((8, 3)))
    step(tf.ones((8, 3)))
    step(tf.ones((4, 3)))
    return {"events": describe(layer), "tracing_count": step.experimental_get_tracing_count()}


def main():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    x = rng.random((32, 3)).astype("float32")
    y = rng.random((32, 2)).astype("float32")
    print(json.dumps({
        "replicas": strategy.num_replicas_in_sync,
        "keras_3": _compat.IS_KERAS_3,
        "traced": fit_and_predict(TracedDense, strategy, x, y),
        "plain": fit_and_predict(keras.layers.Dense, strategy, x, y),
        "custom_loop": custom_loop(strategy),
    }))


if __name__ == "__main__":
    main()
