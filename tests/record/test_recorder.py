"""The recorder (`traceguard/_record/recorder.py`): the wrapped `call` and `build`, one event
per body run, the variables a run created, and the retrace budget."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import keras, kinds

import traceguard as tg
from traceguard._record.recorder import is_recorded

pytestmark = pytest.mark.backend("tensorflow")


# --- the wrapped call ---------------------------------------------------------------
def test_a_trace_aware_class_has_its_call_and_build_wrapped_and_a_plain_one_not():
    class Doubles(tg.TraceAwareLayer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

        def call(self, inputs):
            return inputs * 2 * self.scale

    class Plain(keras.layers.Layer):
        def call(self, inputs):
            return inputs

    assert is_recorded(Doubles.call) and is_recorded(Doubles.build)
    assert Doubles.call.__traceguard_original__.__name__ == "call"
    assert not is_recorded(Plain.call)
    np.testing.assert_array_equal(Doubles()(tf.ones((2,))), 2 * tf.ones((2,)))


def test_each_trace_of_the_body_is_one_event_and_eager_runs_are_only_counted(seed_input):
    class Doubles(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs * 2

    layer = Doubles()
    layer(seed_input)
    layer(seed_input)
    assert kinds(layer) == [] and layer.trace_log.eager_calls == 2
    step = tf.function(layer)
    step(seed_input)
    step(seed_input)  # The same signature: no trace, no run of the body.
    step(seed_input[:5])
    assert kinds(layer) == ["trace", "retrace"]


def test_super_call_of_a_recorded_run_is_part_of_that_run(seed_input):
    class Base(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs + 1

    class Child(Base):
        def call(self, inputs):
            return super().call(inputs) * 2

    layer = Child()
    tf.function(layer)(seed_input)
    assert kinds(layer) == ["trace"]


def test_a_variable_the_body_creates_is_recorded_on_its_run(seed_input):
    made = []  # A `tf.Variable` the layer does not track, created by the first trace only.

    class MakesAVariable(tg.TraceAwareLayer):
        def call(self, inputs):
            if not made:
                made.append(tf.Variable(0.0, name="counter"))
            return inputs + made[0]

    layer = MakesAVariable(name="makes")
    tf.function(layer)(seed_input)
    first, *rest = layer.trace_log
    assert [path for path in first.created_variables if "counter" in path] != []
    assert [event.created_variables for event in rest] == [() for _ in rest]


def test_user_exception_passes_through_unchanged_and_is_recorded(keras_flavor):
    class Fails(keras_flavor.TraceAwareLayer):
        def call(self, inputs):
            if inputs.shape[0] == 3:
                raise KeyError("no three")
            return inputs

    layer = Fails(log_eager=True)
    with pytest.raises(KeyError, match="no three") as info:
        layer(tf.ones((3,)))
    assert info.type is KeyError
    assert any(entry.name == "call" and str(entry.path) == __file__ for entry in info.traceback)
    assert layer.trace_log[-1].error == "KeyError('no three')"
    np.testing.assert_array_equal(layer(tf.ones((2,))), tf.ones((2,)))
    assert layer.trace_log[-1].error is None


# --- the budget ---------------------------------------------------------------------
def test_budget_warns_once_per_excess_trace(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(max_traces=1, name="budgeted")
    step = tf.function(layer)
    expected = r"Layer 'budgeted' traced 2 times, over its budget of max_traces=1"
    with pytest.warns(UserWarning, match=expected) as record:
        step(seed_input)
    assert len(record) == 1
    assert "variable_retrace" in str(record[0].message)
    assert record[0].filename == __file__


def test_budget_raise_reaches_the_caller_as_retrace_error_after_logging(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(max_traces=1, on_retrace="raise")
    layer(seed_input)
    step = tf.function(layer)
    step(seed_input)
    with pytest.raises(tg.RetraceError, match=r"Changed: inputs: dim 0 60 -> 5") as info:
        step(seed_input[:5])
    assert type(info.value) is tg.RetraceError
    assert kinds(layer)[-1] == "retrace"
