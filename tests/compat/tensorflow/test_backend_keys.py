"""tf.function's cache key as traceguard records it (#31): what TensorFlow compared, and the hint it
gives, on real runs; and no trace recorded where the body did not run."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._compat.tensorflow import data_elements as _tf_data_elements
from traceguard._core.changes import Aspect
from traceguard._core.specs import ObjectSpec, TensorSpec, ValueSpec, format_signature
from traceguard._core.verdicts import Hint

pytestmark = pytest.mark.backend("tensorflow")


def events_of(explanation, name):
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == name]
    return runs.events


def test_every_recorded_trace_ran_the_body_over_hits_and_misses():
    bodies = []

    @tf.function
    def step(x, n):
        bodies.append(1)
        return x * n

    with tg.watch() as explanation:
        for x, n in [((2,), 1), ((2,), 1), ((3,), 1), ((2,), 1), ((2,), 2), ((3,), 1), ((3,), 2)]:
            step(tf.ones(x), n)
    assert len(events_of(explanation, "step")) == len(bodies) == step.experimental_get_tracing_count() == 4


def test_a_python_callable_made_anew_is_keyed_by_identity_and_named_stably():
    @tf.function
    def apply(fn, x):
        return fn(x)

    with tg.watch() as explanation:
        for scale in (2.0, 3.0, 4.0):
            apply(lambda v, s=scale: v * s, tf.ones(2))  # A new lambda per call.
    events = events_of(explanation, "apply")
    assert [event.kind.value for event in events] == ["trace", "retrace", "retrace"]
    for event in events[1:]:
        (change,) = event.changes
        assert (change.parameter, change.aspect) == ("fn", Aspect.IDENTITY)
        assert isinstance(change.new, ObjectSpec) and change.new.site is not None
        assert "0x" not in str(change) and str(change).startswith("fn: a different Python function ")
        assert event.verdict.hint is Hint.OBJECT_IDENTITY
        assert "tf.function keys it by identity" in event.hint and "as a tensor" not in event.hint
    assert str(events[1].changes[0]) == str(events[2].changes[0])  # The same words every run.


def test_a_bound_method_passed_per_call_is_a_new_object_each_time():
    class Model:
        def step(self, x):
            return x + 1

    @tf.function
    def train_epoch(step, x):
        return step(x)

    model = Model()
    with tg.watch() as explanation:
        for _ in range(3):
            train_epoch(model.step, tf.ones(2))  # `model.step is not model.step`.
    events = events_of(explanation, "train_epoch")
    assert len(events) == 3 == train_epoch.experimental_get_tracing_count()
    assert [texts(event.changes) for event in events[1:]] == [
        (f"step: a different bound method {Model.step.__qualname__} (defined at test_backend_keys.py:"
         f"{Model.step.__code__.co_firstlineno}) (compared by identity)",)] * 2


def test_composite_tensors_are_keyed_by_the_spec_tensorflow_keeps():
    @tf.function
    def total(q):
        return tf.sparse.reduce_sum(q)

    with tg.watch() as explanation:
        for n in (3, 5):
            total(tf.sparse.from_dense(tf.ones((2, n))))
    (retrace,) = events_of(explanation, "total")[1:]
    assert texts(retrace.changes) == ("q: dim 1 3 -> 5",)
    assert format_signature(retrace.signature) == {"q": "SparseTensor float32[2,5]"}


def test_a_relaxed_trace_names_the_relaxed_signature_and_never_suggests_reduce_retracing():
    @tf.function(reduce_retracing=True)
    def f(data):
        return tf.reduce_sum(data)

    with tg.watch() as explanation:
        for rows in (1, 2, 3, 4):
            f(tf.ones((rows, 3)))
    events = events_of(explanation, "f")
    assert len(events) == 2 == f.experimental_get_tracing_count()  # Relaxed once, then reused.
    retrace = events[1]
    assert texts(retrace.changes) == ("data: dim 0 1 -> 2",)
    assert retrace.verdict.hint is Hint.RELAXED_DIMENSION
    assert retrace.verdict.relaxed_to == TensorSpec("float32", (None, 3))
    assert "`float32[None,3]`" in retrace.hint and "reduce_retracing=True" not in retrace.hint


def test_later_traces_are_compared_with_the_relaxed_key_tensorflow_kept():
    @tf.function(reduce_retracing=True)
    def f(x):
        return x * 2

    with tg.watch() as explanation:
        for rows in (2, 3, 4):
            f(tf.ones((rows,)))
        f(tf.ones((5,), tf.int32))
        f(tf.ones((2, 2)))
    events = events_of(explanation, "f")
    assert len(events) == 4 == f.experimental_get_tracing_count()
    # float32[None] served rows 4: the int32 trace differs from it in its dtype only.
    assert texts(events[2].changes) == ("x: dtype float32 -> int32",)
    # One argument differs from both earlier keys; the relaxed one by fewer changes (rank,
    # not dtype and rank).
    assert texts(events[3].changes) == ("x: rank 1 -> 2 (float32[None] -> float32[2,2])",)


def test_drop_remainder_is_named_only_for_batches_a_tf_data_pipeline_gave():
    @tf.function
    def step(x):
        return tf.reduce_sum(x)

    dataset = tf.data.Dataset.from_tensor_slices(np.ones((70, 3), "float32")).batch(32)
    with tg.watch() as explanation:
        for batch in dataset:
            step(batch)
    (from_dataset,) = events_of(explanation, "step")[1:]
    assert "drop_remainder=True" in from_dataset.hint

    @tf.function
    def direct(x):
        return tf.reduce_sum(x)

    with tg.watch() as explanation:
        direct(tf.ones((32, 3)))
        direct(tf.ones((6, 3)))
    (from_arrays,) = events_of(explanation, "direct")[1:]
    assert texts(from_arrays.changes) == ("x: dim 0 32 -> 6",)
    assert "drop_remainder" not in from_arrays.hint and "input_signature" in from_arrays.hint
    assert not _tf_data_elements.came_from_dataset(tf.ones(2))  # The iterator's note is gone.


def test_python_scalars_are_compared_by_value():
    @tf.function
    def train_step(x, temperature):
        return x / temperature

    with tg.watch() as explanation:
        for temperature in (1.0, 1.0, 0.9):
            train_step(tf.ones(2), temperature)
    (retrace,) = events_of(explanation, "train_step")[1:]
    ((argument, aspect, old, new),) = [(c.parameter, c.aspect, c.old, c.new) for c in retrace.changes]
    assert (argument, aspect, old, new) == ("temperature", Aspect.VALUE, ValueSpec("1.0"), ValueSpec("0.9"))
    assert retrace.verdict.hint is Hint.PYTHON_VALUE_AS_TENSOR


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3's compile() drops its step functions")
def test_compile_before_each_fit_is_named_as_the_same_model_recompiled():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    x, y = np.ones((8, 3), "float32"), np.ones((8, 1), "float32")
    with tg.watch() as explanation:
        for _ in range(3):
            model.compile(optimizer="sgd", loss="mse")
            model.fit(x, y, batch_size=8, verbose=0)
    steps = events_of(explanation, "one_step_on_data")
    # compile() drops the step: each fit makes a new object, whose first trace is a trace.
    assert [event.kind.value for event in steps] == ["trace", "trace", "trace"]
    assert all(event.verdict.hint is Hint.RECOMPILED_MODEL for event in steps[1:])
    assert all("Compile once" in event.hint and "Build the model once" not in event.hint
               for event in steps[1:])
    # A layer's run in a new step function is a first trace, as the step's trace is.
    (dense,) = [runs for runs in explanation.layers.values() if runs.class_name == "Dense"]
    assert [event.kind.value for event in dense.events if event.function == "one_step_on_data"] == \
        ["trace", "trace", "trace"]


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3 names its steps one_step_on_data")
def test_a_new_model_per_iteration_gets_the_same_kind_at_every_level():
    x = np.ones((4, 3), "float32")
    with tg.watch() as explanation:
        for _ in range(2):
            model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
            model.fit(x, x[:, :1], verbose=0)
            model.predict(x, verbose=0)
    (predict,) = [runs for runs in explanation.functions.values()
                  if runs.function == "one_step_on_data_distributed"]
    assert [event.kind.value for event in predict.events] == ["trace", "trace"]
    assert predict.events[1].verdict.hint is Hint.REUSE_MODEL
    second = [runs for runs in explanation.layers.values() if runs.class_name == "Dense"][1]
    # The second model's layer: a first trace in each of its model's new step functions.
    assert [event.kind.value for event in second.events if event.kind.value != "symbolic"] == \
        ["trace", "trace"]


def test_a_call_in_another_function_context_names_the_field_that_differs():
    # tf.function looks its cache up with the call's `FunctionContext` beside its arguments
    # (function_context.py, `make_function_context`): here the cross-replica context a strategy's
    # scope opens.
    @tf.function
    def double(x):
        return x * 2

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with tg.watch() as explanation:
        double(tf.ones(4))
        with strategy.scope():
            double(tf.ones(4))
            double(tf.ones(4))  # Hit.
        double(tf.ones(4))  # Hit: the first key again.
    first, retrace = events_of(explanation, "double")
    assert texts(retrace.changes) == ("in_cross_replica_context: False -> True (tracing context)",)
    assert (retrace.changes[0].aspect, retrace.verdict.hint) == (Aspect.CONTEXT, Hint.TRACING_CONTEXT)
    assert "traced again because its tracing context changed" in retrace.reason
    assert "inside `strategy.scope()`" in retrace.hint and "jax" not in retrace.hint
    assert retrace.same_graph_as == first.serial
