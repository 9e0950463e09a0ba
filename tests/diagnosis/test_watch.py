"""explain() and watch(): every Keras layer's runs, plain layers instrumented only meanwhile."""

import re
import threading

import numpy as np
import pytest
import tensorflow as tf
from conftest import DEFAULT, FLAVORS, SeedLayer, keras, kinds
from helpers import texts

import traceguard as tg
from traceguard import _compat
from traceguard._core.specs import format_signature
from traceguard._diagnosis import instrument as _instrument
from traceguard._record import layer_state as _layer_state
from traceguard._record import observers as _observers

pytestmark = pytest.mark.backend("tensorflow")


def layer_calls():
    """Each layer class of every Keras imported and the `call` in its own namespace, plus
    the namespace keys of each Keras's `Layer`."""
    bases = _compat.loaded_layer_bases()
    return ({cls: cls.__dict__.get("call") for cls in _instrument.layer_classes(bases)},
            {base: set(base.__dict__) for base in bases})


def event_kinds(runs):
    return [event.kind.value for event in runs.events]


class Doubler(tg.TraceAwareLayer):
    def call(self, inputs):
        return inputs * 2


def mixed_model():
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(5, name="hidden")(inputs)
    doubled = Doubler(name="doubler")(hidden)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(doubled), name="mixed")


def test_explain_plain_dense_under_tf_function_shows_trace_then_variable_retrace():
    dense = keras.layers.Dense(4, name="plain_dense")
    explanation = tg.explain(tf.function(dense), tf.ones((2, 3)))
    assert list(explanation.layers) == ["plain_dense"]
    runs = explanation.layers["plain_dense"]
    assert (runs.class_name, runs.trace_aware) == ("Dense", False)
    assert event_kinds(runs) == ["trace", "variable_retrace"]
    trace, retrace = runs.events
    # Keras 3's Dense.call takes `training`; Keras 2's does not.
    assert format_signature(trace.signature) == DEFAULT.pick({"inputs": "float32[2,3]", "training": "None"},
                                           {"inputs": "float32[2,3]"})
    assert "first trace created variables" in retrace.reason
    assert "call the layer once" in retrace.hint
    assert explanation.events == runs.events
    assert explanation.title == "explain(tf.function function)"


def test_explain_plain_dense_eagerly_logs_the_eager_run():
    dense = keras.layers.Dense(4, name="eager_dense")
    explanation = tg.explain(dense, tf.ones((2, 3)))
    runs = explanation.layers["eager_dense"]
    assert event_kinds(runs) == ["eager"] and runs.eager_calls == 1
    assert runs.events[0].reason.startswith("Ran eagerly")
    assert explanation.title == "explain(eager_dense)"


def test_explain_retrace_names_the_changed_dimension_and_the_fix():
    dense = keras.layers.Dense(4, name="dense_retraced")
    dense.build((None, 3))
    step = tf.function(dense)
    explanation = tg.explain(lambda: (step(tf.ones((8, 3))), step(tf.ones((5, 3)))))
    runs = explanation.layers["dense_retraced"]
    assert event_kinds(runs) == ["trace", "retrace"]
    assert texts(runs.events[1].changes) == ("inputs: dim 0 8 -> 5",)
    assert "input_signature" in runs.events[1].hint
    # Runs before explain() are not seen: a retrace reads as the first trace in it.
    assert event_kinds(tg.explain(step, tf.ones((3, 3))).layers["dense_retraced"]) == ["trace"]


def test_explain_model_mixing_plain_and_trace_aware_layers():
    model = mixed_model()
    doubler = model.get_layer("doubler")
    before = len(doubler.trace_log)
    explanation = tg.explain(tf.function(model), tf.ones((4, 8)))
    assert list(explanation.layers) == ["mixed", "hidden", "doubler", "head"]
    assert {name: event_kinds(runs) for name, runs in explanation.layers.items()} == {
        "mixed": ["trace"], "hidden": ["trace"], "doubler": ["trace"], "head": ["trace"]}
    assert [runs.trace_aware for runs in explanation.layers.values()] == [False, False, True, False]
    # The TraceAwareLayer also logged the run in its own trace_log: the very same event.
    assert doubler.trace_log[before:] == explanation.layers["doubler"].events
    assert [event.layer for event in explanation.events] == ["mixed", "hidden", "doubler", "head"]
    # One trace of the function, which ran each of the four layers once.
    assert explanation.count("trace") == 1 and explanation.count("trace", of="layers") == 4
    assert explanation.count(layer="head") == 1


def test_report_text_has_totals_table_and_each_layer_explained():
    text = tg.explain(tf.function(mixed_model()), tf.ones((4, 8))).summary(full=True)
    lines = text.splitlines()
    assert lines[0] == ("traceguard report for explain(tf.function function): 1 function traced 1 time: "
                        "1 trace; 4 layers: 4 layer runs; 0 eager layer runs")
    # The function traced (a tf.function wrapping a model is named `function`), then the layers.
    assert re.fullmatch(r"Functions \(1; misses took [\d.]+ s: .*[\d.]+ s tracing.*\):", lines[2])
    # A column per phase measured: the trace, and the first call that built the graph.
    assert lines[3].split() == ["function", "defined", "at", "traces", "retraces", "objects", "tracing",
                                "lowering", "total"]
    assert lines[4].split()[0] == "function" and lines[4].split()[2:5] == ["1", "-", "1"]
    assert lines[4].split()[1].startswith("functional.py:")  # Functional.call's `def`.
    table = next(number for number, line in enumerate(lines) if line.startswith("layer "))
    assert lines[table].split() == ["layer", "class", "symbolic", "trace", "variable_retrace", "retrace",
                                    "save", "eager"]
    assert lines[table + 1].split() == ["mixed", "Functional", "-", "1", "-", "-", "-", "-"]
    assert "Layer 'doubler' (Doubler, TraceAwareLayer): 1 trace" in lines
    assert "Layer 'hidden' (Dense, plain Keras layer): 1 trace" in lines
    mask = DEFAULT.pick(", mask=None", "")  # Keras 2's Functional.call has no `mask` argument.
    assert f"  #1 trace in function  (inputs=float32[4,8], training=None{mask})" in lines


def test_explain_passes_keyword_arguments_and_user_exceptions_through():
    seen = {}

    def target(x, *, flag):
        seen["flag"] = flag
        raise KeyError("from the target")

    with pytest.raises(KeyError, match="from the target") as info:
        tg.explain(target, 1, flag="on")
    assert info.type is KeyError and seen == {"flag": "on"}
    with pytest.raises(ValueError, match=r"`explain\(\)` expects a Keras layer or model, a "
                       r"tf.function or a function to call. Received: target=3"):
        tg.explain(3)


def test_watch_records_plain_and_trace_aware_layers_in_fit():
    rng = np.random.default_rng(0)
    with tg.watch() as report:
        model = mixed_model()
        model.compile(optimizer="sgd", loss="mse")
        model.fit(rng.random((64, 8)), rng.random((64, 2)), batch_size=32, verbose=0)
        model.fit(rng.random((70, 8)), rng.random((70, 2)), batch_size=32, verbose=0)
    # Building the functional model runs the weightless Doubler once on symbolic inputs; Keras 2
    # runs every layer so, and traces its train step twice (the optimizer's variables).
    first_fit = DEFAULT.pick(["trace"], ["trace", "variable_retrace"])
    assert event_kinds(report.layers["doubler"]) == ["symbolic"] + first_fit + ["retrace"]
    for name in ("mixed", "hidden", "head"):
        symbolic = DEFAULT.pick([], ["symbolic"] if name != "mixed" else [])
        assert event_kinds(report.layers[name]) == symbolic + first_fit + ["retrace"], name
        retrace = report.layers[name].events[-1]
        assert retrace.function == DEFAULT.pick("one_step_on_data", "train_function")
        assert texts(retrace.changes) == ("inputs: dim 0 32 -> None",)
        assert retrace.hint.startswith("`fit` got 70 samples in batches of 32")  # NumPy inputs (#18).


def test_watch_restores_every_layer_class_exactly_even_on_error(keras_flavor):
    keras = keras_flavor.keras  # Each Keras imported is patched, and restored.
    before = layer_calls()
    with pytest.raises(RuntimeError, match="user error"), tg.watch():
        class DefinedInside(keras.layers.Layer):
            def call(self, inputs):
                return inputs + 1

        original = DefinedInside.__dict__["call"].__wrapped__
        for flavor in FLAVORS:
            dense = flavor.keras.layers.Dense
            assert dense.__dict__["call"] is not before[0][dense]
        raise RuntimeError("user error")
    after_calls, after_base_names = layer_calls()
    assert DefinedInside.__dict__["call"] is original
    del after_calls[DefinedInside]
    assert after_calls == before[0]
    assert after_base_names == before[1]
    assert _layer_state.plain_layer_state is None and _observers.observers == ()


def test_class_defined_inside_watch_is_recorded(keras_flavor):
    with tg.watch() as report:
        class AddOne(keras_flavor.keras.layers.Layer):
            def call(self, inputs):
                return inputs + 1

        layer = AddOne(name="add_one")
        tf.function(layer)(tf.ones((2,)))
    assert event_kinds(report.layers["add_one"]) == ["trace"]


def test_watch_records_the_plain_layers_of_every_keras_imported(keras_flavor):
    dense = keras_flavor.keras.layers.Dense(2, name="dense")
    with tg.watch() as report:
        tf.function(dense)(tf.ones((1, 3)))
    # `Dense` has `build()`: fresh under tf.function, its first trace creates the weights.
    assert event_kinds(report.layers["dense"]) == ["trace", "variable_retrace"]
    assert report.layers["dense"].class_name == "Dense" and not report.layers["dense"].trace_aware


def test_plain_layers_keep_no_traceguard_attribute():
    explained, unwatched = keras.layers.Dense(2), keras.layers.Dense(2)
    tg.explain(tf.function(explained), tf.ones((1, 3)))
    tf.function(unwatched)(tf.ones((1, 3)))
    assert set(vars(explained)) == set(vars(unwatched))
    assert not any("traceguard" in name for name in vars(explained))


def test_nested_sessions_share_the_patch_until_the_outer_one_ends():
    before = layer_calls()
    dense = keras.layers.Dense(2, name="nested_dense")
    with tg.watch() as outer:
        inner = tg.explain(tf.function(dense), tf.ones((1, 3)))
        assert keras.layers.Dense.__dict__["call"] is not before[0][keras.layers.Dense]
        dense(tf.ones((1, 3)))
    assert layer_calls() == before
    assert event_kinds(inner.layers["nested_dense"]) == ["trace", "variable_retrace"]
    # The outer watch() saw the same runs; its eager run is counted, not logged.
    assert event_kinds(outer.layers["nested_dense"]) == ["trace", "variable_retrace"]
    assert outer.layers["nested_dense"].eager_calls == 1


def test_trace_aware_layer_is_reported_without_being_patched(seed_input):
    layer = SeedLayer(name="seed")
    recorded_call = type(layer).__dict__["call"]
    with tg.watch() as report:
        assert type(layer).__dict__["call"] is recorded_call
        tf.function(layer)(seed_input)
    assert kinds(layer) == DEFAULT.pick(["symbolic"], []) + ["trace", "variable_retrace"]
    assert event_kinds(report.layers["seed"]) == kinds(layer)
    assert report.layers["seed"].trace_aware


def test_layers_with_the_same_name_are_told_apart():
    first, second = keras.layers.Dense(2, name="twin"), keras.layers.Dense(2, name="twin")
    explanation = tg.explain(lambda: (tf.function(first)(tf.ones((1, 3))),
                                      tf.function(second)(tf.ones((1, 4)))))
    assert list(explanation.layers) == ["twin", "twin#2"]
    assert str(explanation.layers["twin#2"].events[0].signature["inputs"]) == "float32[1,4]"


def test_runs_in_other_threads_are_reported_too():
    dense = keras.layers.Dense(2, name="threaded")
    with tg.watch() as report:
        thread = threading.Thread(target=lambda: tf.function(dense)(tf.ones((1, 3))))
        thread.start()
        thread.join()
    assert {event.thread for event in report.layers["threaded"].events} == {thread.name}
