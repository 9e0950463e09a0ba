"""A retrace is a miss of the same `tf.function` object's cache: kinds against TensorFlow's own counts.

Each test keeps the function objects it traced (the hook's `FunctionTracing.function`) and asks
each one `experimental_get_tracing_count()`: an object's first trace is a `trace`, whoever made the
object (a new model, a re-`compile()`, a `tf.function` made per call), and every later trace of the
same object is a `retrace` or a `variable_retrace`. Runs on Keras 3 and, with
`TF_USE_LEGACY_KERAS=1`, on tf_keras.
"""

import numpy as np
import pytest
import tensorflow as tf

import traceguard as tg
from traceguard import _compat
from traceguard._core.kinds import RETRACE_KINDS
from traceguard._record import observers as _observers

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras


class FunctionObjects:
    """The tf.function object of every trace made while listening, by trace serial (kept alive)."""

    def __init__(self):
        self.by_serial = {}

    def __call__(self, tracing):
        function = tracing.function() if tracing.function is not None else None
        if function is not None and tracing.origin == "tf.function":
            self.by_serial[tracing.serial] = function


def kinds_by_object(explanation, objects, function_names):
    """For each function object of the named functions: (its events' kinds, its own tracing count)."""
    grouped = {}
    for runs in explanation.functions.values():
        if runs.function not in function_names:
            continue
        for event in runs.events:
            function = objects.by_serial[event.serial]
            grouped.setdefault(id(function), (function, []))[1].append(event.kind.value)
    return [(kinds, function.experimental_get_tracing_count()) for function, kinds in grouped.values()]


def assert_kinds_follow_the_backend(per_object):
    for kinds, count in per_object:
        assert len(kinds) == count  # Every miss of the object recorded, and no other.
        assert kinds[0] == "trace"  # Its cache was empty.
        assert all(kind in {kind.value for kind in RETRACE_KINDS} for kind in kinds[1:])


def small_model(layer="dense"):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name=layer)])
    model.compile(optimizer="sgd", loss="mse")
    return model


STEPS = {"one_step_on_data", "train_function"}


def test_a_model_rebuilt_in_a_loop_traces_each_new_step_object_once():
    objects, models = FunctionObjects(), []
    x, y = np.ones((4, 3), "float32"), np.ones((4, 2), "float32")
    with _observers.listening_to_traces(objects), tg.watch() as explanation:
        for _ in range(5):
            model = small_model()
            models.append(model)  # Alive: each step object answers for its count.
            model.train_on_batch(x, y)
    per_object = kinds_by_object(explanation, objects, STEPS)
    assert len(per_object) == 5
    assert_kinds_follow_the_backend(per_object)
    assert sum(kinds.count("retrace") for kinds, _ in per_object) == 0
    (step,) = [runs for runs in explanation.functions.values() if runs.function in STEPS]
    # Keras 2's `train_function` traces each object twice: its first trace creates the optimizer's
    # variables, then the variable retrace (a miss of the same object).
    anew = [event for event in step.events if event.verdict.reason.value == "new_function_object"]
    assert step.objects == 5 and [event.kind.value for event in anew] == ["trace"] * 4
    assert anew[-1].hint.startswith("Build the model once and reuse it")
    # The layers ran in each new step object's first trace: traces, none a retrace.
    layer_kinds = [event.kind.value for runs in explanation.layers.values() for event in runs.events]
    assert "retrace" not in layer_kinds and layer_kinds.count("trace") >= 5
    assert "made anew: 5 function objects of this code" in explanation.summary(full=True)
    # The default report: one problem, the code made anew, with its fix.
    assert "4 traces of new function objects" in str(explanation)


def test_a_second_model_after_another_model_s_fit_is_a_first_trace_of_its_step():
    objects = FunctionObjects()
    x, y = np.ones((8, 3), "float32"), np.ones((8, 2), "float32")
    first, second = small_model(), small_model("second_dense")
    with _observers.listening_to_traces(objects), tg.watch() as explanation:
        first.fit(x, y, batch_size=4, verbose=0)
        second.train_on_batch(x[:4], y[:4])
    per_object = kinds_by_object(explanation, objects, STEPS)
    assert len(per_object) >= 2
    assert_kinds_follow_the_backend(per_object)
    second_runs = [event.kind.value for event in explanation.layers["second_dense"].events
                   if event.kind.value != "symbolic"]
    assert second_runs[0] == "trace" and "retrace" not in second_runs


def test_the_same_step_object_missing_its_cache_is_a_retrace():
    objects = FunctionObjects()
    model = small_model()
    with _observers.listening_to_traces(objects), tg.watch() as explanation:
        model.train_on_batch(np.ones((4, 3), "float32"), np.ones((4, 2), "float32"))
        model.train_on_batch(np.ones((3, 3), "float32"), np.ones((3, 2), "float32"))
    per_object = kinds_by_object(explanation, objects, STEPS)
    ((kinds, count),) = per_object  # Keras 2: trace, variable_retrace, retrace.
    assert (kinds[0], kinds[-1], count) == ("trace", "retrace", len(kinds))
    assert_kinds_follow_the_backend(per_object)


def test_a_tf_function_made_per_call_is_one_trace_per_object_and_reported_as_made_anew():
    objects = FunctionObjects()
    with _observers.listening_to_traces(objects), tg.watch() as explanation:
        kept = []
        for _ in range(4):
            step = tf.function(lambda x: x * 2)
            kept.append(step)
            step(tf.ones((2,)))
    per_object = kinds_by_object(explanation, objects, {"<lambda>"})
    assert per_object == [(["trace"], 1)] * 4
    summary = explanation.summary()
    assert "`<lambda>`: 3 traces of new function objects (#2, #3, #4)" in summary
    full = explanation.summary(full=True)
    assert "4 function objects of this code" in full and "retrace" not in full.split("\n")[0]


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3 makes its train and test steps from one def")
def test_train_and_test_steps_of_one_def_are_two_objects_each_with_its_own_traces():
    # `fit` with `validation_data` traces `one_step_on_data` as two tf.function objects (the train
    # and the test step, one `def` in Keras's trainer), each once.
    objects = FunctionObjects()
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((64, 3), "float32"), np.ones((64, 2), "float32")
    with _observers.listening_to_traces(objects), tg.watch() as explanation:
        model.fit(x, y, batch_size=32, validation_data=(x, y), epochs=2, verbose=0)
    per_object = kinds_by_object(explanation, objects, {"one_step_on_data"})
    assert per_object == [(["trace"], 1), (["trace"], 1)]
    (steps,) = [runs for runs in explanation.functions.values() if runs.function == "one_step_on_data"]
    assert sorted(event.object_number for event in steps.events) == [1, 2] and steps.objects == 2
