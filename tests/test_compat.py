"""Each TensorFlow / Keras internal traceguard relies on, checked on the installed versions.

When one of these fails after an upgrade, `traceguard/_compat.py` needs a new branch.
"""

import contextlib
import io
import subprocess
import sys
import threading

import pytest
import tensorflow as tf
from conftest import keras

from traceguard import _compat
from traceguard._routed_globals import copy_with_print


def test_keras_flavor_follows_tf_keras():
    assert _compat.KERAS_FLAVOR == "keras3"
    assert _compat.LayerBase is keras.layers.Layer


def test_symbolic_scope_is_seen_during_compute_output_spec():
    seen = []

    class Probe(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)  # Unbuilt state: Keras builds by a symbolic run.

        def call(self, inputs):
            seen.append(_compat.in_symbolic_build())
            return self.dense(inputs)

    Probe()(tf.ones((1, 1)))
    assert seen == [True, False]


def test_tf_function_phase_and_identity_are_found_from_the_stack():
    frames = []
    holder = {}

    def body(x):
        frames.append(_compat.enclosing_tf_function())
        if "v" not in holder:
            holder["v"] = tf.Variable(1.0)
        return x * holder["v"]

    step = tf.function(body)
    step(tf.ones(()))
    assert [f.creates_variables for f in frames] == [True, False]
    assert {f.name for f in frames} == {"body"}
    assert frames[0].key() is step and frames[1].key() is step
    assert _compat.enclosing_tf_function() is None


def test_each_trace_is_identified_by_the_func_graph_being_built():
    seen = []

    def body(x):
        seen.append((_compat.enclosing_tf_function().trace, tf.compat.v1.get_default_graph()))
        return x

    step = tf.function(body)
    step(tf.ones(()))
    step(tf.ones((2,)))
    assert [trace() for trace, _ in seen] == [graph for _, graph in seen]
    assert seen[0][0] != seen[1][0]
    assert seen[0][0]() is step.get_concrete_function(tf.ones(())).graph


def test_mirrored_replica_thread_sees_the_tf_function_of_the_thread_it_runs_for():
    # MirroredStrategy runs every replica in its own thread, even with one device.
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    seen = []

    def replica_body(x):
        seen.append((threading.current_thread(), _compat.enclosing_tf_function(),
                     tf.compat.v1.get_default_graph(), _compat.current_replica()))
        return x

    @tf.function
    def step(x):
        return strategy.run(replica_body, args=(x,))

    step(tf.ones(()))
    ((thread, frame, graph, replica),) = seen
    assert isinstance(thread, _compat._REPLICA_THREAD_TYPE) and thread is not threading.main_thread()
    assert frame.key() is step and frame.name == "step" and frame.creates_variables is True
    assert frame.trace() is graph
    assert replica == 0


def test_replica_thread_outside_a_tf_function_finds_none():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    seen = []
    strategy.run(lambda: seen.append(_compat.enclosing_tf_function()) or tf.constant(0))
    assert seen == [None]


def test_concrete_function_trace_is_found_too():
    frames = []
    step = tf.function(lambda x: frames.append(_compat.enclosing_tf_function()) or x)
    step.get_concrete_function(tf.TensorSpec((2,)))
    assert frames[0].key() is step and frames[0].creates_variables is True


def test_save_context_is_seen_by_tf_saved_model_save(tmp_path):
    seen = []
    module = tf.Module()
    module.f = tf.function(lambda x: seen.append(_compat.in_save_context()) or x,
                           input_signature=[tf.TensorSpec((1,))])
    tf.saved_model.save(module, str(tmp_path))
    assert seen and all(seen)
    assert _compat.in_save_context() is False


def test_keras_export_directory_exists():
    import os

    assert os.path.isdir(_compat._KERAS_EXPORT_DIR)
    assert os.path.isfile(os.path.join(_compat._KERAS_EXPORT_DIR, "saved_model.py"))


def test_keras_default_method_mark_drives_auto_config():
    assert _compat.is_keras_default_method(keras.layers.Layer.get_config)
    assert not _compat.is_keras_default_method(keras.layers.Dense.get_config)


def test_backing_variable_is_the_tf_variable_without_initialising():
    dense = keras.layers.Dense(2)
    dense.build((None, 3))
    assert isinstance(_compat.backing_variable(dense.kernel), tf.Variable)
    assert _compat.variable_path(dense.kernel) == dense.kernel.path


def test_replica_id_outside_and_inside_a_strategy():
    assert _compat.current_replica() is None
    seen = []
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    strategy.run(tf.function(lambda: seen.append(_compat.current_replica()) or tf.constant(0)))
    assert seen == [0] and type(seen[0]) is int


def test_import_does_not_import_tf_keras():
    code = "import sys, traceguard; print('tf_keras' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_function_origin_is_the_code_and_captured_objects():
    layer = keras.layers.Dense(1)

    def function_of(captured):
        return tf.function(lambda x: captured(x))

    def plain(x):
        return x

    origin = _compat.function_origin
    assert origin(function_of(layer)) == origin(function_of(layer))
    assert origin(function_of(layer)) != origin(function_of(keras.layers.Dense(1)))
    assert origin(tf.function(plain)) == origin(tf.function(plain)) == (plain.__code__, ())
    assert origin(tf.function(layer)) == origin(tf.function(layer)) != origin(tf.function(plain))
    assert origin(tf.function(lambda x: x * [1][0])) is not None
    assert origin(object()) is None


def test_xla_context_is_seen_inside_jit_compiled_functions_only():
    seen = {}

    def probe(name):
        def body(x):
            seen[name] = _compat.in_xla_context()
            return x

        return body

    tf.function(probe("plain"))(tf.ones(()))
    tf.function(probe("jit"), jit_compile=True)(tf.ones(()))
    inner = tf.function(probe("inner"))
    tf.function(lambda x: inner(x), jit_compile=True)(tf.ones(()))
    assert seen == {"plain": False, "jit": True, "inner": True}
    assert _compat.in_xla_context() is False


def test_tf_print_cannot_compile_under_xla():
    # The reason print routing falls back to "once" under XLA; when this fails,
    # TensorFlow compiles tf.print and the fallback can go.
    @tf.function(jit_compile=True)
    def step(x):
        tf.print(x)
        return x + 1

    with pytest.raises(tf.errors.InvalidArgumentError, match="StringFormat"):
        step(tf.ones(()))


def test_tf_print_to_sys_stdout_writes_to_the_file_descriptor(capfd):
    # tf.print(output_stream=sys.stdout) writes from C++ to fd 1: sys.stdout's
    # replacements (capsys, contextlib.redirect_stdout, notebooks) never see it.
    @tf.function
    def step(x):
        tf.print("value:", x, output_stream=sys.stdout)
        return x

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        step(tf.constant(7))
    assert buffer.getvalue() == ""
    assert capfd.readouterr().out == "value: 7\n"


def test_calling_frame_is_the_first_frame_outside_libraries():
    assert _compat.calling_frame() is sys._getframe()
    frames = []

    def body(x):
        frames.append(_compat.calling_frame())
        return x

    tf.function(body, autograph=False)(tf.ones(()))
    tf.function(body, autograph=True)(tf.ones(()))
    assert frames[0].f_code is body.__code__
    # AutoGraph's converted copy is the user's code too.
    assert "__autograph_generated_file" in frames[1].f_code.co_filename


def test_run_unconverted_keeps_autograph_out_and_converted_code_reads_fn_globals():
    def tensor_branch(x):
        if tf.reduce_sum(x) > 0:  # Needs AutoGraph: a Python `if` on a tensor.
            return x
        return -x

    step = tf.function(lambda x: tensor_branch(x), autograph=True)
    assert step(-tf.ones(2)).numpy().tolist() == [1.0, 1.0]
    unconverted = tf.function(lambda x: _compat.run_unconverted(tensor_branch)(x), autograph=True)
    with pytest.raises(TypeError, match="Using a symbolic `tf.Tensor` as a Python `bool`"):
        unconverted(-tf.ones(2))

    # AutoGraph instantiates its converted copy with the function's own
    # `__globals__` (transpiler.py: `factory.instantiate(globals_=fn.__globals__)`),
    # which is how a routed copy's `print` survives conversion.
    seen = []
    routed = copy_with_print(tensor_branch_printing, _compat.run_unconverted(seen.append))
    tf.function(lambda x: routed(x), autograph=True)(-tf.ones(2))
    assert seen == ["positive", "negative"]  # tf.cond traces both branches.


def tensor_branch_printing(x):
    if tf.reduce_sum(x) > 0:
        print("positive")
        return x
    print("negative")
    return -x
def test_keras_traceback_filter_hides_traceguard_frames_only():
    import os

    from keras.src.utils import traceback_utils

    assert not traceback_utils.include_frame(os.path.join(_compat._TRACEGUARD_DIR, "_recorder.py"))
    assert traceback_utils.include_frame(__file__)


def test_mixin_call_is_wrapped_by_keras_filter_and_left_unconverted_by_autograph():
    from keras.src.utils import traceback_utils
    from tensorflow.python.autograph.impl import api

    import traceguard as tg

    wrapper = tg.TraceAwareMixin.__call__
    assert wrapper.__code__ is keras.layers.Layer.__call__.__code__  # Keras's `error_handler`.
    assert wrapper.__code__ is traceback_utils.filter_traceback(len).__code__
    assert not api.is_autograph_artifact(wrapper)  # Converted by tf.function, as Keras's is.
    assert api.is_autograph_artifact(wrapper.__wrapped__)
