"""The tf.function trace hook (`_compat.tensorflow.traces`) on real traces, with `FunctionRecords`.

When one of these fails after a TensorFlow upgrade, the function that builds a
graph on a cache miss moved: `traceguard/_compat/tensorflow/traces.py` needs a new branch.
"""

import inspect
import logging

import numpy as np
import pytest
import tensorflow as tf
from helpers import changes, record_kind, texts

import traceguard as tg
from traceguard import _compat
from traceguard._compat import _function_tracing
from traceguard._compat.tensorflow import function as _tf_function
from traceguard._compat.tensorflow import graphs as _tf_graphs
from traceguard._compat.tensorflow import retracing as _tf_retracing
from traceguard._compat.tensorflow import traces as _tf_traces
from traceguard._core.specs import format_signature
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras
HERE = __file__


def test_the_hooked_internal_is_where_this_tensorflow_builds_graphs():
    parameters = tuple(inspect.signature(_tf_traces._ORIGINAL).parameters)
    if _tf_traces._compilation is not None:  # TF 2.14+.
        assert parameters == ("function_type", "type_context", "func_graph", "tracing_options")
        assert _tf_traces._OWNER is _tf_traces._compilation
    else:  # TF 2.12-2.13.
        assert parameters == ("self", "args", "kwargs", "func_graph")
    assert _tf_traces._STRUCTURED_INIT_CODE.co_name == "__init__"
    # The caller's locals read: the key TensorFlow looked up, and the function context it looked it up in.
    assert {"lookup_func_type", "current_func_context"} <= set(_tf_traces._CALLER.__code__.co_varnames)


def test_the_function_context_is_read_by_its_fields():
    from tensorflow.python.eager.polymorphic_function import function_context

    pairs = _tf_traces.context_pairs(function_context.make_function_context())
    assert [name for name, _ in pairs] == ["parent_graph", "device_functions", "colocation_stack",
                                           "in_cross_replica_context", "variable_policy", "xla_context_id"]
    assert dict(pairs)["in_cross_replica_context"] is False


def test_device_functions_and_graphs_of_the_function_context_read_as_names():
    from tensorflow.python.framework import device as tf_device

    from traceguard._compat.tensorflow import context as _tf_context

    # `MergeDevice` keeps its `DeviceSpec` as `_spec` (tensorflow/python/framework/device.py).
    merge = tf_device.MergeDevice("/job:localhost/replica:0/task:0/device:CPU:1")
    value = _tf_context.readable_context_value("device_functions", (merge,))
    assert str(value) == "/job:localhost/replica:0/task:0/device:CPU:1"
    assert value == _tf_context.readable_context_value("device_functions", (merge,))  # As TF compares.
    other = tf_device.MergeDevice("/job:localhost/replica:0/task:0/device:CPU:1")
    assert value != _tf_context.readable_context_value("device_functions", (other,))  # By identity.
    assert str(_tf_context.readable_context_value("device_functions", ())) == "none"
    graph = tf.Graph()
    assert str(_tf_context.readable_context_value("parent_graph", graph)) == "the global graph"
    assert _tf_context.readable_context_value("in_cross_replica_context", True) is True


def test_a_trace_asked_for_by_get_concrete_function_is_marked_requested():
    @tf.function
    def add(x):
        return x + 1

    seen = []
    with _observers.listening_to_traces(lambda tracing: seen.append(tracing.requested)):
        add(tf.ones([1]))
        add.get_concrete_function(tf.TensorSpec([2]))
    assert seen == [False, True]


def test_a_restored_function_is_recognised_and_named_restored_function_body_by_tensorflow(tmp_path):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None])])
        def scale(self, x):
            return x * 3.0

    tf.saved_model.save(Module(), str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    assert _tf_function.is_restored(loaded.scale) and not _tf_function.is_restored(tf.function(abs))
    assert loaded.scale.name == "restored_function_body"  # Every restored function's dispatcher.
    assert loaded.scale.__name__ == "restored_function_body"


def test_traces_before_counts_the_function_s_earlier_traces_as_each_trace_ends():
    @tf.function
    def add(x):
        return x + 1

    seen = []
    def note(tracing):
        seen.append(_compat.traces_before(tracing.function()))

    with _observers.listening_to_traces(note):
        for size in (1, 2, 2, 3):
            add(tf.ones([size]))
    assert seen == [0, 1, 2]
    assert add.experimental_get_tracing_count() == 3


def test_listening_installs_the_hook_and_leaving_restores_the_original_exactly():
    original = _tf_traces._OWNER.__dict__[_tf_traces._HOOKED]
    assert not _function_tracing.is_installed()
    first, second = FunctionRecords(), FunctionRecords()
    with _observers.listening_to_traces(first.on_trace):
        with _observers.listening_to_traces(second.on_trace):
            assert _function_tracing.is_installed()
            tf.function(lambda x: x + 1)(tf.ones([2]))
        assert _function_tracing.is_installed()  # The first listener still listens.
    assert _tf_traces._OWNER.__dict__[_tf_traces._HOOKED] is original
    assert not _function_tracing.is_installed()
    assert (len(first), len(second)) == (1, 1)
    with pytest.raises(ValueError, match="not a function-trace listener"):
        _observers.remove_trace_listener(first.on_trace)


def test_compat_hands_traces_to_one_sink_the_observers_and_listeners_share():
    seen = []
    with _observers.listening_to_traces(seen.append), tg.watch() as explanation:
        with pytest.raises(RuntimeError, match="sink is connected already"):
            _function_tracing.connect(object())
        tf.function(lambda x: x + 1)(tf.ones([2]))
    assert not _function_tracing.is_installed() and _function_tracing._sink is None
    assert len(seen) == 1 and explanation.count() == 1


def test_a_python_int_argument_retrace_names_the_argument(records):
    @tf.function
    def train_step(x, step):
        return x * step

    train_step(tf.ones([2]), 0)
    train_step(tf.ones([2]), 0)  # A cache hit: no record.
    train_step(tf.ones([2]), 1)
    first, second = records.records()
    assert [record_kind(first), record_kind(second)] == ["first", "retrace"]
    assert changes(second) == ["step: 0 -> 1"]
    assert format_signature(second.signature) == {"x": "float32[2]", "step": "1"}
    assert str(second.call_site) == f"{HERE}:{inspect.currentframe().f_lineno - 5}"
    assert second.caller == "test_a_python_int_argument_retrace_names_the_argument"
    assert str(second.definition) == f"{HERE}:{train_step.python_function.__code__.co_firstlineno}"
    assert second.qualname.endswith("<locals>.train_step")
    assert (second.origin, second.name, second.entry) == ("tf.function", "train_step", "Function.__call__")
    assert not second.library_function
    assert second.duration > 0


def test_a_shape_change_retrace_names_the_dimension(records):
    @tf.function
    def f(x):
        return x * 2

    f(tf.ones([60, 3]))
    f(tf.ones([32, 3]))
    assert changes(records.records()[1]) == ["x: dim 0 60 -> 32"]


def test_a_tf_function_made_in_a_loop_is_a_new_object_of_the_same_code(records):
    def step(x):
        return x + 1

    for _ in range(3):
        tf.function(step)(tf.ones([2]))
    kinds = [record_kind(r) for r in records.records()]
    assert kinds == ["first", "new_function", "new_function"]
    last = records.records()[-1]
    assert (last.object_number, last.objects) == (3, 3)
    assert [c.aspect for c in last.changes] == ["function_object"]


def test_a_variable_creating_first_trace_is_followed_by_a_variable_retrace(records):
    class Scale(tf.Module):
        def __init__(self):
            self.weight = None

        @tf.function
        def __call__(self, x):
            if self.weight is None:
                self.weight = tf.Variable(2.0, name="weight")
            return x * self.weight

    Scale()(tf.ones([2]))
    first, second = records.records()
    assert (first.phase, first.created_variables) == ("variable_creation", ("weight",))
    assert (record_kind(second), second.phase, texts(second.changes)) == (
        "variable_retrace", "no_variable_creation", ())
    assert list(first.signature) == ["x"]  # The method's `self` is not an argument.


def test_a_nested_tf_function_names_the_trace_it_ran_in(records):
    @tf.function
    def inner(x):
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    outer(tf.ones([2]))
    by_name = {r.name: r for r in records.records()}
    assert by_name["inner"].parent == by_name["outer"].serial
    assert by_name["outer"].parent is None


def test_the_record_s_graph_is_the_graph_layer_runs_see(records):
    seen = {}

    class Probe(tf.Module):
        @tf.function
        def __call__(self, x):
            graph = _compat.default_graph()
            seen["frame"] = _tf_function.enclosing_tf_function(graph)
            seen["tracing"] = _function_tracing.tracing_of_graph(graph)
            seen["graph"] = graph
            return x + 1

    Probe()(tf.ones([2]))
    tracing, graph = seen["tracing"], seen["graph"]
    assert seen["frame"].trace() is graph
    assert tracing.graph() is graph
    assert tracing.serial == records.records()[0].serial
    assert _function_tracing.tracing_of_graph(graph) is None  # The trace has ended.


def test_a_while_loop_body_belongs_to_the_function_trace_it_is_built_in(records):
    roles = []

    @tf.function
    def count(n):
        def body(i, total):
            graph = _compat.default_graph()
            tracing = _function_tracing.tracing_of_graph(graph)
            roles.append((_tf_graphs.graph_role(graph), _tf_graphs.control_flow_path(graph),
                          tracing.name, _tf_graphs.function_graph_of(graph) is tracing.graph()))
            return i + 1, total + tf.cast(i, tf.float32)

        return tf.while_loop(lambda i, total: i < n, body, (tf.constant(0), tf.constant(0.0)))

    count(tf.constant(3))
    assert roles == [("while_body", ("while_body",), "count", True)]
    assert [r.name for r in records.records()] == ["count"]  # The body is no trace of its own.


def test_a_cond_branch_inside_a_while_body_is_on_the_control_flow_path(records):
    paths = []

    @tf.function
    def f(n):
        def body(i):
            def branch():
                paths.append(_tf_graphs.control_flow_path(_compat.default_graph()))
                return i + 1

            return tf.cond(i > 0, branch, lambda: i + 2)

        return tf.while_loop(lambda i: i < n, body, (tf.constant(0),))

    f(tf.constant(3))
    assert paths == [("while_body", "cond_branch")]
    assert _tf_graphs.graph_role(tf.compat.v1.get_default_graph()) == "eager"


def test_a_tf_data_map_function_is_recorded_with_the_user_s_function(records):
    def scale(features, label):
        return features * 2, label

    tf.data.Dataset.from_tensor_slices((np.ones((4, 3), "float32"), np.ones(4, "int32"))).map(scale)
    (record,) = records.records()
    assert (record.origin, record.qualname) == ("tf.data", scale.__qualname__)
    assert format_signature(record.signature) == {"features": "float32[3]", "label": "int32[]"}
    assert str(record.call_site) == f"{HERE}:{inspect.currentframe().f_lineno - 4}"
    assert str(record.definition) == f"{HERE}:{scale.__code__.co_firstlineno}"


def test_keras_fit_records_its_train_step_called_from_the_test(records):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), batch_size=4, verbose=0)
    fit_line = inspect.currentframe().f_lineno - 1
    steps = [r for r in records.records() if r.entry and r.entry.endswith(".fit")]
    assert steps, [(r.name, r.entry) for r in records.records()]
    assert {str(r.call_site) for r in steps} == {f"{HERE}:{fit_line}"}
    assert all(r.caller == "test_keras_fit_records_its_train_step_called_from_the_test" for r in steps)
    assert all(record_kind(r) in ("first", "variable_retrace") for r in steps)
    assert all(r.library_function for r in steps)  # Keras's own step functions.


def test_a_model_rebuilt_per_iteration_gets_a_new_predict_function_of_the_same_code(records):
    for _ in range(3):
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.predict(np.ones((4, 4), "float32"), verbose=0)
    last_by_code = {}
    for record in records.records():
        last_by_code[(record.qualname, record.definition)] = record
    assert max(r.objects for r in last_by_code.values()) == 3
    assert any(record_kind(r) == "new_function" for r in records.records())


def test_saving_traces_are_marked(records, tmp_path):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def serve(self, x):
            return x * 2

    module = Module()
    tf.saved_model.save(module, str(tmp_path / "saved"))
    assert any(r.saving for r in records.records())
    assert all(format_signature(r.signature) == {"x": "float32[None,2]"}
               for r in records.records() if r.name == "serve")


def _op_types(concrete):
    return sorted(op.type for op in concrete.graph.get_operations())


def test_the_hook_adds_no_op_to_traced_graphs():
    def body(x, step):
        return tf.reduce_sum(x * step)

    plain = _op_types(tf.function(body).get_concrete_function(tf.ones([3]), 2))
    records = FunctionRecords()
    with _observers.listening_to_traces(records.on_trace):
        watched = _op_types(tf.function(body).get_concrete_function(tf.ones([3]), 2))
    assert watched == plain
    assert len(records) == 1


def test_a_listener_failure_is_logged_and_the_trace_goes_on(caplog):
    def broken(tracing):
        raise RuntimeError("listener bug")

    with _observers.listening_to_traces(broken), caplog.at_level(logging.ERROR, "traceguard"):
        assert float(tf.function(lambda x: x * 3)(tf.constant(2.0))) == 6.0
    assert "A function-trace listener failed" in caplog.text


def test_tensorflow_s_retracing_warning_carries_the_note():
    @tf.function
    def f(step):
        return step

    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    records = FunctionRecords()
    notes = []

    def note_for(text):
        notes.append(text)
        found = records.records_for_function_text(text)
        return f"traceguard: {changes(found[-1])[0]}" if found else None

    try:
        with _observers.listening_to_traces(records.on_trace), \
                _tf_retracing.retracing_warning_notes(note_for):
            for step in range(6):
                f(step)
    finally:
        logger.removeHandler(handler)
    warnings = [m for m in messages if "triggered tf.function retracing" in m]
    assert warnings, messages
    assert warnings[0].endswith("traceguard: step: 3 -> 4")
    # TensorFlow warned at the fifth trace (step 4), the threshold traceguard reads.
    assert _tf_retracing.frequent_tracing_threshold() == 5
    assert notes[0] == repr(f.python_function)
    assert all(not isinstance(f, _tf_retracing._RetracingNote) for f in logger.filters)


def test_a_moved_internal_fails_loudly_with_the_versions():
    with pytest.raises(RuntimeError, match=r"tracing_compilation._create_concrete_function.*"
                                           r"found \('x',\).*TensorFlow"):
        _tf_traces._check_parameters(lambda x: x, ("function_type",),
                                     "tracing_compilation._create_concrete_function")
    with pytest.raises(RuntimeError, match="with the locals"):
        _tf_traces._check_locals(lambda: None, ("args",), "Something._maybe_define_function")


# --- graph fingerprints (`_graph_fingerprint`) -------------------------------------------------
def test_graph_fingerprint_ignores_names_and_shapes_but_not_ops_or_constants():
    from traceguard._compat import _graph_fingerprint

    @tf.function
    def f(x, n):
        return tf.reduce_sum(x * n)

    def graph(*args):
        return f.get_concrete_function(*args).graph

    # `FuncGraph.as_graph_def()` with node names, inputs as "name:port", attrs with shapes.
    small, large = graph(tf.ones([2, 3]), 2.0), graph(tf.ones([5, 3]), 2.0)
    placeholder = next(node for node in small.as_graph_def().node if node.op == "Placeholder")
    assert "shape" in placeholder.attr and placeholder.name == "x"
    assert _graph_fingerprint.fingerprint(small) == _graph_fingerprint.fingerprint(large)
    other = graph(tf.ones([2, 3]), 3.0)  # Another constant.
    assert _graph_fingerprint.fingerprint(small) != _graph_fingerprint.fingerprint(other)


def test_graph_fingerprint_compares_cond_branches_by_their_functions():
    from traceguard._compat import _graph_fingerprint

    @tf.function
    def f(x, add):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x + add, lambda: x - 1.0)

    def fingerprint(*args):
        return _graph_fingerprint.fingerprint(f.get_concrete_function(*args).graph)

    # The branches' functions get new names each trace: compared by content.
    assert fingerprint(tf.ones([2]), 1.0) == fingerprint(tf.ones([3]), 1.0)
    assert fingerprint(tf.ones([2]), 1.0) != fingerprint(tf.ones([2]), 2.0)


def test_same_graph_as_is_computed_from_the_second_trace_of_a_function_object(records):
    @tf.function
    def f(x):
        return x * 2.0

    for length in (2, 3):
        f(tf.ones([length]))
    first, second = records.records()
    assert (first.same_graph_as, second.same_graph_as) == (None, first.serial)


def test_graphs_of_dead_function_objects_are_dropped_past_the_bound(records, monkeypatch):
    import gc

    from traceguard._compat import _graph_fingerprint

    monkeypatch.setattr(_graph_fingerprint, "_MAX_FUNCTIONS", 2)
    for _ in range(5):  # A tf.function made per iteration, dropped at the next.
        tf.function(lambda x: x + 1.0)(tf.ones([2]))
        gc.collect()
    assert len(_graph_fingerprint._graphs) <= 2


def test_a_listener_error_that_stops_the_trace_leaves_nothing_cached():
    # `no_retrace` relies on it: an error raised from the hook, after the graph was
    # built, reaches the caller as itself and TensorFlow caches no concrete function.
    class Stop(Exception):
        stops_trace = True

    def stop(tracing):
        raise Stop(tracing.name)

    body_runs = []

    @tf.function
    def f(x):
        body_runs.append(x.shape)  # Runs only when TensorFlow traces.
        return x + 1

    with _observers.listening_to_traces(stop):
        for _ in range(2):
            with pytest.raises(Stop) as raised:
                f(tf.ones((2,)))
            assert type(raised.value) is Stop
        assert _function_tracing.running_traces() == ()
    assert len(body_runs) == 2  # The second call traced again: nothing was cached.
    assert f(tf.ones((2,))).numpy().tolist() == [2.0, 2.0]
    f(tf.ones((2,)))
    assert len(body_runs) == 3  # Traced once more, then cached.


def test_a_listener_error_without_stops_trace_is_logged_and_the_call_goes_on(caplog):
    def broken(tracing):
        raise ValueError("broken listener")

    f = tf.function(lambda x: x * 3)
    with _observers.listening_to_traces(broken):
        assert f(tf.ones((1,))).numpy().tolist() == [3.0]
    assert "A function-trace listener failed on the trace of" in caplog.text


# --- the call's key, as TensorFlow compares it (#31) ------------------------------------------
def test_each_trace_type_reads_as_the_spec_of_what_tensorflow_compares():
    import collections

    from tensorflow.core.function.trace_type import trace_type_builder

    from traceguard._compat.tensorflow import keys as _tf_trace_types
    from traceguard._core.specs import MappingSpec, ObjectSpec, SequenceSpec, TensorSpec, ValueSpec

    def read(value):
        return _tf_trace_types.trace_type_spec(trace_type_builder.from_value(value))

    def function():
        pass

    pair = collections.namedtuple("Pair", "a b")
    assert read(3) == ValueSpec("3") and read("s") == ValueSpec("'s'")
    assert read(tf.ones((2, 3))) == TensorSpec("float32", (2, 3))
    assert read(tf.ragged.constant([[1], [2, 3]])) == TensorSpec("int32", (2, None), "RaggedTensor")
    assert read(tf.sparse.from_dense(tf.eye(2))) == TensorSpec("float32", (2, 2), "SparseTensor")
    inner = SequenceSpec("tuple", (ValueSpec("2"),), 1)
    assert read([1, (2,)]) == SequenceSpec("list", (ValueSpec("1"), inner), 2)
    assert read(pair(1, 2)) == SequenceSpec("Pair", (ValueSpec("1"), ValueSpec("2")), 2)
    assert read({"b": 1}) == MappingSpec((("'b'", ValueSpec("1")),), 1)
    spec = read(function)
    assert isinstance(spec, ObjectSpec) and (spec.type_name, spec.site.line) == (
        "function", function.__code__.co_firstlineno)
    assert read(function) == spec and read(lambda: 0) != spec  # The same object, another one.
    iterator = iter(tf.data.Dataset.from_tensor_slices(tf.ones((4, 2))).batch(2))
    assert read(iterator) == TensorSpec("float32", (None, 2))


def test_tf_data_iterators_are_followed_only_while_watched():
    from tensorflow.python.data.ops import iterator_ops

    from traceguard._compat.tensorflow import data_elements as _tf_data_elements

    original = iterator_ops.OwnedIterator.__next__
    with tg.watch():
        assert iterator_ops.OwnedIterator.__next__ is not original
        (element,) = list(tf.data.Dataset.from_tensor_slices(tf.ones((2, 2))).batch(2))
        assert _tf_data_elements.came_from_dataset({"x": element})
        assert not _tf_data_elements.came_from_dataset(tf.ones(2))
    assert iterator_ops.OwnedIterator.__next__ is original
