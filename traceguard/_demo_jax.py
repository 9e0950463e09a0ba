"""`python -m traceguard demo` on JAX: the seed layer under `jax.jit`, or plain `jax.jit`.

JAX has no `tf.function(layer)`: a Keras layer runs under `jax.jit` through
`stateless_call`, which takes the variables as arguments, so the layer is built
(called once) first and there is no trace for variable creation. Without Keras,
the demo is a plain jitted function fed a new batch size, under `watch()`.
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


# The plain-JAX demo's program, run as the user's code would be: traceguard reports the functions of
# its users, not its own (a function defined in traceguard's package is a library's).
PLAIN_JAX_PROGRAM = """\
import jax
import jax.numpy as jnp

@jax.jit
def step(weights, inputs):
    return jnp.tanh(inputs @ weights).sum()

weights = jnp.ones((4, 3))
for rows in (8, 8, 5):
    step(weights, jnp.ones((rows, 4)))
"""
PLAIN_JAX_FILE = "traceguard_demo.py"


def run_plain_jax_demo(out: TextIO) -> None:
    """Runs `PLAIN_JAX_PROGRAM` under `watch()`, and prints the program and its report."""
    import jax

    from traceguard._diagnosis.watch import watch  # It logs why Keras is not recorded, if installed.

    def say(text: str = "") -> None:
        print(text, file=out)

    say(f"traceguard demo on JAX {jax.__version__}, without Keras: plain jax.jit")
    say()
    say(f"A jitted step fed batches of 8, 8, then 5 rows ({PLAIN_JAX_FILE}):")
    say()
    for line in PLAIN_JAX_PROGRAM.splitlines():
        say(f"    {line}")
    say()
    with watch() as report:
        exec(compile(PLAIN_JAX_PROGRAM, PLAIN_JAX_FILE, "exec"), {"__name__": "__main__"})  # noqa: S102
    report.title = f"run {PLAIN_JAX_FILE}"
    say("jax.jit traced `step` once per batch size; the second call of 8 rows hit its cache:")
    say()
    say(report.summary())
