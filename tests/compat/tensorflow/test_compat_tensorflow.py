"""Each internal of the TensorFlow backend, checked on the installed versions.

The internals of `traceguard/_compat/tensorflow/context.py`, `tensorflow/function.py` and
`tensorflow/backend.py`. When one of these fails after an upgrade, the module named in the
failing check needs a new branch.
"""

import contextlib
import io
import sys
import threading

import pytest
import tensorflow as tf
from conftest import FLAVORS

from traceguard import _compat
from traceguard._compat.tensorflow import context as _tf_context
from traceguard._compat.tensorflow import function as _tf_function

pytestmark = pytest.mark.backend("tensorflow")


# --- _tf_context: eager, graph, symbolic build, XLA, replica ------------------------------
def test_executing_eagerly_reads_the_flag_tf_executing_eagerly_reads(keras_flavor):
    from tensorflow.python.eager import context

    # The internal read: without it every step would take the slower public path.
    assert isinstance(context.context()._thread_local_data.is_eager, bool)
    seen = []

    def ask(where):
        seen.append((where, _tf_context.executing_eagerly(), tf.executing_eagerly()))

    class Probe(keras_flavor.keras.layers.Layer):
        def call(self, inputs):
            ask("layer call")
            return inputs

    @tf.function
    def traced(x):
        ask("tf.function")
        with tf.init_scope():
            ask("init_scope in tf.function")
        return Probe()(x)

    ask("eager")
    traced(tf.ones((1, 1)))
    Probe()(keras_flavor.keras.Input((1,)))
    with tf.Graph().as_default():
        ask("tf.Graph")
    thread = threading.Thread(target=ask, args=("thread",))
    thread.start()
    thread.join()
    assert [fast for _, fast, public in seen] == [public for _, fast, public in seen]
    assert {where: fast for where, fast, _ in seen if where != "layer call"} == {
        "eager": True, "tf.function": False, "init_scope in tf.function": True,
        "tf.Graph": False, "thread": True}
    assert [fast for where, fast, _ in seen if where == "layer call"][:1] == [False]


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


def test_replica_id_outside_and_inside_a_strategy():
    assert _compat.current_replica() is None
    seen = []
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    strategy.run(tf.function(lambda: seen.append(_compat.current_replica()) or tf.constant(0)))
    assert seen == [0] and type(seen[0]) is int


# --- _tf_function: the function being traced, its phase and trace, saving -----------------
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
            seen.append((_compat.in_symbolic_build(), graph, _compat.enclosing_tf_function(),
                         _compat.scratch_graph_outer(graph)))
            return self.dense(inputs)

    layer = Probe()
    traced = []
    step = tf.function(lambda x: traced.append(tf.compat.v1.get_default_graph()) or layer(x))
    step(tf.ones((1, 1)))
    symbolic, scratch, frame, outer = seen[0]
    assert symbolic and scratch.name.startswith(_tf_function._KERAS_SCRATCH_GRAPH_PREFIX)
    assert scratch.outer_graph is traced[0] and frame.key() is step
    assert outer is traced[0]  # `scratch_graph_outer`: the runs of one trace's pass share a site.
    assert frame is _tf_function._facts_of_trace[traced[0]].function
    assert seen[1][1] is traced[0] and seen[1][2] is frame and seen[1][3] is None


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


def test_save_context_is_seen_by_tf_saved_model_save(tmp_path):
    seen = []
    module = tf.Module()
    module.f = tf.function(lambda x: seen.append(_compat.in_save_context()) or x,
                           input_signature=[tf.TensorSpec((1,))])
    tf.saved_model.save(module, str(tmp_path))
    assert seen and all(seen)
    assert _compat.in_save_context() is False


# --- _tensorflow: printing at each execution ----------------------------------------------
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


def test_control_flow_bodies_are_told_apart_from_the_function_graph():
    seen = {}

    @tf.function
    def step(x):
        seen["function"] = _compat.control_flow_of()

        def branch():
            seen["cond"] = _compat.control_flow_of()
            return x

        tf.cond(x[0] > 0, branch, lambda: x)

        def body(i):
            seen["while"] = _compat.control_flow_of()
            return (i + 1,)

        tf.while_loop(lambda i: i < 3, body, (0,))
        return x

    step(tf.ones((2,)))
    assert seen == {"function": None, "cond": "tf.cond", "while": "tf.while_loop"}
    assert _compat.control_flow_of() is None  # Eager.


def test_variables_made_by_a_first_trace_are_told_from_eager_ones():
    eager = tf.Variable(1.0)
    made = []

    @tf.function
    def step():
        if not made:
            made.append(tf.Variable(2.0))
        return made[0] + eager

    step()
    assert _compat.any_created_in_a_trace(made) and not _compat.any_created_in_a_trace([eager])


# --- _tensorflow: the variable creation watch -------------------------------------------
def test_creation_watch_sees_variables_made_in_a_trace_and_restores_the_creator_stack():
    from traceguard._compat.tensorflow import backend as _tensorflow

    created, outer, holder = [], [], []

    def user_creator(next_creator, **kwargs):
        outer.append(kwargs.get("name"))
        return next_creator(**kwargs)

    @tf.function
    def make():
        graph = tf.compat.v1.get_default_graph()
        before = graph._variable_creator_stack
        with tf.variable_creator_scope(user_creator):
            inside = graph._variable_creator_stack
            with _tensorflow.variable_creation_watch(created.append, graph):
                assert len(graph._variable_creator_stack) == len(inside) + 1
                if not holder:  # Made once: tf.function's first trace lifts it.
                    holder.append(tf.Variable(1.0, name="seen"))
            assert graph._variable_creator_stack is inside  # Left as it was.
        assert graph._variable_creator_stack == before
        return holder[0].read_value()

    make()
    assert [v.name for v in created] == ["seen:0"]
    assert outer == ["seen"]  # The user's creator still ran: ours runs inside it.


def test_creation_watch_refuses_to_unwind_a_stack_it_did_not_leave():
    from traceguard._compat.tensorflow import backend as _tensorflow

    graph = tf.Graph()
    watch = _tensorflow.variable_creation_watch(lambda v: None, graph)
    watch.__enter__()
    graph._thread_local._variable_creator_stack = []  # Someone else replaced it.
    with pytest.raises(RuntimeError, match="proper nesting"):
        watch.__exit__(None, None, None)


# --- _tf_context: the default graph ---------------------------------------------------------
def test_default_graph_is_what_tf_compat_v1_get_default_graph_returns():
    seen = []

    def ask():
        seen.append((_compat.default_graph(), tf.compat.v1.get_default_graph()))

    ask()  # Eager: the global graph.
    tf.function(lambda: ask())()
    with tf.Graph().as_default():
        ask()
    thread = threading.Thread(target=ask)
    thread.start()
    thread.join()
    assert len(seen) == 4 and all(ours is theirs for ours, theirs in seen)
    assert len({id(ours) for ours, _ in seen}) == 4  # A thread's global graph is its own.


# --- _tensorflow: reading a graph tensor's spec --------------------------------------------
@pytest.mark.skipif(_compat.TF_VERSION < (2, 16), reason="TF 2.12-2.15: the public properties are read")
def test_graph_tensor_spec_reader_reads_what_the_public_properties_say():
    # TF 2.16 to 2.21 hold a trace's tensors as `SymbolicTensor` with `_dtype` and `_shape`
    # in C; when a release moves them, traceguard still works through `shape` and `dtype`,
    # slower, and this check fails.
    seen = []

    @tf.function
    def read(x):
        read_spec = _compat.tensor_spec_reader(type(x))
        assert read_spec is not None, f"no fast reader for {type(x)!r}"
        dims = None if x.shape.rank is None else tuple(x.shape.as_list())
        seen.append((read_spec(x), (x.dtype.name, dims)))
        return x

    read.get_concrete_function(tf.TensorSpec([2, 3], tf.float32))
    read.get_concrete_function(tf.TensorSpec([None, 3], tf.int64))
    read.get_concrete_function(tf.TensorSpec(None, tf.bool))
    read.get_concrete_function(tf.TensorSpec([], tf.float16))
    assert [fast for fast, _ in seen] == [public for _, public in seen]
    assert seen[1][0] == ("int64", (None, 3)) and seen[2][0] == ("bool", None)


def test_tensor_spec_reader_is_none_for_other_types(keras_flavor):
    assert _compat.tensor_spec_reader(tf.RaggedTensor) is None
    assert _compat.tensor_spec_reader(list) is None


def test_keras_tensor_spec_reader_reads_what_the_public_properties_say():
    keras3 = _compat.keras3_flavor() if _compat.TF_VERSION >= (2, 16) else None
    if keras3 is None:
        pytest.skip("Keras 3 needs TF 2.16 or newer")
    tensor = keras3.keras.KerasTensor((None, 4, 2), dtype="float16")
    read_spec = _compat.tensor_spec_reader(type(tensor))
    assert read_spec is not None
    assert read_spec(tensor) == (tensor.dtype, tuple(tensor.shape)) == ("float16", (None, 4, 2))


def test_keras_3_lists_the_variables_its_symbolic_pass_defers():
    # What `_record.recorder` reads instead of walking a layer's variables twice in each
    # symbolic run: the weights made in the run, in Keras 3's per-thread list.
    if _compat.TF_VERSION < (2, 16):
        pytest.skip("Keras 3 needs TF 2.16 or newer")
    keras = _compat.keras3_flavor().keras
    from keras.src.backend.common.stateless_scope import StatelessScope

    assert not _compat.defers_variables()
    with StatelessScope():
        assert _compat.defers_variables()
        mark = _compat.deferred_variables_mark()
        assert _compat.deferred_since(mark) == []
        layer = keras.layers.Dense(2)
        layer.build((None, 3))
        made = _compat.deferred_since(mark)
        assert [id(v) for v in made] == [id(v) for v in layer.variables]
        assert _compat.deferred_variable_paths(made) == tuple(v.path for v in layer.variables)
    assert _compat.deferred_since(mark) is None  # The scope's end replaced the list.
    assert _compat.deferred_variable_paths(layer.variables) == ()


def test_distributed_process_is_none_on_tensorflow_whose_workers_tf_config_names():
    assert _compat.distributed_process() is None
