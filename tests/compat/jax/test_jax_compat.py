"""Each JAX / Keras-on-JAX internal traceguard relies on, checked on the installed versions.

When one of these fails after an upgrade, `traceguard/_compat/jax/backend.py` needs a new branch.
"""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import keras
import pytest
from keras.src.backend.common.symbolic_scope import in_symbolic_scope

from traceguard import _compat
from traceguard._compat import _flavors, _frames, _function_calls
from traceguard._compat.jax import backend as _jax
from traceguard._compat.jax import keys as _jax_keys
from traceguard._record import observers as _observers

pytestmark = pytest.mark.backend("jax")


def test_trace_state_is_clean_only_outside_jax_traces():
    seen = []

    def probe(x):
        seen.append(_compat.executing_eagerly())
        return x

    probe(jnp.ones(2))
    jax.jit(probe)(jnp.ones(3))
    jax.eval_shape(probe, jnp.ones(4))
    jax.grad(lambda x: probe(x).sum())(jnp.ones(5))
    assert seen == [True, False, False, False]


def test_enclosing_jit_names_the_jitted_function_from_cache_miss():
    seen = []

    def train_step(x):
        seen.append(_compat.enclosing_tf_function())
        return x

    jitted = jax.jit(train_step)
    jitted(jnp.ones(2))
    jitted(jnp.ones(2))  # Cached: no trace, no Python run.
    jitted(jnp.ones(3))
    jax.eval_shape(train_step, jnp.ones(4))  # A trace, but not by jax.jit.
    first, second, outside = seen
    assert (first.name, second.name) == ("train_step", "train_step")
    assert first.key() is train_step and first.creates_variables is None
    assert outside is None
    assert _jax._JAX_CACHE_MISS_CODE.co_name == "cache_miss"


def test_enclosing_jit_of_a_bound_method_is_its_function():
    # Keras's JAX trainer jits `self.train_step`, a bound method.
    seen = []

    class Model:
        def predict_step(self, x):
            seen.append(_compat.enclosing_tf_function())
            return x

    jax.jit(Model().predict_step)(jnp.ones(2))
    assert seen[0].name == "predict_step"
    assert seen[0].key() is Model.predict_step


def test_keras_compute_output_spec_runs_in_symbolic_scope():
    seen = []

    class Probe(keras.layers.Layer):  # No `build()`: the first call builds it symbolically.
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            seen.append((in_symbolic_scope(), isinstance(x, jax.core.Tracer)))
            return self.dense(x)

    Probe()(jnp.ones((2, 3)))
    assert seen == [(True, True), (False, False)]
    assert _compat.in_symbolic_build() is False


def test_symbolic_pass_finds_compute_output_spec_above_jax_eval_shape():
    # Keras on JAX calls `call` from `compute_output_spec`'s nested `wrapped_fn`, under
    # `jax.eval_shape`; `_maybe_build` asks for the pass that builds a layer without `build()`.
    seen = []

    class Probe(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(2)

        def call(self, inputs):
            seen.append(_frames.symbolic_pass(type(self), sys._getframe(1)))
            return self.dense(inputs)

    inputs = keras.Input((3,))
    keras.Model(inputs, Probe()(inputs))
    assert seen == ["build", "output"]
    from keras.src.backend.jax import core

    codes = _frames.output_spec_codes()
    assert codes[core.compute_output_spec.__code__] == "spec"
    assert sorted(codes.values()) == ["jax", "spec"]


def test_the_tensorflow_questions_have_neutral_answers_on_jax():
    assert getattr(_compat, "tf", None) is None and _compat.TF_VERSION is None
    assert _compat.current_graph_name() is None
    assert _compat.default_graph() is None
    assert _compat.current_replica() is None
    assert _compat.in_save_context() is False
    assert _compat.deferred_variable_paths(keras.layers.Dense(2).variables) == ()
    with _compat.variable_creation_watch(lambda variable: None):
        pass
    _compat.stop_creation_watch(_compat.start_creation_watch(lambda variable: None))


def test_keras_tensor_spec_reader_reads_what_the_public_properties_say():
    # Keras's symbolic pass runs `call` on KerasTensors, whose `_shape` and `_dtype` are read.
    tensor = keras.KerasTensor((None, 3), dtype="int32")
    read_spec = _compat.tensor_spec_reader(keras.KerasTensor)
    assert read_spec is not None and _compat.tensor_spec_reader(jax.Array) is None
    assert read_spec(tensor) == (tensor.dtype, tuple(tensor.shape)) == ("int32", (None, 3))


def test_compat_answers_with_the_jax_backend():
    assert all(getattr(_compat, name) is getattr(_jax, name) for name in _jax.__all__)
    assert _compat.DEFAULT_FLAVOR is _compat.keras3_flavor() is _flavors.DEFAULT_FLAVOR
    assert _compat.TRACER == "jax.jit"


def test_print_at_each_execution_prints_runtime_values_under_jit(capsys):
    @jax.jit
    def step(x):
        _jax.print_at_each_execution(["x {=}", x, "3"], sys.stdout, " ", "\n")
        _jax.print_at_each_execution(["err", x], sys.stderr, "-", "!")
        return x + 1

    step(jnp.arange(2.0))
    step(jnp.arange(2.0) + 1)  # Cached: only the compiled prints run.
    captured = capsys.readouterr()
    assert captured.out == "x {=} [0. 1.] 3\nx {=} [1. 2.] 3\n"
    assert captured.err == "err-[0. 1.]!err-[1. 2.]!"


def test_holds_array_sees_arrays_and_tracers_in_structures():
    seen = []
    jax.jit(lambda x: seen.append(_jax.holds_tensor({"a": [x]})) or x)(jnp.ones(2))
    assert seen == [True]
    assert _jax.holds_tensor((jnp.ones(1),)) is True
    assert _jax.holds_tensor(["text", 3, None]) is False


def test_a_backend_other_than_tensorflow_jax_or_torch_is_refused_at_first_use():
    code = "import traceguard; traceguard.TraceAwareLayer"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "numpy"}, timeout=300)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "ImportError: traceguard records Keras 3 on the backends tensorflow, jax, torch. "
        f"Received: KERAS_BACKEND='numpy' (Keras {keras.__version__}).")


def test_tf_use_legacy_keras_means_tensorflow_without_asking_keras():
    # tf_keras runs on TensorFlow only: traceguard goes for TensorFlow even with
    # KERAS_BACKEND=jax, and says what is missing where it is not installed.
    code = ("import os; os.environ['TF_USE_LEGACY_KERAS'] = '1'\n"
            "try:\n    from traceguard import _compat; print(_compat.BACKEND)\n"
            "except ModuleNotFoundError as error:\n    print(error.name)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "KERAS_BACKEND": "jax"}, timeout=300)
    assert result.stdout.split() == ["tensorflow"], result.stderr


def test_a_listener_error_that_stops_the_trace_reaches_the_jitted_call_and_nothing_is_cached():
    from traceguard._compat import _function_tracing

    class Stop(Exception):
        stops_trace = True

    def stop(tracing):
        raise Stop(tracing.name)

    @jax.jit
    def double(x):
        return x * 2

    with _observers.listening_to_traces(stop):
        for _ in range(2):  # JAX cached nothing: the second call traces, and stops, again.
            with pytest.raises(Stop):
                double(jnp.ones((2,)))
        assert _function_tracing.running_traces() == ()
        # Stopped in the report of `jnp.ones`'s compilation too: every call closed all the same.
        assert _function_calls.current_call() is None
    assert double(jnp.ones((2,))).tolist() == [2.0, 2.0]


def test_distributed_process_is_none_outside_jax_distributed_and_initializes_nothing():
    # `jax.distributed.is_initialized()` reads the distributed client: a process of no job gets
    # None. tests/stories/test_jax_multi_process.py checks the index of each process of a real job.
    assert not jax.distributed.is_initialized()
    assert _compat.distributed_process() is None


def test_trace_to_jaxpr_announces_each_run_of_the_body_with_a_test_event():
    # The hook tells a trace from a call JAX's tracing cache served by this event (#31).
    from jax._src import util

    from traceguard._compat.jax import traces as _jax_traces

    events, bodies = [], []
    previous = util.test_event_listener
    util.test_event_listener = lambda name, *args: events.append(name)

    def body(i):
        bodies.append(events.count("trace_to_jaxpr"))  # Announced before the body runs.
        return i + 1

    try:
        step = jax.jit(body)
        i = step(0)
        announced = events.count("trace_to_jaxpr")
        step(i)  # A weakly typed int32: the Python int's key, so the tracing cache serves it.
        served = events.count("trace_to_jaxpr") - announced
    finally:
        util.test_event_listener = previous
    assert bodies and bodies[0] >= 1 and len(bodies) == 1 and served == 0
    assert _jax_traces._ORIGINAL is not None and not _jax_traces.is_installed()


def test_the_tracing_context_is_read_by_name_as_jax_keys_it():
    # jax/_src/config.py: `trace_context()` and `trace_context_names()` (a jaxlib with both).
    assert _jax_keys._config is not None, "jax._src.config moved: the tracing context is not compared"
    names = [name for name, _ in _jax_keys.tracing_context()]
    assert {"jax_enable_x64", "jax_default_matmul_precision"} <= set(names), names
    with jax.default_matmul_precision("float32"):
        assert dict(_jax_keys.tracing_context())["jax_default_matmul_precision"] == "float32"
    assert dict(_jax_keys.tracing_context())["jax_default_matmul_precision"] is None


@pytest.mark.parametrize("environment, keras_json, backend", [
    ({}, '{"backend": "jax"}', "jax"),
    ({"KERAS_BACKEND": "jax"}, '{"backend": "tensorflow"}', "jax"),
    ({"KERAS_BACKEND": ""}, '{"backend": "jax", "floatx": "float32"}', "jax"),
])
def test_keras_backend_setting_agrees_with_keras(tmp_path, environment, keras_json, backend):
    # `_backend.keras_backend_setting` follows keras/src/backend/config.py without importing Keras:
    # a Keras that reads its setting elsewhere fails here.
    (tmp_path / "keras.json").write_text(keras_json)
    env = {name: value for name, value in os.environ.items() if name != "KERAS_BACKEND"}
    env.update(KERAS_HOME=str(tmp_path), **environment)
    code = ("from traceguard._compat._backend import keras_backend_setting\n"
            "ours = keras_backend_setting()[0]\n"
            "import keras\n"
            "print(ours, keras.backend.backend())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [backend, backend]
