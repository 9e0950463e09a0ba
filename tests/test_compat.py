"""Each TensorFlow / Keras internal traceguard relies on, checked on the installed versions.

When one of these fails after an upgrade, the module of `traceguard/_compat/` named in the
failing check needs a new branch.
"""

import ast
import contextlib
import inspect
import io
import os
import subprocess
import sys
import threading

import pytest
import tensorflow as tf
from conftest import FLAVORS

import traceguard as tg
from traceguard import _compat
from traceguard._compat import _autograph, _flavors, _frames, _tf_context, _tf_function
from traceguard._routed_globals import copy_with_print


def run_python(code, **env):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env}, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


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


def test_in_symbolic_build_is_true_only_in_the_symbolic_run(keras_flavor):
    keras = keras_flavor.keras
    seen = []

    class Probe(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(1)  # Unbuilt: Keras 3 builds it by a symbolic run.

        def call(self, inputs):
            seen.append((_compat.in_symbolic_build(), _compat.current_graph_name()))
            return self.dense(inputs)

    _compat.flavor_of_class(Probe)  # Loaded as a trace-aware class would load it.
    Probe()(tf.ones((1, 1)))
    inputs = keras.Input((1,))
    Probe(name="probe")(inputs)
    symbolic = [flag for flag, _ in seen]
    # Keras 3: a symbolic build pass before the eager run, and two for the functional call
    # (one nested in the layer's own output inference). Keras 2: the eager run, then the
    # functional call in a graph named `<layer>_scratch_graph`.
    assert symbolic == keras_flavor.pick([True, False, True, True], [False, True])
    if not keras_flavor.is_keras_3:
        assert seen[-1][1] == "probe" + _tf_context.KERAS2_SCRATCH_GRAPH_SUFFIX


def test_keras2_autograph_rule_helpers(keras_flavor):
    if keras_flavor.is_keras_3:
        pytest.skip("Keras 2 internals")
    utils = _compat.load_flavor(keras_flavor.name).base_layer_utils
    # What the rule is asked about: a user's trace-aware layer (Keras 2.13-2.15 call
    # their own built-in layers "subclassed" too, since they moved to keras/src).
    assert utils.is_subclassed(keras_flavor.SeedLayer()) is True
    assert utils.from_saved_model(keras_flavor.SeedLayer()) is False


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
    assert isinstance(thread, _tf_function._REPLICA_THREAD_TYPE) and thread is not threading.main_thread()
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


def test_wrapped_fn_keeps_the_graph_it_traces_into():
    graphs, function, trace_graph = [], None, None

    @tf.function
    def probe(x):
        nonlocal function, trace_graph
        function, trace_graph = _tf_function._find_enclosing_tf_function(sys._getframe())
        graphs.append(tf.compat.v1.get_default_graph())
        return x

    probe(tf.ones(()))
    assert function.key() is probe and trace_graph is graphs[-1]


def test_one_answer_per_trace_and_nested_functions_answer_for_themselves():
    seen = []

    def note(where):
        seen.append((where, _compat.enclosing_tf_function()))

    @tf.function
    def inner(x):
        note("inner")
        return x + 1.0

    @tf.function
    def outer(x):
        note("outer")
        y = inner(x)
        note("outer again")
        return tf.cond(y > 0, lambda: note("branch") or y, lambda: y)

    outer(tf.ones(()))
    assert [(where, frame.name) for where, frame in seen] == [
        ("outer", "outer"), ("inner", "inner"), ("outer again", "outer"), ("branch", "outer")]
    assert seen[0][1] is seen[2][1]  # Kept for the trace, not found again.
    outer(tf.ones((), tf.float64))  # A new trace: its own answer.
    assert seen[4][1] is not seen[0][1] and seen[4][1].name == "outer"


def test_keras_symbolic_pass_runs_in_a_scratch_graph_inside_the_trace():
    if "keras3" not in {flavor.name for flavor in FLAVORS}:
        pytest.skip("Keras 3 is not installed")
    keras = _compat.keras3_flavor().keras
    seen = []

    class Probe(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)  # Unbuilt: Keras builds by a symbolic run.

        def call(self, inputs):
            graph = tf.compat.v1.get_default_graph()
            seen.append((_compat.in_symbolic_build(), graph, _compat.enclosing_tf_function()))
            return self.dense(inputs)

    layer = Probe()
    traced = []
    step = tf.function(lambda x: traced.append(tf.compat.v1.get_default_graph()) or layer(x))
    step(tf.ones((1, 1)))
    symbolic, scratch, frame = seen[0]
    assert symbolic and scratch.name.startswith(_tf_function._KERAS_SCRATCH_GRAPH_PREFIX)
    assert scratch.outer_graph is traced[0] and frame.key() is step
    assert frame is _tf_function._facts_of_trace[traced[0]].function
    assert seen[1][1] is traced[0] and seen[1][2] is frame


def test_save_context_is_seen_by_tf_saved_model_save(tmp_path):
    seen = []
    module = tf.Module()
    module.f = tf.function(lambda x: seen.append(_compat.in_save_context()) or x,
                           input_signature=[tf.TensorSpec((1,))])
    tf.saved_model.save(module, str(tmp_path))
    assert seen and all(seen)
    assert _compat.in_save_context() is False


def test_keras_export_directory_exists():
    if "keras3" not in {flavor.name for flavor in FLAVORS}:
        pytest.skip("Keras 3 is not installed")
    _compat.keras3_flavor()
    assert os.path.isdir(_flavors._KERAS_EXPORT_DIR)
    assert os.path.isfile(os.path.join(_flavors._KERAS_EXPORT_DIR, "saved_model.py"))


def test_keras_default_method_mark_drives_auto_config(keras_flavor):
    keras = keras_flavor.keras
    assert _compat.is_keras_default_method(keras.layers.Layer.get_config)
    assert not _compat.is_keras_default_method(keras.layers.Dense.get_config)


def test_backing_variable_is_the_tf_variable_without_initialising(keras_flavor):
    dense = keras_flavor.keras.layers.Dense(2)
    dense.build((None, 3))
    backing = _compat.backing_variable(dense.kernel)
    assert isinstance(backing, tf.Variable)
    assert (backing is dense.kernel) is (not keras_flavor.is_keras_3)
    expected = dense.kernel.path if keras_flavor.is_keras_3 else dense.kernel.name.removesuffix(":0")
    assert _compat.variable_path(dense.kernel) == expected


def test_replica_id_outside_and_inside_a_strategy():
    assert _compat.current_replica() is None
    seen = []
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    strategy.run(tf.function(lambda: seen.append(_compat.current_replica()) or tf.constant(0)))
    assert seen == [0] and type(seen[0]) is int


def test_import_does_not_import_tf_keras_on_keras_3():
    if not _compat.IS_KERAS_3:
        pytest.skip("traceguard follows tf.keras, which is Keras 2 here")
    assert run_python("import sys, traceguard; print('tf_keras' in sys.modules)") == ["False"]


# --- wrapping `call` and AutoGraph ---------------------------------------------------------
def wrapped_call():
    def original(self, inputs, training=None, mask=None):
        return inputs

    def wrapper(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    return original, _compat.wrap_call(original, wrapper)


def test_wrapped_call_shows_the_original_arguments_to_keras_2_and_3():
    from tensorflow.python.util import tf_inspect

    original, wrapper = wrapped_call()
    assert tf_inspect.getfullargspec(wrapper).args == ["self", "inputs", "training", "mask"]
    assert list(inspect.signature(wrapper).parameters) == ["self", "inputs", "training", "mask"]
    assert wrapper.__wrapped__ is original


def test_tf_convert_leaves_an_autograph_artifact_as_it_is():
    _, wrapper = wrapped_call()
    context = tf.__internal__.autograph.control_status_ctx()
    assert tf.__internal__.autograph.tf_convert(wrapper, context) is wrapper


def test_autograph_does_not_convert_traceguard_modules():
    from tensorflow.python.autograph.impl import conversion

    from traceguard import _recorder

    assert conversion.is_allowlisted(_recorder.observe_call)
    assert conversion.is_allowlisted(_tf_function.enclosing_tf_function)  # In a subpackage.
    assert not conversion.is_allowlisted(test_autograph_does_not_convert_traceguard_modules)


def test_converted_code_calls_an_artifact_through_call_unconverted():
    callers = []
    probe = _compat.keep_autograph_out(lambda x: callers.append(sys._getframe(1).f_code) or x)
    tf.function(lambda x: probe(x) + 1)(tf.ones(()))
    assert callers == [_autograph._CALL_UNCONVERTED_CODE]


def test_tf_function_rewraps_a_decorated_function_before_calling_it():
    seen = []

    def target(x):
        return x

    def wrapper(x):
        seen.append(wrapper.__wrapped__ is not target)
        return target(x)

    wrapper = tf.__internal__.decorator.make_decorator(target, wrapper)
    tf.function(wrapper)(tf.ones(()))
    assert seen == [True]  # The converted target, which `graph_body` takes.


# --- which Keras `traceguard` follows -------------------------------------------------------
def test_keras2_module_explains_what_to_install_without_keras_2():
    if not _compat.IS_KERAS_3:
        pytest.skip("tf.keras is Keras 2 here, so traceguard.keras2 always imports")
    code = ("import sys; sys.modules['tf_keras'] = None\n"  # As if tf_keras were not installed.
            "try:\n    import traceguard.keras2\nexcept ImportError as error:\n    print(error)")
    message = run_python(code)[0]
    assert message.startswith("traceguard's Keras 2 support needs Keras 2: install `tf_keras` "
                              "(pip install 'traceguard[keras2]'), or use TensorFlow 2.12-2.15")
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


def test_legacy_keras_environment_without_tf_keras_says_what_to_install():
    if _compat.TF_VERSION < (2, 16):
        pytest.skip("TF_USE_LEGACY_KERAS routes tf.keras from TensorFlow 2.16 on")
    code = ("import sys; sys.modules['tf_keras'] = None\n"
            "try:\n    import traceguard\nexcept ImportError as error:\n    print(error)")
    message = run_python(code, TF_USE_LEGACY_KERAS="1")[0]
    assert message == (
        "traceguard follows `tf.keras`, which could not be imported: with TF_USE_LEGACY_KERAS set "
        "TensorFlow needs the `tf_keras` package (pip install 'traceguard[keras2]'). Received: "
        f"TensorFlow {tf.__version__}, TF_USE_LEGACY_KERAS='1'.")


def test_function_origin_is_the_code_and_captured_objects():
    layer = _compat.keras.layers.Dense(1)

    def function_of(captured):
        return tf.function(lambda x: captured(x))

    def plain(x):
        return x

    origin = _tf_function.function_origin
    assert origin(function_of(layer)) == origin(function_of(layer))
    assert origin(function_of(layer)) != origin(function_of(_compat.keras.layers.Dense(1)))
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


def test_frames_of_the_compat_subpackage_are_traceguard_code_too():
    # A function compiled under the file name of a `_compat` module, as its own code is.
    namespace = {"user_stacklevel": _compat.user_stacklevel, "calling_frame": _compat.calling_frame}
    exec(compile("def ask():\n    return user_stacklevel(), calling_frame()\n",
                 _tf_function.__file__, "exec"), namespace)
    level, frame = namespace["ask"]()
    assert level == 2 and frame is sys._getframe()
    assert _frames._TRACEGUARD_DIR == os.path.dirname(os.path.abspath(tg.__file__)) + os.sep


def module_names_of(path):
    """`__all__` and the top-level names a module defines, read without importing it."""
    with open(path) as source:
        tree = ast.parse(source.read())
    names, exported = set(), None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.add(target.id)
                if target.id == "__all__":
                    exported = ast.literal_eval(node.value)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return exported, names


def test_both_backends_answer_the_same_questions():
    # `_compat` takes the backend's names from `_tensorflow` here and from `_jax` on JAX,
    # which cannot be imported here: its source says what it defines.
    from traceguard._compat import _tensorflow

    jax_exported, jax_names = module_names_of(os.path.join(os.path.dirname(_compat.__file__), "_jax.py"))
    assert jax_exported == _tensorflow.__all__
    assert set(jax_exported) <= jax_names
    assert all(getattr(_compat, name) is getattr(_tensorflow, name) for name in _tensorflow.__all__)
    assert set(_tensorflow.__all__) <= set(_compat.__all__)
    assert all(hasattr(_compat, name) for name in _compat.__all__)


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
    if not _compat.IS_KERAS_3:
        pytest.skip("Keras 3's traceback filter; tf.keras is Keras 2 here")
    from keras.src.utils import traceback_utils

    assert not traceback_utils.include_frame(os.path.join(_frames._TRACEGUARD_DIR, "_recorder.py"))
    assert not traceback_utils.include_frame(_tf_function.__file__)
    assert traceback_utils.include_frame(__file__)


def test_mixin_call_is_wrapped_by_keras_filter_and_left_unconverted_by_autograph():
    if not _compat.IS_KERAS_3:
        pytest.skip("Keras 3's traceback filter; tf.keras is Keras 2 here")
    from keras.src.utils import traceback_utils
    from tensorflow.python.autograph.impl import api

    wrapper = tg.TraceAwareMixin.__call__
    assert wrapper.__code__ is _compat.keras.layers.Layer.__call__.__code__  # Keras's `error_handler`.
    assert wrapper.__code__ is traceback_utils.filter_traceback(len).__code__
    assert not api.is_autograph_artifact(wrapper)  # Converted by tf.function, as Keras's is.
    assert api.is_autograph_artifact(wrapper.__wrapped__)
