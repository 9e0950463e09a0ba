"""Fix-its on real retraces, checked by replay; retraces that built the same graph."""

import gc

import numpy as np
import pytest
import tensorflow as tf
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._diagnosis.fixes import propose_fix
from traceguard._reports.fixes import format_fix_checks, same_graph_text

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras


def runs_of(explanation, function):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == function]
    return runs


def fix_of(explanation, function):
    (fix,) = [fix for fix in explanation.fixes() if fix.function == function]
    return fix


def check_of(explanation, function):
    (check,) = [check for check in explanation.verify_fixes() if check.fix.function == function]
    return check


def test_shape_retracing_function_of_the_tf_docs_gets_an_input_signature_verified_from_4_traces_to_1():
    traced = []

    @tf.function
    def double(a):
        traced.append(a.shape.as_list())
        return a + a

    with tg.watch() as explanation:
        for length in (2, 3, 4, 5):
            double(tf.ones([length, 3]))
    fix = fix_of(explanation, "double")
    assert fix.kind == "input_signature"
    assert [(a.name, a.dtype, a.dims) for a in fix.arguments] == [("a", "float32", (None, 3))]
    assert "tf.TensorSpec(shape=[None, 3], dtype=tf.float32),  # a" in str(fix)
    traced.clear()
    check = check_of(explanation, "double")
    assert (check.replayed, check.before, check.after, check.problem) == (4, 4, 1, None)
    assert check.verified
    assert str(check).startswith("`double`: 4 traces -> 1 with this input_signature; replayed the 4 "
                                 "recorded signatures as zero tensors of their specs")
    assert "side effects in its body ran during the replay" in str(check)
    # The replay ran the body: 4 traces of the copy as written, 1 of the fixed copy.
    assert traced == [[2, 3], [3, 3], [4, 3], [5, 3], [None, 3]]
    # The user's function object was not called again.
    assert double.experimental_get_tracing_count() == 4


def test_python_int_retrace_gets_the_tensor_fix_verified_with_tf_constant():
    @tf.function
    def power(x, n):
        return tf.pow(x, tf.cast(n, x.dtype))

    with tg.watch() as explanation:
        for n in (1, 2, 3):
            power(tf.ones([4]), n)
    fix = fix_of(explanation, "power")
    assert fix.to_tensors == ("n",)
    assert [(a.name, a.dtype, a.dims, a.from_number) for a in fix.arguments] == [
        ("x", "float32", (4,), False), ("n", "int32", (), True)]
    assert "pass `n` as a tensor, not a Python number: `tf.constant(3)` where you passed `3`" in str(fix)
    check = check_of(explanation, "power")
    assert (check.before, check.after, check.verified) == (3, 1, True)
    assert "(`n` as int32 `tf.constant`s of the recorded value)" in str(check)


def test_python_int_mixed_with_floats_is_verified_as_a_float32_tensor():
    @tf.function
    def scale(x, n):
        return x * n  # TensorFlow converts the Python int to float32; an int32 tensor would fail.

    with tg.watch() as explanation:
        for n in (1, 2, 3):
            scale(tf.ones([4]), n)
    check = check_of(explanation, "scale")
    assert (check.before, check.after, check.fix.tensor_dtype) == (3, 1, "float32")
    assert "`tf.constant(3, dtype=tf.float32)`" in str(check.fix)


def test_python_value_with_a_non_tensor_argument_gets_the_tensor_argument_fix():
    @tf.function
    def step(x, n, mode):
        return x * tf.cast(n, x.dtype) if mode == "scale" else x

    with tg.watch() as explanation:
        for n in (1, 2, 3):
            step(tf.ones([2]), n, "scale")
    fix = fix_of(explanation, "step")
    assert (fix.kind, fix.to_tensors, fix.reduce_retracing) == ("tensor_argument", ("n",), False)
    assert (check_of(explanation, "step").before, check_of(explanation, "step").after) == (3, 1)


def test_shapes_inside_a_list_get_reduce_retracing():
    @tf.function
    def total(parts):
        return tf.add_n([tf.reduce_sum(p) for p in parts])

    with tg.watch() as explanation:
        for length in (2, 3, 4):
            total([tf.ones([length]), tf.ones([length])])
    fix = fix_of(explanation, "total")
    assert (fix.kind, fix.reduce_retracing, fix.arguments) == ("reduce_retracing", True, ())
    assert "@tf.function(reduce_retracing=True)" in str(fix)
    check = check_of(explanation, "total")
    assert check.before == 3 and check.after < 3 and check.verified


def test_bool_choosing_a_branch_and_a_dtype_change_get_no_fix():
    @tf.function
    def branch(x, flag):
        return x + 1.0 if flag else x * 3.0

    @tf.function
    def cast(x):
        return x + x

    with tg.watch() as explanation:
        branch(tf.ones([2]), True)
        branch(tf.ones([2]), False)
        cast(tf.ones([2]))
        cast(tf.ones([2], tf.int32))
    assert explanation.fixes() == []


def test_keras_step_functions_get_no_fix():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")  # Its slots make `fit` trace its step twice.
    with tg.watch() as explanation:
        model.fit(np.zeros((10, 3)), np.zeros((10, 1)), batch_size=4, verbose=0)
    assert any(len(runs.events) > 1 for runs in explanation.functions.values())
    assert explanation.fixes() == []


def test_verify_fixes_prints_as_the_report_prints_its_checks():
    @tf.function
    def widen(a):
        return a * 2

    with tg.watch() as explanation:
        for length in (2, 3, 4):
            widen(tf.ones([length, 3]))
    checks = explanation.verify_fixes()
    (check,) = checks  # Still a list of `FixCheck`s.
    assert isinstance(checks, list) and checks == [check]
    text = str(checks)
    assert text == format_fix_checks([check])  # What `run --verify-fixes` prints.
    assert text.startswith("Fix-its, verified by replay (1):\n\nFix-it for `widen` (defined at ")
    assert "\n  check: `widen`: 3 traces -> 1 with this input_signature; replayed the 3 recorded" in text
    assert "FixCheck(" not in text


def test_a_function_gone_is_not_verified_and_says_why():
    def make():
        @tf.function
        def gone(x):
            return x + 1.0
        return gone

    with tg.watch() as explanation:
        function = make()
        for length in (2, 3):
            function(tf.ones([length]))
    del function
    gc.collect()
    (check,) = explanation.verify_fixes()
    assert (check.before, check.after, check.verified) == (None, None, False)
    assert str(check).startswith("`gone`: not verified: the function is gone: traceguard keeps only a "
                                 "weak reference to it")


def test_a_function_that_raises_on_zeros_is_not_verified_and_says_why():
    @tf.function
    def strict(x):
        tf.debugging.assert_positive(x)
        return x

    with tg.watch() as explanation:
        for length in (2, 3):
            strict(tf.ones([length]))
    check = check_of(explanation, "strict")
    assert not check.verified
    assert str(check).startswith("`strict`: not verified: the function raised InvalidArgumentError on the "
                                 "replayed zeros")


def test_a_function_reading_python_state_is_said_not_conclusive():
    state = {"scale": 1.0}

    @tf.function
    def scaled(x):
        return x * state["scale"]

    with tg.watch() as explanation:
        for scale in (1.0, 2.0, 3.0):
            state["scale"] = scale
            scaled(tf.ones([2]))  # Same signature: TF does not retrace; no fix to propose.
        for length in (2, 3):
            scaled(tf.ones([length]))
    check = check_of(explanation, "scaled")
    assert check.problem is None and (check.before, check.after) == (2, 1)


def test_proposal_needs_two_signatures():
    assert propose_fix([]) is None


# --- retraces that changed nothing -------------------------------------------------------
def test_retrace_with_the_same_graph_is_flagged_and_one_with_another_graph_is_not():
    @tf.function
    def shapes(x):
        return tf.reduce_sum(x * 2.0)

    @tf.function
    def branch(x, flag):
        if flag:
            return x + 1.0
        return x * 3.0

    @tf.function
    def unused(x, n):
        return x * 2.0

    @tf.function
    def used(x, n):
        return x * n

    with tg.watch() as explanation:
        for length in (2, 3, 4):
            shapes(tf.ones([length, 4]))
        branch(tf.ones([2]), True)
        branch(tf.ones([2]), False)
        unused(tf.ones([2]), 1)
        unused(tf.ones([2]), 2)
        used(tf.ones([2]), 1)
        used(tf.ones([2]), 2)
    first = runs_of(explanation, "shapes").events[0].serial
    assert [e.same_graph_as for e in runs_of(explanation, "shapes").events] == [None, first, first]
    assert [e.same_graph_as for e in runs_of(explanation, "branch").events] == [None, None]
    first = runs_of(explanation, "unused").events[0].serial
    assert [e.same_graph_as for e in runs_of(explanation, "unused").events] == [None, first]
    assert [e.same_graph_as for e in runs_of(explanation, "used").events] == [None, None]
    report = explanation.summary(full=True)
    assert ("waste: the same graph as #1 (same ops, wiring and constants; only shapes or unused values\n"
            "            differ): this retrace was pure waste. Safe to relax: `x` dim 0 (`None` in an\n"
            "            input_signature).") in report
    assert "Safe to relax: `n` (the graph does not use it: remove it from the arguments)." \
        in report.replace("\n            ", " ")
    assert report.count("waste:") == 3
    # `shapes`'s second waste relaxes the same dimension: said once, as the fix is.
    assert report.count("Safe to relax: `x` dim 0") == 1
    assert ("     waste: the same graph as #1, as above.\n"
            "     fix: as above.") in report


def test_variable_retrace_is_not_flagged_as_waste():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    with tg.watch() as explanation:
        model.fit(np.zeros((8, 3)), np.zeros((8, 1)), batch_size=4, verbose=0)
    events = [e for runs in explanation.functions.values() for e in runs.events]
    assert "variable_retrace" in [e.kind.value for e in events]
    assert [e.same_graph_as for e in events] == [None] * len(events)


# --- `python -m traceguard run --verify-fixes` -------------------------------------------------
def test_run_verify_fixes_keeps_the_script_functions_alive_and_prints_the_checks(tmp_path):
    import io
    import pathlib

    from traceguard._diagnosis.run import run_script

    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "retracing_shapes.py"
    err = io.StringIO()
    assert run_script(str(example), [], None, err, summary=True, verify_fixes=True) == 0
    text = err.getvalue()
    assert "Fix-its, verified by replay (2):" in text
    assert "      tf.TensorSpec(shape=[None], dtype=tf.float32),  # a\n" in text
    assert ("  check: `double`: 4 traces -> 1 with this input_signature; replayed the 4 recorded "
            "signatures as\n") in text
    assert "  check: `scale`: 3 traces -> 1 with this input_signature" in text
    err = io.StringIO()
    assert run_script(str(example), [], None, err, summary=True) == 0
    assert "Fix-its (2; check them with explanation.verify_fixes() or `run --verify-fixes`):" \
        in err.getvalue()
    assert "check:" not in err.getvalue()


def test_cli_accepts_verify_fixes():
    from traceguard._cli import build_parser

    arguments = build_parser().parse_args(["run", "--verify-fixes", "script.py"])
    assert arguments.verify_fixes is True


def test_a_layer_wrapped_in_tf_function_gets_its_input_signature_verified():
    layer = keras.layers.Dense(2, name="scripted")
    step = tf.function(layer)
    with tg.watch() as explanation:
        for batch in (3, 5, 7):
            step(tf.ones((batch, 2)))
    (fix,) = explanation.fixes()
    assert fix.wrapped_object == "Dense 'scripted'"
    assert str(fix).splitlines()[1:4] == [
        "  tf.function(layer, input_signature=[",
        f"      tf.TensorSpec(shape=[None, 2], dtype=tf.float32),  # {fix.arguments[0].name}",
        "  ])  # layer: the Dense 'scripted'"]
    (check,) = explanation.verify_fixes()
    assert (check.before, check.after, check.verified) == (3, 1, True)
    assert str(check).startswith("`tf.function` of the Dense 'scripted': 3 traces -> 1 with this "
                                 "input_signature")
    # The retraces for batches 5 and 7 built the graph of the variable retrace for batch 3 (the
    # first trace, which created the variables, is in another phase: not compared).
    (runs,) = explanation.functions.values()
    assert [event.kind.value for event in runs.events] == ["trace", "variable_retrace", "retrace", "retrace"]
    lifted = runs.events[1].serial
    assert [event.same_graph_as for event in runs.events] == [None, None, lifted, lifted]


def test_html_report_says_which_retrace_was_waste():
    @tf.function
    def shapes(x):
        return x * 2.0

    with tg.watch() as explanation:
        for length in (2, 3):
            shapes(tf.ones([length]))
    html = explanation._repr_html_()
    assert "<b>Waste:</b> the same graph as #1" in html
    assert "Safe to relax: <code>x</code> dim 0 (<code>None</code> in an input_signature)." in html


def test_verify_fixes_inside_watch_leaves_the_replay_out_of_the_report():
    @tf.function
    def double(a):
        return a + a

    with tg.watch() as explanation:
        for length in (2, 3, 4):
            double(tf.ones([length]))
        (check,) = explanation.verify_fixes()
    assert (check.before, check.after) == (3, 1)
    (runs,) = explanation.functions.values()
    assert [event.kind.value for event in runs.events] == ["trace", "retrace", "retrace"]
    assert runs.objects == 1


def test_waste_names_what_differs_from_the_trace_whose_graph_was_built_again():
    @tf.function
    def f(x, y):
        return x + tf.reduce_sum(y)

    with tg.watch() as explanation:
        f(tf.ones([2]), tf.ones([2]))
        f(tf.ones([3]), tf.ones([2]))
        f(tf.ones([3]), tf.ones([4]))  # Closest to #2 (y changed); the graph is #1's.
    third = runs_of(explanation, "f").events[2]
    assert texts(third.changes) == ("y: dim 0 2 -> 4",)
    assert third.same_graph_as == runs_of(explanation, "f").events[0].serial
    report = explanation.summary(full=True).replace("\n            ", " ")
    assert ("the same graph as #1 (same ops, wiring and constants; only shapes or unused values differ): "
            "this retrace was pure waste. Safe to relax: `x` dim 0 (`None` in an input_signature); "
            "`y` dim 0 (`None` in an input_signature).") in report


def test_waste_with_no_argument_changed_names_nothing_to_relax():
    # A retrace with the arguments of the trace whose graph it built again (what changed is outside
    # them): no "Safe to relax" with an empty list.
    assert same_graph_text((), "#1") == (
        "the same graph as #1 (same ops, wiring and constants): this retrace was pure waste.")


def test_default_report_says_which_fixes_a_replay_proved():
    @tf.function
    def double(a):
        return a * 2

    with tg.watch() as explanation:
        for length in (2, 3, 4):
            double(tf.ones((length,)))
    text = explanation.summary()
    assert "proved:" not in text  # Nothing replayed yet.
    text = explanation.summary(fix_checks=explanation.verify_fixes())
    assert text.splitlines()[3].startswith("1. `double`: 2 retraces (#2, #3), ")
    assert ("   proved: replaying the 3 recorded signatures made 3 traces as written, 1 with the fix-it "
            "below") in text
