"""`python -m traceguard demo` on Keras 3's JAX backend: the seed layer under `jax.jit`.

JAX has no `tf.function(layer)`: a Keras layer runs under `jax.jit` through
`stateless_call`, which takes the variables as arguments, so the layer is built
(called once) first and there is no trace for variable creation.
"""

from __future__ import annotations

from typing import TextIO


def run_jax_demo(out: TextIO) -> None:
    """Runs the seed layer eagerly, then under `jax.jit` for two batch sizes."""
    import jax
    import jax.numpy as jnp

    from traceguard import _compat
    from traceguard._record.layer import TraceAwareLayer

    keras = _compat.keras

    class EagerLayer(TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            print("  print() in call: tracing!", file=out)
            return self.dense(inputs)

    def say(text: str = "") -> None:
        print(text, file=out)

    say(f"traceguard demo on {_compat.describe_versions()}")
    say()
    say("1. The question's layer, subclassing traceguard.TraceAwareLayer, called once eagerly:")
    say("   layer = EagerLayer(); layer(x)")
    x = jnp.ones((60, 28, 28))
    layer = EagerLayer()
    layer(x)
    say(f"   -> {layer.trace_log.count('symbolic')} symbolic run, "
        f"{layer.trace_log.eager_calls} eager run.")
    say()
    say("2. Under jax.jit through stateless_call: step(x); step(x); step(x[:30])")

    @jax.jit
    def step(trainable, non_trainable, inputs):
        outputs, _ = layer.stateless_call(trainable, non_trainable, inputs)
        return outputs

    trainable = [v.value for v in layer.trainable_variables]
    non_trainable = [v.value for v in layer.non_trainable_variables]
    step(trainable, non_trainable, x)
    step(trainable, non_trainable, x)
    step(trainable, non_trainable, x[:30])
    jit_runs = layer.trace_log.count("trace") + layer.trace_log.count("retrace")
    say(f"   -> call's body ran {jit_runs} times under jax.jit, once per batch size; the second "
        "call ran the compiled function only.")
    say()
    say(layer.trace_log.summary())
