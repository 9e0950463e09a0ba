"""Function-level diagnosis on real runs: every traced function, its changes, and its layers' runs."""

import logging

import numpy as np
import pytest
import tensorflow as tf
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._core.keras_names import variable_owner
from traceguard._core.specs import format_signature
from traceguard._record import observers as _observers

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras


def events_of(explanation, function):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == function]
    return runs, runs.events


def test_plain_tf_function_with_a_python_int_gets_a_full_report():
    @tf.function
    def train_step(x, step):
        return x * 2

    with tg.watch() as explanation:
        for step in range(3):
            train_step(tf.ones((4, 3)), step)
    runs, events = events_of(explanation, "train_step")
    assert [event.kind.value for event in events] == ["trace", "retrace", "retrace"]
    assert [texts(event.changes) for event in events] == [(), ("step: 0 -> 1",), ("step: 1 -> 2",)]
    assert format_signature(events[0].signature) == {"x": "float32[4,3]", "step": "0"}
    assert events[1].hint.startswith("Each new Python value of `step` is a new signature: pass it as a")
    assert str(events[1].call_site).startswith(__file__ + ":")
    assert str(runs.definition).startswith(__file__ + ":") and runs.keras_step is False
    (key,) = explanation.functions
    assert (key.qualname, key.definition) == (runs.name, runs.definition)
    assert key == f"{runs.name} ({runs.definition})" and explanation.functions[str(key)].events
    assert all(event.duration_s > 0 for event in events)
    text = explanation.summary(full=True)
    assert "Function `train_step`" in text and "changed: step: 0 -> 1" in text
    assert "no Keras layer" not in text.splitlines()[0]


def test_closest_earlier_signature_is_searched_among_all_earlier_traces():
    @tf.function
    def f(x, mode):
        return x

    with tg.watch() as explanation:
        f(tf.ones((2,)), "a")
        f(tf.ones((3,)), "b")
        f(tf.ones((2,)), "b")  # Closest to the second: one argument differs, not two.
    _, events = events_of(explanation, "f")
    assert texts(events[2].changes) == ("x: dim 0 3 -> 2",)


def test_tf_function_made_per_call_is_named_with_the_number_of_objects():
    with tg.watch() as explanation:
        for _ in range(3):
            tf.function(lambda x: x + 1)(tf.ones(2))
    runs, events = events_of(explanation, "<lambda>")
    assert runs.objects == 3
    assert [event.kind.value for event in events] == ["trace", "trace", "trace"]
    assert str(events[2].changes[0]) == (
        "<lambda>: function object #2 -> #3 (a new function object from the same code)")
    assert "a new function object (#3 so far)" in events[2].reason
    assert events[2].hint.startswith("Create the tf.function once")


def test_model_rebuilt_per_iteration_names_the_new_step_objects_and_the_fix():
    dense = keras.layers.Dense(2, name="shared")
    with tg.watch() as explanation:
        for _ in range(3):
            model = keras.Sequential([keras.Input((3,)), dense])
            model.predict(np.ones((4, 3)), verbose=0)
    step = [runs for runs in explanation.functions.values() if runs.keras_step]
    assert len(step) == 1 and step[0].objects == 3
    assert step[0].events[-1].hint.startswith("Build the model once and reuse it")
    # Keras 2 also runs the shared layer on symbolic inputs as each new model is built.
    shared = [event for event in explanation.layers["shared"].events if event.kind.value != "symbolic"]
    assert [event.kind.value for event in shared] == ["trace", "trace", "trace"]
    assert "new function object (#3 so far)" in shared[-1].reason
    assert shared[-1].hint.startswith("Build the model once and reuse it")
    assert shared[-1].function_trace == step[0].events[-1].serial


def test_evaluate_after_fit_is_a_first_trace_of_the_test_step_not_a_new_object():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    x, y = np.zeros((64, 4)), np.zeros((64, 2))
    with tg.watch() as explanation:
        model.fit(x, y, batch_size=32, verbose=0)
        model.evaluate(x, y, batch_size=32, verbose=0)
    events = [event for runs in explanation.functions.values() if runs.keras_step for event in runs.events]
    assert len(events) >= 2  # The train step's first trace, then the test step's.
    # Keras 2's optimizer creates its slots in the train step's first trace: a variable retrace.
    assert {event.kind.value for event in events} <= {"trace", "variable_retrace"}
    assert events[-1].kind.value == "trace"
    assert not any("function object" in str(change) for event in events for change in event.changes)


def test_layer_retrace_names_the_enclosing_functions_python_argument():
    dense = keras.layers.Dense(2, name="inner")
    dense.build((4, 3))

    @tf.function
    def step(x, epoch):
        return dense(x)

    with tg.watch() as explanation:
        step(tf.ones((4, 3)), 0)
        step(tf.ones((4, 3)), 1)
    retrace = explanation.layers["inner"].events[-1]
    assert retrace.kind is tg.TraceKind.RETRACE and texts(retrace.changes) == ("epoch: 0 -> 1",)
    assert "its own arguments changed: epoch: 0 -> 1" in retrace.reason
    assert "`epoch`" in retrace.hint and "tf.constant" in retrace.hint


def test_tensorflow_retracing_warning_carries_the_measured_cause(caplog):
    @tf.function
    def noisy(x, k):
        return x + k

    with tg.watch(), caplog.at_level(logging.WARNING, logger="tensorflow"):
        for k in range(8):
            noisy(tf.ones(2), k)
    warnings = [r.getMessage() for r in caplog.records if "triggered tf.function retracing" in r.getMessage()]
    assert warnings
    assert "traceguard: `noisy` traced" in warnings[0] and "changed: k: " in warnings[0]


def test_function_hook_is_installed_only_while_watched():
    from traceguard._compat import _function_tracing

    assert not _function_tracing.is_installed() and _observers.function_records is None
    with tg.watch():
        assert _function_tracing.is_installed()
    assert not _function_tracing.is_installed() and _observers.function_records is None


def test_html_and_text_reports_agree_on_counts(tmp_path):
    @tf.function
    def g(x):
        return x

    layer = keras.layers.Dense(2, name="counted")
    with tg.watch() as explanation:
        g(tf.ones((2,)))
        g(tf.ones((3,)))
        tf.function(layer)(tf.ones((2, 3)))
    first_line = explanation.summary(full=True).splitlines()[0]
    html = explanation.to_html(tmp_path / "report.html").read_text()
    # "2 functions traced, 1 layer; 1 trace, 1 variable_retrace; ..." in both.
    counts = first_line.split(": ", 1)[1].split(";")[1].strip()
    assert counts in html and "2 functions traced" in first_line and "2 functions traced" in html
    assert "<h2>Functions</h2>" in html


def test_custom_loop_variable_retrace_names_the_optimizer_slots():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    optimizer = keras.optimizers.Adam()

    @tf.function
    def train(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        return loss

    with tg.watch() as explanation:
        train(tf.ones((8, 4)), tf.ones((8, 1)))
    _, events = events_of(explanation, "train")
    assert [event.kind.value for event in events] == ["trace", "variable_retrace"]
    # Keras 3 names them `adam/dense_kernel_momentum`, Keras 2 `Adam/m/dense/kernel`.
    assert events[0].created_variables
    assert all(variable_owner(name) == "optimizer" for name in events[0].created_variables)
    assert events[1].hint.startswith("The first trace created the optimizer's variables (`")
    assert "`optimizer.build(model.trainable_variables)`" in events[1].hint
    assert "call the layer once" not in events[1].hint


def test_a_list_of_varying_length_gets_the_ragged_fix():
    @tf.function
    def pool(segments):
        return tf.add_n(segments)

    with tg.watch() as explanation:
        pool([tf.ones(3)] * 2)
        pool([tf.ones(3)] * 4)
    _, events = events_of(explanation, "pool")
    assert texts(events[1].changes) == ("segments: [float32[3], float32[3]] -> "
                                 "[float32[3], float32[3], float32[3], float32[3]]",)
    assert "`segments` is a list whose length varies" in events[1].hint
    assert "tf.RaggedTensor" in events[1].hint


def test_trace_monitor_records_the_keras_steps_it_sees():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    monitor = tg.callbacks.TraceMonitor()
    model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=8, verbose=0, callbacks=[monitor])
    steps = [runs for runs in monitor.report.functions.values() if runs.keras_step]
    assert {runs.function for runs in steps} & {"one_step_on_data", "train_function"}
    assert _observers.function_records is None  # The hook left with the fit.


def test_a_library_function_is_reported_once_its_code_traces_as_often_as_tensorflow_warns():
    # `tf.vectorized_map` called eagerly makes a new tf.function (`pfor`'s `f`) per call.
    threshold = _compat.frequent_tracing_threshold()
    with tg.watch() as few:
        for _ in range(threshold - 1):
            tf.vectorized_map(lambda x: x * 2, tf.ones((4, 3)))
    assert few.functions == {}
    with tg.watch() as many:
        for _ in range(threshold + 1):
            tf.vectorized_map(lambda x: x * 2, tf.ones((4, 3)))
    (runs,) = many.functions.values()
    assert runs.function == "f" and runs.objects == threshold + 1
    assert [event.kind.value for event in runs.events] == ["trace"] * (threshold + 1)
    assert texts(runs.events[-1].changes) == (f"f: function object #{threshold} -> #{threshold + 1} "
                                             "(a new function object from the same code)",)
    assert "call that API inside one tf.function of yours, defined once outside the loop" \
        in runs.events[-1].hint.replace("\n", " ")
    assert all(event.phases.get("trace", 0) > 0 for event in runs.events)  # Held, then completed.
    # A held trace's call returned before it was reported: its event holds the one record, as it ended,
    # and the cost held beside it (no completed copy of the record).
    held = runs.events[:threshold - 1]
    assert all(event.miss_s is not None and event.trace.miss_cost.miss is None for event in held)
