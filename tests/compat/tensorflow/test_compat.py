"""Each TensorFlow / Keras internal traceguard relies on, checked on the installed versions.

This file checks `traceguard/_compat/`'s backend choice, Keras flavors and frames;
`test_compat_tensorflow.py` and `test_compat_autograph.py` check the TensorFlow backend,
`test_jax_compat.py` the JAX one. When one of these fails after an upgrade, the module of
`traceguard/_compat/` named in the failing check needs a new branch.
"""

import ast
import inspect
import os
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import FLAVORS

import traceguard as tg
from traceguard import _compat
from traceguard._compat import _flavors, _frames
from traceguard._compat.tensorflow import function as _tf_function

pytestmark = pytest.mark.backend("tensorflow")


def run_python(code, **env):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env}, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


# --- the backend and the Keras flavors ----------------------------------------------------
def test_default_flavor_is_the_keras_of_tf_keras():
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1")  # TensorFlow's rule.
    expected = "keras2" if _compat.TF_VERSION < (2, 16) else "tf_keras" if legacy else "keras3"
    assert _compat.KERAS_FLAVOR == expected
    assert _compat.LayerBase is tf.keras.layers.Layer
    assert _compat.IS_KERAS_3 is (expected == "keras3")


def test_flavor_of_a_class_is_found_from_its_mro(keras_flavor):
    class Custom(keras_flavor.keras.layers.Dense):
        pass

    assert _compat.flavor_of_class(Custom).name == keras_flavor.name
    assert _compat.flavor_of_class(keras_flavor.TraceAwareLayer).layer_base is keras_flavor.keras.layers.Layer
    assert _compat.flavor_of_class(int) is None


def test_version_parsing_compares_numbers():
    assert _compat.parse_version("2.9.1") < _compat.parse_version("2.12.0")
    assert _compat.parse_version("2.16.0rc1") == (2, 16)
    assert _compat.parse_version("3") == (3, 0)


def test_keras2_autograph_rule_helpers(keras_flavor):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 2 internals")
    utils = _compat.load_flavor(keras_flavor.name).base_layer_utils
    # What the rule is asked about: a user's trace-aware layer (Keras 2.13-2.15 call
    # their own built-in layers "subclassed" too, since they moved to keras/src).
    assert utils.is_subclassed(keras_flavor.SeedLayer()) is True
    assert utils.from_saved_model(keras_flavor.SeedLayer()) is False


def test_each_kerass_export_directory_holds_its_export_code(keras_flavor):
    flavor = _compat.load_flavor(keras_flavor.name)
    # Keras 3 writes the SavedModel in export/saved_model.py, Keras 2 in export/export_lib.py.
    module = "saved_model.py" if flavor.is_keras_3 else "export_lib.py"
    package = os.path.dirname(sys.modules[flavor.layer_base.__module__.split(".")[0]].__file__)
    (directory,) = [d for d in _flavors._KERAS_EXPORT_DIRS if d.startswith(package + os.sep)]
    assert os.path.isfile(os.path.join(directory, module))


def test_keras_export_traces_before_the_save_context_are_seen_as_saving(keras_flavor, tmp_path):
    """`model.export` traces `__call__` outside TF's save context; its frames are recognised."""
    seen = []

    class Probe(keras_flavor.keras.layers.Layer):
        def call(self, inputs):
            seen.append((_tf_function._save_context.in_save_context(), _compat.in_save_context()))
            return inputs

    inputs = keras_flavor.keras.Input((2,))
    model = keras_flavor.keras.Model(inputs, Probe()(inputs))
    seen.clear()
    model.export(str(tmp_path / "exported"))
    # Keras 3: `__call__` and `serving_default` outside TF's save context, then `__call__` in it;
    # Keras 2: one `__call__` outside and one in it (in this order from 2.13, the reverse in 2.12).
    assert sorted(in_tf_context for in_tf_context, _ in seen) == keras_flavor.pick([False, False, True],
                                                                                  [False, True])
    assert all(saving for _, saving in seen)


def test_loaded_layer_bases_are_tf_keras_then_each_other_keras_imported_and_import_none():
    code = ("import sys; from traceguard import _compat; "
            "names = lambda: [base.__module__.split('.')[0] for base in _compat.loaded_layer_bases()]; "
            "print(names(), 'tf_keras' in sys.modules); import tf_keras; print(names())")
    if "tf_keras" not in {flavor.name for flavor in FLAVORS}:
        pytest.skip("tf_keras is not installed")
    # With Keras 3 as tf.keras: its `Layer`, then tf_keras's once the user imported it.
    assert run_python(code, TF_USE_LEGACY_KERAS="0") == ["['keras'] False", "['keras', 'tf_keras']"]
    # The Keras of every flavor the tests use is imported, so each `Layer` is there.
    assert set(_compat.loaded_layer_bases()) == {flavor.keras.layers.Layer for flavor in FLAVORS}
    assert _compat.loaded_layer_bases()[0] is _compat.LayerBase


def test_keras_default_method_mark_drives_auto_config(keras_flavor):
    keras = keras_flavor.keras
    assert _compat.is_keras_default_method(keras.layers.Layer.get_config)
    assert not _compat.is_keras_default_method(keras.layers.Dense.get_config)


def test_keras_generates_the_config_from_a_presented_constructor_signature(keras_flavor):
    class Scale(keras_flavor.keras.layers.Layer):
        def __init__(self, *args, **kwargs):
            self.factor = args[0] if args else kwargs.pop("factor")
            super().__init__(**kwargs)

    # Without it, Keras 3 refuses to generate the config (variadic positional
    # arguments) and Keras 2 leaves `factor` out.
    _compat.present_signature(Scale.__init__, inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("factor", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
    ]))
    config = Scale(2.0).get_config()
    assert config["factor"] == 2.0
    assert Scale.from_config(config).factor == 2.0


def test_backing_variable_is_the_tf_variable_without_initialising(keras_flavor):
    dense = keras_flavor.keras.layers.Dense(2)
    dense.build((None, 3))
    backing = _compat.backing_variable(dense.kernel)
    assert isinstance(backing, tf.Variable)
    assert (backing is dense.kernel) is (not keras_flavor.is_keras_3)
    expected = dense.kernel.path if keras_flavor.is_keras_3 else dense.kernel.name.removesuffix(":0")
    assert _compat.variable_path(dense.kernel) == expected
    assert _compat.variable_paths([dense.kernel, dense.bias]) == [expected, _compat.variable_path(dense.bias)]
    assert expected.endswith("kernel") and _compat.variable_paths([]) == []


def test_deferred_variable_is_a_keras_3_weight_made_in_a_stateless_scope(keras_flavor):
    dense = keras_flavor.keras.layers.Dense(2)
    if keras_flavor.is_keras_3:
        from keras.src.backend.common.stateless_scope import StatelessScope

        with StatelessScope():
            dense.build((None, 3))
            paths = tuple(_compat.variable_path(v) for v in dense.variables)
            assert _compat.deferred_variable_paths(dense.variables) == paths
            assert len(paths) == 2
    else:
        dense.build((None, 3))
    # Keras 3 creates the `tf.Variable` as the scope exits.
    assert _compat.deferred_variable_paths(dense.variables) == ()


def build_callers(flavor):
    """A layer class whose `build` reports whether Keras's `__call__` is building it."""
    seen = []

    class Probe(flavor.TraceAwareLayer):
        def build(self, input_shape):
            seen.append(_compat.built_by_keras_call(self, sys._getframe(2)))
            self.kernel = self.add_weight(shape=(input_shape[-1], 2), name="kernel")
            super().build(input_shape)

        def call(self, inputs):
            return inputs @ self.kernel

    return Probe, seen


def test_keras_call_builds_a_layer_through_maybe_build(keras_flavor):
    # `sys._getframe(2)`: the caller of traceguard's wrapper around `Probe.build`.
    Probe, seen = build_callers(keras_flavor)
    Probe()(tf.ones((1, 3)))
    Probe().build((None, 3))
    tf.function(Probe())(tf.ones((1, 3)))
    assert seen == [True, False, True]


def test_symbolic_pass_is_told_by_the_keras_3_frame_that_calls_call(keras_flavor):
    # A plain layer: its `call` is called by Keras itself. Keras 3's backend
    # `compute_output_spec` calls it, asked by `_maybe_build` to build the layer (it has
    # an unbuilt sublayer and no `build()`), then to infer its output.
    seen = []
    keras = keras_flavor.keras

    class Probe(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(2)

        def call(self, inputs):
            seen.append(_frames.symbolic_pass(type(self), sys._getframe(1)))
            return self.dense(inputs)

    inputs = keras.Input((3,))
    keras.Model(inputs, Probe()(inputs))
    assert seen == keras_flavor.pick(["build", "output"], ["keras2"])
    if keras_flavor.is_keras_3:
        codes = _frames.output_spec_codes()
        core = sys.modules["keras.src.backend.tensorflow.core"]
        assert codes[core.compute_output_spec.__code__] == "spec"
        assert _frames.symbolic_pass(Probe, sys._getframe()) == "enclosing"  # Not Keras's frame.


def test_a_symbolic_pass_keras_moved_is_logged_with_the_general_fix(keras_flavor, monkeypatch):
    def moved():
        raise _flavors.internal_missing("keras.src.backend.tensorflow.core.compute_output_spec")

    monkeypatch.setattr(_frames, "_codes", {})
    monkeypatch.setattr(_frames, "output_spec_codes", moved)
    layer = keras_flavor.SeedLayer()
    inputs = keras_flavor.keras.Input((4,))
    keras_flavor.keras.Model(inputs, layer(inputs))
    general = "Expected once per layer: Keras runs `call` on symbolic inputs to create the weights when"
    keras_2 = "Expected once per call of the layer in a functional model: Keras 2 runs"
    assert [event.hint.startswith(keras_flavor.pick(general, keras_2)) for event in layer.trace_log] == \
        keras_flavor.pick([True, True], [True])


def test_wrapped_build_keeps_the_parameter_names_keras_3_reads(keras_flavor):
    class TwoInputs(keras_flavor.TraceAwareLayer):
        def build(self, x_shape, y_shape):
            self.kernel = self.add_weight(shape=(x_shape[-1], y_shape[-1]), name="kernel")
            super().build(x_shape)

        def call(self, x, y):
            return x @ self.kernel + y

    layer = TwoInputs()
    assert str(inspect.signature(layer.build)) == "(x_shape, y_shape)"
    if keras_flavor.is_keras_3:  # Keras 2 passes one shape, whatever `build` takes.
        assert layer(tf.ones((1, 3)), tf.ones((1, 2))).shape == (1, 2)
        assert layer.trace_log.eager_calls == 1


def test_import_does_not_import_tf_keras_on_keras_3():
    if not _compat.IS_KERAS_3:
        pytest.skip("traceguard follows tf.keras, which is Keras 2 here")
    # Every public name, each loaded on first use.
    assert run_python("import sys; from traceguard import *; print('tf_keras' in sys.modules)") == ["False"]


def module_names_of(path):
    """The top-level names a module defines, read without importing it."""
    with open(path) as source:
        tree = ast.parse(source.read())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def test_both_backends_implement_the_interface_written_once():
    # `_compat` takes the backend's names from `tensorflow.backend` here and from `jax.backend` on JAX,
    # which cannot be imported here: its source says what it defines.
    from traceguard._compat import _interface
    from traceguard._compat.tensorflow import backend as _tensorflow

    assert _interface.BACKEND_NAMES == tuple(sorted(_interface.BACKEND_NAMES))
    assert {"executing_eagerly", "enclosing_tf_function", "TRACER"} <= set(_interface.BACKEND_NAMES)
    assert _tensorflow.__all__ == list(_interface.BACKEND_NAMES)
    assert set(_interface.BACKEND_NAMES) <= module_names_of(
        os.path.join(os.path.dirname(_compat.__file__), "jax", "backend.py"))
    assert all(getattr(_compat, name) is getattr(_tensorflow, name) for name in _tensorflow.__all__)
    assert set(_tensorflow.__all__) <= set(_compat.__all__)
    assert all(hasattr(_compat, name) for name in _compat.__all__)
    # One default flavor, decided once: the package and the backend name the object `_flavors` holds.
    assert _compat.DEFAULT_FLAVOR is _tensorflow.DEFAULT_FLAVOR is _flavors.DEFAULT_FLAVOR


def test_type_checkers_see_the_backend_names():
    # `_compat` imports the backend's names with `*`, whose computed `__all__` type checkers
    # cannot read; under TYPE_CHECKING it imports them by name, and its `__all__` is literal.
    from traceguard._compat import _interface

    with open(_compat.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    checked = next(node for node in tree.body if isinstance(node, ast.If)
                   and getattr(node.test, "id", None) == "TYPE_CHECKING")
    imported = [alias.name for node in checked.body for alias in node.names]
    assert tuple(imported) == _interface.BACKEND_NAMES
    assert set(_interface.BACKEND_NAMES) <= set(_compat.__all__)


# --- which Keras `traceguard` follows -----------------------------------------------------
def test_keras2_module_explains_what_to_install_without_keras_2():
    if not _compat.IS_KERAS_3:
        pytest.skip("tf.keras is Keras 2 here, so traceguard.keras2 always imports")
    code = ("import sys; sys.modules['tf_keras'] = None\n"  # As if tf_keras were not installed.
            "try:\n    import traceguard.keras2\nexcept ImportError as error:\n    print(error)")
    message = run_python(code)[0]
    minor = ".".join(tf.__version__.split(".")[:2])
    assert message.startswith(
        "traceguard's Keras 2 support needs Keras 2: install `tf_keras` (pip install "
        f"'tf_keras=={minor}.*'), or use TensorFlow 2.12-2.15")
    assert f"Received: TensorFlow {tf.__version__} with Keras " in message


def test_legacy_keras_environment_makes_traceaware_layer_follow_tf_keras():
    if _compat.TF_VERSION < (2, 16) or "tf_keras" not in {flavor.name for flavor in FLAVORS} | {
            _compat.KERAS_FLAVOR}:
        pytest.skip("needs TensorFlow >= 2.16 with tf_keras installed")
    code = (
        "import sys, tensorflow as tf, tf_keras, traceguard as tg\n"
        "from traceguard import _compat\n"
        "class Seed(tg.TraceAwareLayer):\n"
        "    def __init__(self, **kwargs):\n"
        "        super().__init__(**kwargs)\n"
        "        self.dense = tf.keras.layers.Dense(32)\n"
        "    def call(self, inputs):\n"
        "        return self.dense(inputs)\n"
        "layer = Seed()\n"
        "tf.function(layer)(tf.ones((60, 28, 28)))\n"
        "print(_compat.KERAS_FLAVOR, issubclass(tg.TraceAwareLayer, tf_keras.layers.Layer))\n"
        "print([event.kind.value for event in layer.trace_log])\n"
        "print('keras' in sys.modules)\n"
    )
    assert run_python(code, TF_USE_LEGACY_KERAS="1") == [
        "tf_keras True", "['trace', 'variable_retrace']", "False"]


def test_tensorflow_without_keras_records_plain_tf_functions():
    if _compat.TF_VERSION < (2, 16) or os.environ.get("TF_USE_LEGACY_KERAS"):
        pytest.skip("TensorFlow >= 2.16 routes tf.keras to the `keras` package, made absent here")
    code = ("import sys; sys.modules['keras'] = None\n"  # As if Keras were not installed.
            "import tensorflow as tf, traceguard as tg\n"
            "from traceguard import _compat\n"
            "step = tf.function(lambda x: tf.reduce_sum(x))\n"
            "with tg.watch() as report:\n"
            "    for rows in (8, 8, 5):\n"
            "        step(tf.ones((rows, 4)))\n"
            "[runs] = report.functions.values()\n"
            "print(_compat.DEFAULT_FLAVOR, _compat.describe_versions())\n"
            "print([event.kind.value for event in runs.events], step.experimental_get_tracing_count())\n"
            "try:\n    tg.TraceAwareLayer\n    class Seed(tg.TraceAwareLayer): pass\n"
            "except ImportError as error:\n    print(error)")
    assert run_python(code, KERAS_BACKEND="") == [
        f"None TensorFlow {tf.__version__}, no Keras", "['trace', 'retrace'] 2",
        "Keras 3 needs TensorFlow >= 2.16 and the `keras` 3 package (pip install 'keras>=3' "
        f"'tensorflow>=2.16'). Received: TensorFlow {tf.__version__} with no Keras."]


def test_legacy_keras_environment_without_tf_keras_says_what_to_install():
    if _compat.TF_VERSION < (2, 16):
        pytest.skip("TF_USE_LEGACY_KERAS routes tf.keras from TensorFlow 2.16 on")
    code = ("import sys; sys.modules['tf_keras'] = None\n"
            "import traceguard\n"  # Loads nothing yet: the first public name used does.
            "try:\n    traceguard.TraceAwareLayer\nexcept ImportError as error:\n    print(error)")
    message = run_python(code, TF_USE_LEGACY_KERAS="1")[0]
    minor = ".".join(tf.__version__.split(".")[:2])
    assert message == (
        "traceguard follows `tf.keras`, which could not be imported: with TF_USE_LEGACY_KERAS set "
        f"TensorFlow needs the `tf_keras` package (pip install 'tf_keras=={minor}.*'). Received: "
        f"TensorFlow {tf.__version__}, TF_USE_LEGACY_KERAS='1'.")


# --- frames: the user's, traceguard's, and Keras's traceback filter -----------------------
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


def test_frames_of_the_compat_subpackage_are_traceguard_code_too():
    # A function compiled under the file name of a `_compat` module, as its own code is.
    namespace = {"user_stacklevel": _compat.user_stacklevel, "calling_frame": _compat.calling_frame}
    exec(compile("def ask():\n    return user_stacklevel(), calling_frame()\n",
                 _tf_function.__file__, "exec"), namespace)
    level, frame = namespace["ask"]()
    assert level == 2 and frame is sys._getframe()
    assert _frames._TRACEGUARD_DIR == os.path.dirname(os.path.abspath(tg.__file__)) + os.sep


def test_keras_traceback_filter_hides_traceguard_frames_only():
    if not _compat.IS_KERAS_3:
        pytest.skip("Keras 3's traceback filter; tf.keras is Keras 2 here")
    from keras.src.utils import traceback_utils

    assert not traceback_utils.include_frame(os.path.join(_frames._TRACEGUARD_DIR, "_record", "recorder.py"))
    assert not traceback_utils.include_frame(_tf_function.__file__)
    assert traceback_utils.include_frame(__file__)


def test_trace_aware_layers_run_keras_own_call(keras_flavor):
    # Only `call` and `build` are wrapped: `__call__` is Keras's, and so is every frame of it.
    assert keras_flavor.TraceAwareLayer.__call__ is keras_flavor.keras.layers.Layer.__call__
    assert keras_flavor.SeedLayer.__call__ is keras_flavor.keras.layers.Layer.__call__


def test_keras2_traceback_filter_hides_traceguard_frames_only():
    if _compat.IS_KERAS_3:
        pytest.skip("Keras 2's traceback filter; tf.keras is Keras 3 here")
    from traceguard._compat.tensorflow import backend as _tensorflow

    traceback_utils = _tensorflow._keras2_traceback_utils
    assert traceback_utils.__name__.split(".")[0] == _compat.LayerBase.__module__.split(".")[0]
    assert not traceback_utils.include_frame(os.path.join(_frames._TRACEGUARD_DIR, "_record", "recorder.py"))
    assert traceback_utils.include_frame(__file__)
