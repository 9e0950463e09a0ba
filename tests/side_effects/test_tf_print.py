"""traceguard.print, and how print becomes tf.print (values, sep, end, streams, XLA)."""

import sys

import pytest
import tensorflow as tf
from conftest import keras
from conftest import output_lines as lines

import traceguard as tg

pytestmark = pytest.mark.backend("tensorflow")


def test_tf_print_shows_runtime_values_with_sep_end_and_stderr(capfd):
    class Report(tg.TraceAwareLayer):
        @tg.side_effects(print="tf.print")
        def call(self, inputs):
            print("rows", tf.shape(inputs)[0], inputs.shape, sep="=", end="!\n")
            print("sum:", tf.reduce_sum(inputs), file=sys.stderr)
            return inputs

    step = tf.function(Report())
    step(tf.ones((2, 3)))
    step(tf.ones((2, 3)) * 2)
    captured = capfd.readouterr()
    # Python values print with str(), as `print` does: (2, 3), not TensorShape([2, 3]).
    assert captured.out.splitlines() == ["rows=2=(2, 3)!", "rows=2=(2, 3)!"]
    assert captured.err.splitlines() == ["sum: 6", "sum: 12"]


def test_tf_print_to_another_file_prints_at_trace_time_and_warns_once(capfd, tmp_path):
    path = tmp_path / "out.txt"

    with path.open("w") as handle:
        @tg.side_effects(print="tf.print")
        def body(x):
            print("to file", file=handle)
            return x

        step = tf.function(body)
        with pytest.warns(UserWarning, match="can become tf.print only for sys.stdout and "
                          "sys.stderr") as record:
            step(tf.ones(()))
        step(tf.ones(()))
        step(tf.ones((2,)))
    assert len(record) == 1 and record[0].filename == __file__
    assert path.read_text() == "to file\nto file\n"  # Two traces.


def test_traceguard_print_eager_and_at_every_graph_execution(capfd):
    tg.print("eager", tf.constant(1), sep=":")

    @tf.function
    def step(x):
        tg.print("x =", x)
        return x

    step(tf.constant([1, 2]))
    step(tf.constant([3, 4]))
    assert lines(capfd) == ["eager:tf.Tensor(1, shape=(), dtype=int32)", "x = [1 2]", "x = [3 4]"]


def test_traceguard_print_under_xla_prints_once_per_site_and_warns_once(capfd):
    @tf.function(jit_compile=True)
    def step(x):
        tg.print("first site")
        tg.print("second site")
        return x + 1

    with pytest.warns(UserWarning, match="`traceguard.print` cannot become tf.print here: XLA") as record:
        step(tf.ones(()))
    assert len(record) == 1
    step(tf.ones(()))
    step(tf.ones((2,)))  # Outside a layer: once per site, whatever the signature.
    assert lines(capfd) == ["first site", "second site"]




def test_traceguard_print_in_autograph_code_is_tf_print_not_a_py_function(capfd):
    @tf.function(autograph=True)
    def step(x):
        if tf.reduce_sum(x) > 0:
            tg.print("positive", [x, 2], file=sys.stderr)
        else:
            tg.print()
        return x

    step(tf.constant([1]))
    step(tf.constant([-1]))
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("\n", "positive [[1], 2]\n")
    graph = step.get_concrete_function(tf.constant([1])).graph
    assert "EagerPyFunc" not in {op.type for op in graph.get_operations()}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"colour": "red"}, "'colour' is an invalid keyword argument for print()"),
        ({"sep": 1}, "sep must be None or a string, not int"),
    ],
)
def test_bad_print_arguments_raise_what_the_builtin_raises(capfd, kwargs, message):
    with pytest.raises(TypeError) as builtin_error:
        print("x", **kwargs)
    assert str(builtin_error.value) == message

    @tf.function
    def step(x):
        tg.print("x", **kwargs)
        return x

    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        step(tf.ones(()))
    assert lines(capfd) == []


def test_a_tf_print_failure_is_logged_and_prints_at_trace_time(capfd, caplog, monkeypatch):
    def broken_tf_print(*args, **kwargs):
        raise RuntimeError("cannot format")

    monkeypatch.setattr(tf, "print", broken_tf_print)

    @tf.function
    def step(x):
        tg.print("still printed")
        return x

    assert float(step(tf.ones(()))) == 1.0
    assert lines(capfd) == ["still printed"]
    assert "traceguard failed while turning print into tf.print" in caplog.text


def test_traceguard_print_in_a_layer_under_xla_prints_once_per_signature(capfd, seed_input):
    class Seed(tg.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            tg.print("Tracing")
            return self.dense(inputs)

    step = tf.function(Seed(), jit_compile=True)
    with pytest.warns(UserWarning, match="`traceguard.print` cannot become tf.print here") as record:
        step(seed_input)  # symbolic (a dropped tf.print), trace (prints), variable_retrace.
    assert len(record) == 1
    step(seed_input)
    step(seed_input[:32])
    assert lines(capfd) == ["Tracing", "Tracing"]
