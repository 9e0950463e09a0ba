"""side_effects(print=...), traceguard.print and trace_once, observed on real output.

`tf.print` writes to the process's file descriptors from C++, so these tests
read output with `capfd`, which sees both that and Python's `print`.
"""

import builtins
import inspect
import logging
import threading
import warnings

import pytest
import tensorflow as tf
from conftest import keras
from conftest import output_lines as lines

import traceguard as tg
from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")


def seed_class(mode):
    """The seed question's layer, its `call` printing under `mode`."""

    class PrintingSeed(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        @tg.side_effects(print=mode)
        def call(self, inputs):
            print("Tracing")
            return self.dense(inputs)

    return PrintingSeed


# The seed layer's body runs at its first call under tf.function: Keras 3 runs a
# symbolic build pass before the two traces, Keras 2 none.
FIRST_KINDS = ["symbolic"] * _compat.IS_KERAS_3 + ["trace", "variable_retrace"]


@pytest.mark.parametrize(
    "mode, first_call, repeated, new_batch",
    [
        # The first call runs the body 3 times on Keras 3 (symbolic, trace, variable_retrace),
        # 2 on Keras 2, but the graph runs once per call: tf.print prints once per call.
        ("tf.print", ["Tracing"], ["Tracing"] * 2, ["Tracing"] * 2),
        ("once", ["Tracing"], [], ["Tracing"]),
        ("each_trace", [f"[#{number} {kind}] Tracing" for number, kind in enumerate(FIRST_KINDS, 1)],
         [], [f"[#{len(FIRST_KINDS) + 1} retrace] Tracing"]),
        ("log", [], [], []),
        ("python", ["Tracing"] * len(FIRST_KINDS), [], ["Tracing"]),
    ],
)
def test_seed_prints_per_mode_across_passes_executions_and_batch_sizes(
        capfd, seed_input, mode, first_call, repeated, new_batch):
    layer = seed_class(mode)()
    graph_layer = tf.function(layer)
    graph_layer(seed_input)
    assert lines(capfd) == first_call
    graph_layer(seed_input)
    graph_layer(seed_input)
    assert lines(capfd) == repeated
    graph_layer(seed_input[:32])
    graph_layer(seed_input[:32])
    assert lines(capfd) == new_batch
    assert [e.kind.value for e in layer.trace_log] == FIRST_KINDS + ["retrace"]
    expected_messages = ("Tracing",) if mode == "log" else ()
    assert [e.messages for e in layer.trace_log] == [expected_messages] * (len(FIRST_KINDS) + 1)


@pytest.mark.parametrize("mode", ["tf.print", "once", "each_trace", "python"])
def test_eager_runs_print_as_plain_python(capfd, seed_input, mode):
    layer = seed_class(mode)()
    layer(seed_input)  # A symbolic pass (not eager), then the eager run.
    layer.trace_log.clear()
    layer(seed_input)
    layer(seed_input)
    assert lines(capfd)[-2:] == ["Tracing", "Tracing"]


def test_log_without_a_current_event_goes_to_the_logger(capfd, caplog, seed_input):
    layer = seed_class("log")()
    layer(seed_input)
    with caplog.at_level(logging.DEBUG, logger="traceguard"):
        layer(seed_input)
    assert lines(capfd) == []
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "seed_class.<locals>.PrintingSeed.call: Tracing")]
    logged = seed_class("log")(log_eager=True)
    logged(seed_input)
    assert [(e.kind.value, e.messages) for e in logged.trace_log] == [
        ("symbolic", ("Tracing",))] * _compat.IS_KERAS_3 + [("eager", ("Tracing",))]


def test_xla_falls_back_to_once_and_warns_once(capfd, seed_input):
    layer = seed_class("tf.print")(name="jit_seed")
    step = tf.function(layer, jit_compile=True)
    with pytest.warns(UserWarning) as record:
        step(seed_input)
    assert len(record) == 1 and record[0].filename == __file__
    assert str(record[0].message).startswith(
        "`print` in `seed_class.<locals>.PrintingSeed.call` cannot become tf.print here: XLA "
        "(jit_compile=True) cannot compile tf.print (TensorFlow has no XLA kernel for its "
        "StringFormat op). It falls back to print=\"once\"")
    assert lines(capfd) == ["Tracing"]
    step(seed_input)
    assert lines(capfd) == []
    step(seed_input[:32])  # A new signature prints again; no second warning (warnings are errors).
    assert lines(capfd) == ["Tracing"]


def test_xla_warning_turned_error_reaches_the_caller(seed_input):
    step = tf.function(seed_class("tf.print")(), jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Not swallowed as a bookkeeping failure; Keras and AutoGraph wrap what is raised in a trace.
        with pytest.raises(Exception, match="cannot become tf.print here") as info:
            step(seed_input)
    assert "UserWarning" in str(info.value)


def test_unknown_print_mode_lists_valid_modes():
    assert tg.PRINT_MODES == ("tf.print", "once", "each_trace", "log", "python")
    message = ("`side_effects(print=...)` expects one of tf.print, once, each_trace, log, python. "
               "Received: print='tfprint'")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tg.side_effects(print="tfprint")


def test_decorator_keeps_the_signature_keras_reads():
    class WithTraining(tg.TraceAwareLayer):
        @tg.side_effects(print="once")
        def call(self, inputs, training=None, mask=None):
            print("training:", training)
            return inputs

    assert list(inspect.signature(WithTraining.call).parameters) == ["self", "inputs", "training", "mask"]
    layer = WithTraining()
    # Keras passes `training` only to a `call` whose signature names it.
    keras.Sequential([layer]).predict(tf.ones((2, 3)), verbose=0)
    assert str(layer.trace_log[-1].signature["training"]) == "False"


def helper_that_prints():
    print("helper prints plainly")


def test_print_outside_the_decorated_body_is_untouched(capfd, seed_input):
    class Calls(tg.TraceAwareLayer):
        @tg.side_effects(print="log")
        def call(self, inputs):
            print("routed")
            helper_that_prints()
            return inputs

    layer = Calls()
    tf.function(layer)(seed_input)
    assert lines(capfd) == ["helper prints plainly"]
    assert layer.trace_log[-1].messages == ("routed",)
    assert builtins.print is print


def test_other_threads_print_plainly_while_a_body_is_traced(capfd, caplog):
    inside, release = threading.Event(), threading.Event()

    @tg.side_effects(print="log")
    def body(x):
        print("from the traced body")
        if not tf.executing_eagerly():
            inside.set()
            assert release.wait(30)
        return x

    class Holder(tg.TraceAwareLayer):
        def call(self, inputs):
            return body(inputs)

    layer = Holder()
    tracer = threading.Thread(target=tf.function(layer), args=(tf.ones(()),))
    tracer.start()
    try:
        assert inside.wait(30)
        print("main thread, meanwhile")
        helper_that_prints()
        with caplog.at_level(logging.DEBUG, logger="traceguard"):
            body(tf.ones(()))  # The same body, eagerly, in this thread: no event, so logged.
    finally:
        release.set()
        tracer.join()
    assert lines(capfd) == ["main thread, meanwhile", "helper prints plainly"]
    assert caplog.messages == [
        "test_other_threads_print_plainly_while_a_body_is_traced.<locals>.body: from the traced body"]
    assert [e.messages for e in layer.trace_log if e.kind.value != "eager"] == [("from the traced body",)]


def test_nested_decorated_layers_route_independently(capfd):
    class Inner(tg.TraceAwareLayer):
        @tg.side_effects(print="once")
        def call(self, inputs):
            print("inner")
            return inputs * 2

    class Outer(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = Inner()

        @tg.side_effects(print="each_trace")
        def call(self, inputs):
            print("outer before")
            outputs = self.inner(inputs)
            print("outer after")
            return outputs

    outer = Outer()
    step = tf.function(outer)
    step(tf.ones((2,)))
    step(tf.ones((3,)))
    # Outer has an unbuilt sublayer, so Keras 3 runs a symbolic pass (Keras 2 none); no
    # variables, no variable retrace. Inner prints once per signature, at its first run.
    if _compat.IS_KERAS_3:
        assert lines(capfd) == [
            "[#1 symbolic] outer before", "inner", "[#1 symbolic] outer after",
            "[#2 trace] outer before", "[#2 trace] outer after",
            "[#3 retrace] outer before", "inner", "[#3 retrace] outer after",
        ]
    else:
        assert lines(capfd) == [
            "[#1 trace] outer before", "inner", "[#1 trace] outer after",
            "[#2 retrace] outer before", "inner", "[#2 retrace] outer after",
        ]
    assert [e.kind.value for e in outer.inner.trace_log] == ["symbolic"] * _compat.IS_KERAS_3 + [
        "trace", "retrace"]


def test_plain_functions_under_tf_function(capfd):
    @tg.side_effects(print="each_trace")
    def step(x):
        print("traced")
        return x

    @tg.side_effects(print="once")
    def once(x):
        print("once")
        return x

    for function in (tf.function(step), tf.function(once)):
        function(tf.ones((2,)))
        function(tf.ones((2,)))
        function(tf.ones((3,)))
    assert lines(capfd) == ["[#1 step] traced", "[#2 step] traced", "once", "once"]


@pytest.mark.parametrize("autograph", [False, True])
@pytest.mark.parametrize("mode", ["once", "each_trace", "log", "python"])
def test_graph_has_no_extra_ops_except_with_tf_print(capfd, mode, autograph):
    def op_types(layer):
        function = tf.function(layer, autograph=autograph)
        graph = function.get_concrete_function(tf.ones((2, 3))).graph
        return sorted(op.type for op in graph.get_operations())

    class Plain(tg.TraceAwareLayer):
        def call(self, inputs):
            print("x")
            return inputs * 2

    class Decorated(tg.TraceAwareLayer):
        @tg.side_effects(print=mode)
        def call(self, inputs):
            print("x")
            return inputs * 2

    class Printing(tg.TraceAwareLayer):
        @tg.side_effects(print="tf.print")
        def call(self, inputs):
            print("x")
            return inputs * 2

    assert op_types(Decorated()) == op_types(Plain())
    # tf.print adds its two ops and the NoOp that makes the function run them.
    assert op_types(Printing()) == sorted(op_types(Plain()) + ["NoOp", "PrintV2", "StringFormat"])


def test_autograph_converted_body_still_routes(capfd):
    @tg.side_effects(print="tf.print")
    def branchy(x):
        if tf.reduce_sum(x) > 0:  # Needs AutoGraph: becomes a tf.cond.
            print("positive", x)
        else:
            print("not positive")
        return x

    step = tf.function(branchy, autograph=True)
    step(tf.constant([1, 2]))
    step(tf.constant([-1, -2]))
    assert lines(capfd) == ["positive [1 2]", "not positive"]
    graph = step.get_concrete_function(tf.constant([1, 2])).graph
    assert "EagerPyFunc" not in {op.type for op in graph.get_operations()}


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("tf.print", ["Tracing", "positive", "Tracing", "Tracing", "positive"]),
        ("once", ["Tracing", "positive", "Tracing", "positive"]),
    ],
)
def test_tf_keras_converts_the_decorated_call_and_print_still_routes(capfd, mode, expected):
    # TraceAwareLayer is Keras 3 only for now: a plain tf_keras layer, whose
    # `call` tf_keras converts with AutoGraph under tf.function.
    tf_keras = pytest.importorskip("tf_keras")

    class Branchy(tf_keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = tf_keras.layers.Dense(4)

        @tg.side_effects(print=mode)
        def call(self, inputs):
            print("Tracing")
            if tf.reduce_sum(inputs) > 0:  # A tf.cond only if AutoGraph converted the body.
                print("positive")
            return self.dense(inputs)

    # tf_keras reads the parameters with getfullargspec: no `training` to pass.
    assert inspect.getfullargspec(Branchy.call).args == ["self", "inputs"]
    step = tf.function(Branchy())
    step(tf.ones((2, 3)))  # Traced twice: the first trace creates the Dense variables.
    step(-tf.ones((2, 3)))
    step(tf.ones((5, 3)))
    # tf.print: one line per execution, "positive" only when the branch runs; once:
    # per signature of the arguments (outside a TraceAwareLayer), both branches traced.
    assert lines(capfd) == expected


def test_python_mode_prints_at_trace_time_even_under_autograph(capfd):
    @tg.side_effects(print="python")
    def body(x):
        print("value", x)  # AutoGraph alone would make this a py_function.
        return x

    step = tf.function(body, autograph=True)
    step(tf.constant(1))
    step(tf.constant(2))
    assert lines(capfd) == ['value Tensor("x:0", shape=(), dtype=int32)']


def test_module_that_defines_its_own_print_keeps_it():
    calls = []
    namespace = {"print": lambda *args: calls.append(args)}
    exec("def body(x):\n    print('mine', x)\n    return x\n", namespace)
    tf.function(tg.side_effects(print="log")(namespace["body"]))(tf.ones(()))
    assert len(calls) == 1 and calls[0][0] == "mine"


def test_bare_decorator_defaults_to_tf_print(capfd):
    @tg.side_effects
    def body(x):
        print("x is", x)
        return x

    tf.function(body)(tf.constant(3))
    assert lines(capfd) == ["x is 3"]


def test_plain_keras_layer_routes_by_its_events_under_explain(capfd):
    class Plain(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(4)

        @tg.side_effects(print="each_trace")
        def call(self, inputs):
            print("plain body")
            return self.dense(inputs)

    step = tf.function(Plain())
    tg.explain(lambda: [step(tf.ones((n, 3))) for n in (2, 2, 5)])
    kinds = ["symbolic"] * _compat.IS_KERAS_3 + ["trace", "variable_retrace", "retrace"]
    assert lines(capfd) == [f"[#{number} {kind}] plain body" for number, kind in enumerate(kinds, 1)]
    tf.function(Plain())(tf.ones((2, 3)))  # No events outside explain(): the function's own count.
    assert lines(capfd) == [f"[#{number} call] plain body" for number in range(1, len(kinds))]


def test_tf_print_is_part_of_an_exported_model(capfd, tmp_path):
    class Served(tg.TraceAwareLayer):
        @tg.side_effects(print="tf.print")
        def call(self, inputs):
            print("served batch", tf.shape(inputs)[0])
            return inputs * 2

    inputs = keras.Input((3,))
    if _compat.IS_KERAS_3:
        keras.Model(inputs, Served()(inputs)).export(str(tmp_path / "exported"), verbose=False)
        assert lines(capfd) == []
    else:  # Keras 2's `export` has no `verbose`: it always lists the endpoints, and nothing else.
        keras.Model(inputs, Served()(inputs)).export(str(tmp_path / "exported"))
        printed = lines(capfd)
        assert printed[0] == (f"Saved artifact at '{tmp_path / 'exported'}'. "
                              "The following endpoints are available:")
        assert not [line for line in printed if "served batch" in line]
    reloaded = tf.saved_model.load(str(tmp_path / "exported"))
    reloaded.serve(tf.ones((2, 3)))
    reloaded.serve(tf.ones((5, 3)))
    assert lines(capfd) == ["served batch 2", "served batch 5"]
