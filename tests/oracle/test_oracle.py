"""The oracle's own tests: its checks on records made by hand, and the backend's record on real runs."""

import pytest
from oracle import check, observe

pytestmark = pytest.mark.backend("tensorflow", "jax")


def _function(name, definition, events, dropped=0):
    kinds = {}
    for event in events:
        kinds[event[1]] = kinds.get(event[1], 0) + 1
    return {"name": name, "definition": definition, "dropped": dropped, "kind_counts": kinds,
            "events": events}


def _result(objects, functions, file_functions=None, layers=None, file_layers=None):
    live = {"functions": functions, "layers": layers or {}}
    read_back = {"functions": functions if file_functions is None else file_functions,
                 "layers": (layers or {}) if file_layers is None else file_layers}
    return {"objects": objects, "live": live, "file": read_back, "records": []}


def _object(name, traces, path="/user/step.py", line=3, library=False):
    return {"object": 0, "name": name, "qualname": name, "path": path, "line": line, "traces": traces,
            "library": library, "misses": []}


def test_agreeing_records_have_no_disagreement():
    functions = {"step (/user/step.py:3)": _function("step", ["/user/step.py", 3], [
        [1, "trace", 1, []], [2, "retrace", 1, ["x: dim 0 2 -> 3"]]])}
    assert check("tensorflow", _result([_object("step", 2)], functions)) == []


def test_torch_frames_after_graph_breaks_are_compared_with_torchs_frames_of_their_own():
    # torch: `twice` breaks at lines 5 and 7; each frame compiled twice (a new size). The frames are
    # recorded as `twice`'s, with the break's line; torch names them after it, at that line.
    events = [[1, "trace", 1, [], None], [2, "trace", 1, [], 5], [3, "trace", 1, [], 7],
              [4, "retrace", 1, ["x: dim 0 3 -> 4"], None], [5, "retrace", 1, ["y: dim 0 3 -> 4"], 5],
              [6, "retrace", 1, ["y: dim 0 3 -> 4"], 7]]
    functions = {"twice (/user/step.py:3)": _function("twice", ["/user/step.py", 3], events)}
    frames = [_object("twice", 2), _object("torch_dynamo_resume_in_twice_at_5", 2, line=5),
              _object("torch_dynamo_resume_in_twice_at_7", 2, line=7)]
    assert check("torch", _result(frames, functions)) == []
    # A frame's first compile recorded as a retrace is a phantom; a frame torch never made, a count.
    phantom = [*events[:2], [3, "retrace", 1, [], 7], *events[3:]]
    functions = {"twice (/user/step.py:3)": _function("twice", ["/user/step.py", 3], phantom)}
    assert [d.check for d in check("torch", _result(frames, functions))] == ["phantom"]
    functions = {"twice (/user/step.py:3)": _function("twice", ["/user/step.py", 3], events)}
    found = check("torch", _result(frames[:2], functions))
    assert [(d.check, d.detail.split(";")[0]) for d in found][0] == (
        "count", "a frame after the graph break at line 7 recorded")


def test_new_object_recorded_as_retrace_is_a_phantom():
    # Two objects of one `def`, one trace each: the second object's first trace is no retrace.
    functions = {"step (/user/step.py:3)": _function("step", ["/user/step.py", 3], [
        [1, "trace", 1, []], [2, "retrace", 2, ["function object #1 -> #2"]]])}
    found = check("tensorflow", _result([_object("step", 1), _object("step", 1)], functions))
    assert [(d.check, d.function) for d in found] == [("phantom", "step (/user/step.py:3)")]
    assert "1 retraces recorded; the backend missed its objects' caches 0 times" in found[0].detail


def test_counts_and_objects_that_differ_are_disagreements():
    functions = {"step (/user/step.py:3)": _function("step", ["/user/step.py", 3], [[1, "trace", 1, []]])}
    found = check("tensorflow", _result([_object("step", 2)], functions))
    assert {d.check for d in found} == {"count", "objects"}
    assert "1 traces recorded; the backend's count is 2" in str(found[0])


def test_a_user_function_the_record_lacks_is_a_disagreement_a_library_one_is_not():
    objects = [_object("body", 3), _object("helper", 1, path="/site-packages/lib.py", library=True)]
    found = check("tensorflow", _result(objects, {}))
    assert [(d.check, d.function) for d in found] == [("count", "body (/user/step.py:3)")]


def test_a_function_without_a_source_file_is_no_users():
    # JAX explains misses of its own reduction computations, which have no source file.
    found = check("jax", _result([_object("<unknown>", 4, path=None, line=None)], {}))
    assert found == []


def test_trace_file_that_lost_events_is_a_disagreement():
    layers = {"dense": {"dropped": 0, "eager_calls": 0,
                        "events": [[0, "trace", 1, []], [1, "retrace", 2, []]]}}
    file_layers = {"dense": {"dropped": 0, "eager_calls": 0, "events": [[0, "trace", 1, []]]}}
    found = check("tensorflow", _result([], {}, layers=layers, file_layers=file_layers))
    assert [(d.check, d.function) for d in found] == [("file", "dense")]
    assert "only live: #1 retrace" in found[0].detail


@pytest.mark.backend("tensorflow")
def test_tensorflow_counts_each_function_object_on_its_own():
    import tensorflow as tf

    result = {}
    with observe("tensorflow", result):
        step = tf.function(lambda x: x * 2)
        for n in (1, 2, 3):  # Python ints: one trace per value.
            step(n)
        for _ in range(2):  # A new object per call: one trace each.
            tf.function(lambda x: x + 1)(tf.constant(1.0))
    counts = sorted(entry["traces"] for entry in result["objects"] if entry["name"] == "<lambda>")
    assert counts == [1, 1, 3]
    assert sum(n for function in result["live"]["functions"].values()
               for kind, n in function["kind_counts"].items() if kind != "compile") == 5


@pytest.mark.backend("jax")
def test_jax_counts_misses_per_function_object_with_their_caller():
    import jax
    import jax.numpy as jnp

    result = {}
    with observe("jax", result):
        @jax.jit
        def double(x):
            return x * 2

        double(jnp.ones(2))
        double(jnp.ones(3))
        double(jnp.ones(3))
    mine = [entry for entry in result["objects"] if entry["name"] == "double"]
    assert [entry["traces"] for entry in mine] == [2]
    assert [miss["via"] for miss in mine[0]["misses"]] == ["_trace_for_jit"] * 2
    assert "never seen function" in mine[0]["misses"][0]["message"]
    assert not [d for d in result["disagreements"] if "double" in d["function"]]


@pytest.mark.backend("jax")
def test_jax_control_flow_bodies_are_function_objects_of_their_own():
    import jax.numpy as jnp
    from jax import lax

    def ema(xs):
        def body(carry, x):  # A new function object per call: JAX's cache misses every time.
            return 0.9 * carry + 0.1 * x, carry
        return lax.scan(body, 0.0, xs)[1]

    result = {}
    with observe("jax", result):
        for _ in range(2):
            ema(jnp.ones(3))
    bodies = [entry for entry in result["objects"] if entry["name"] == "body"]
    assert [entry["traces"] for entry in bodies] == [1, 1]
    assert all(miss["via"] != "_trace_for_jit" for entry in bodies for miss in entry["misses"])
