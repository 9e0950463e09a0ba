"""Each TensorFlow / Keras internal traceguard relies on, checked on the installed versions.

When one of these fails after an upgrade, `traceguard/_compat.py` needs a new branch.
"""

import subprocess
import sys

import tensorflow as tf
from conftest import keras

from traceguard import _compat


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
    assert seen == [0]


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
