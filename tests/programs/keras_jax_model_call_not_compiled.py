"""Calling a compiled Keras model directly on JAX: the Dropout body runs every call, but nothing traces.

Source:
  https://github.com/keras-team/keras-core/issues/762
  https://github.com/keras-team/keras/issues/21530

The reporter compiles a Dropout model with `model.compile(jit_compile=True)`,
calls `model(x, training=True)` five times with a print in the backend's
`dropout` and concludes that the "compiled model" retraces random functions at
every call on TensorFlow and JAX. What Keras does (hertschuh, keras#21530):
`compile()`'s `jit_compile` applies to the step functions of `fit`, `evaluate`
and `predict`; `model(x)` "is run eagerly, not compiled", so each call runs the
layer's Python, and the print fires every time without any trace. Measured with
keras 3.15.1 on jax 0.10.2: `jax_explain_cache_misses` logs no miss for the
model, its layers or the user's code during the five calls (Keras's own
symbolic `compute_output_spec` runs only while building the model). A negative
control: a report must not call the five eager calls traces or retraces; it may
say once that nothing is compiled (the model is called directly, outside
`fit`/`predict`), and that `predict_on_batch` or a `jax.jit` of
`model.stateless_call` compiles it.

Expected:
  function: dropout
  cause: none-expected
  changed: "(nothing)"
  fix: nothing retraces; model(x) runs eagerly on JAX (compile() only compiles fit/evaluate/predict); for a compiled call use predict_on_batch or jax.jit over model.stateless_call
  fix_keywords: ["eager"]
  forbidden_keywords: []
  traces: 0
  backend: jax
  kinds: []
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

from keras import Model, layers, ops  # noqa: E402


def build_model():
    inp = layers.Input(shape=(3,), batch_size=1)
    out = layers.Dropout(0.5, seed=1234)(inp)
    return Model(inp, out)


model = build_model()
model.compile(jit_compile=True)

# Test the model for a constant input
x = ops.ones((1, 3))
drop_layer = model.layers[-1]
for _ in range(5):
    y = model(x, training=True)
    print(" | Generator state: ", drop_layer.seed_generator.state.value)
    print("Model output: ", y)
    print("=" * 75)
