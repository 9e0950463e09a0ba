"""traceguard.testing.assert_max_traces: a budget of traces for a block of code, in the unit of
every budget (the layer's `max_traces=`, the `max_traces` marker: tests/stories/test_pytest_plugin.py)."""

import pytest
import tensorflow as tf
from conftest import SeedLayer, keras, kinds

import traceguard as tg
from traceguard.testing import assert_max_traces

pytestmark = pytest.mark.backend("tensorflow")


def test_layer_within_budget_passes_and_only_traces_in_the_block_count(seed_input):
    layer = SeedLayer()
    step = tf.function(layer)
    step(seed_input)  # symbolic, trace, variable_retrace: before the block.
    with assert_max_traces(layer, 1):
        step(seed_input[:5])
        step(seed_input[:5])
    with assert_max_traces(layer, 0):
        step(seed_input)


def test_layer_over_budget_lists_the_offending_events(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(name="budgeted")
    layer(seed_input)
    step = tf.function(layer)
    with pytest.raises(AssertionError) as info, assert_max_traces(layer, 1):
        step(seed_input)
        step(seed_input[:5])
    message = str(info.value)
    assert message.startswith("Layer 'budgeted' traced 2 times inside the block, more than the 1 allowed.\n")
    assert message.count("layer 'budgeted':") == 1
    first = keras_flavor.pick(2, 1)  # After Keras 3's symbolic run in the eager call.
    assert f"  layer 'budgeted':\n    #{first} trace in function  (inputs=float32[60,28,28])\n" in message
    assert f"    #{first + 1} retrace in function  (inputs=float32[5,28,28])\n" in message
    assert "       changed: inputs: dim 0 60 -> 5" in message
    assert "       fix: Each new shape costs a trace" in message


def test_tf_function_counts_its_own_traces_explained_by_trace_aware_layers(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(name="inside")
    layer(seed_input)

    @tf.function
    def step(x, k):
        return layer(x) * k

    with assert_max_traces(step, 2):
        step(seed_input, 1)
        step(seed_input, 2)
    with pytest.raises(AssertionError) as info, assert_max_traces(step, 0):
        step(seed_input[:3], 2)
    message = str(info.value)
    assert message.startswith("tf.function `step` traced 1 times inside the block, more than the 0 allowed.")
    index = keras_flavor.pick(4, 3)
    assert f"  layer 'inside':\n    #{index} retrace in step  (inputs=float32[3,28,28])" in message


def test_every_budget_counts_a_trace_once_however_often_the_layer_ran_in_it(keras_flavor, seed_input):
    # The layer runs twice in each trace of `twice`; its first trace creates the Dense's
    # variables, so TensorFlow traces `twice` again (a variable retrace): 2 graph traces.
    layer = keras_flavor.SeedLayer(name="twice", max_traces=2, on_retrace="raise")

    @tf.function
    def twice(x):
        return layer(x) + layer(x)

    with assert_max_traces(layer, 2), assert_max_traces(twice, 2):
        twice(seed_input)  # No RetraceError: the layer's own budget counts 2 too.
    assert twice.experimental_get_tracing_count() == 2
    graph_runs = [kind for kind in kinds(layer) if kind in ("trace", "variable_retrace", "retrace")]
    assert graph_runs == ["trace", "trace", "variable_retrace", "variable_retrace"]  # 4 body runs.
    with pytest.raises(AssertionError) as layer_over, assert_max_traces(layer, 0):
        with pytest.raises(tg.RetraceError, match=r"Layer 'twice' traced 3 times, over its budget of "
                           r"max_traces=2\."):  # 3 traces, 6 body runs.
            twice(seed_input[:5])
    assert str(layer_over.value).startswith(
        "Layer 'twice' traced 1 times inside the block, more than the 0 allowed.\n")


def test_warn_mode_warns_with_the_same_report_and_the_block_goes_on(keras_flavor, seed_input):
    layer = keras_flavor.SeedLayer(name="warned")
    step = tf.function(layer)
    step(seed_input)
    with pytest.warns(UserWarning) as caught:
        with assert_max_traces(layer, 0, on_retrace="warn"):
            step(seed_input[:5])
    assert len(caught) == 1 and caught[0].filename == __file__
    assert str(caught[0].message).startswith(
        "Layer 'warned' traced 1 times inside the block, more than the 0 allowed.\n")


def test_unknown_on_retrace_is_rejected_on_entering():
    with pytest.raises(ValueError) as raised:
        with assert_max_traces(SeedLayer(), 1, on_retrace="ignore"):
            raise AssertionError("the block must not run")
    assert str(raised.value) == ("`assert_max_traces(on_retrace=...)` expects one of 'raise', 'warn'. "
                                 "Received: on_retrace='ignore'")


def test_tf_function_without_trace_aware_layers_points_to_explain():
    step = tf.function(lambda x: x + 1)
    with pytest.raises(AssertionError, match=r"No TraceAwareLayer ran in these traces; wrap the code "
                       r"in `traceguard.explain\(\)`"), assert_max_traces(step, 1):
        step(tf.ones((1,)))
        step(tf.ones((2,)))


def test_exception_in_the_block_passes_through():
    layer = SeedLayer()
    with pytest.raises(KeyError, match="mine"), assert_max_traces(layer, 0):
        raise KeyError("mine")


@pytest.mark.parametrize("n", [-1, 1.5, True, "2"])
def test_bad_budget_is_rejected_on_entering(n):
    with pytest.raises(ValueError, match=r"`assert_max_traces\(\)` expects a non-negative integer as "
                       rf"the largest number of traces allowed. Received: n={n!r}"):
        with assert_max_traces(SeedLayer(), n):
            raise AssertionError("the block must not run")


def test_plain_layer_is_rejected_with_the_way_out():
    dense = keras.layers.Dense(2)
    with pytest.raises(ValueError, match=r"expects a TraceAwareLayer \(or a layer with TraceAwareMixin\) "
                       r"or a tf.function. Received: target=<(\S+\.)?Dense"):
        with assert_max_traces(dense, 1):
            pass


def test_testing_is_an_attribute_of_the_package():
    assert tg.testing.assert_max_traces is assert_max_traces


def test_import_traceguard_does_not_import_pytest():
    import subprocess
    import sys

    code = ("import sys, traceguard; from traceguard import *; "
            "print('pytest' in sys.modules, hasattr(traceguard, 'testing'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "True"]
