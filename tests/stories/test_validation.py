"""Bad input at every public entry point: a clear error naming the argument, the value and
what is accepted, raised where the argument is given.

Complements the cases in tests/record/test_layer.py and tests/record/test_log.py.
"""

import re

import pytest
import tensorflow as tf
from conftest import SeedLayer, keras

import traceguard as tg
from traceguard import _compat
from traceguard._cli import main

pytestmark = pytest.mark.backend("tensorflow")


def exact(message):
    return "^" + re.escape(message) + "$"


SIZE = "`trace_log_size` expects a positive integer. Received: trace_log_size="
BUDGET = "`max_traces` expects None or a non-negative integer. Received: max_traces="
ON_RETRACE = "`on_retrace` expects one of 'raise', 'warn'. Received: on_retrace="


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"trace_log_size": True}, SIZE + "True"),
        ({"trace_log_size": None}, SIZE + "None"),
        ({"trace_log_size": "10"}, SIZE + "'10'"),
        ({"trace_log_size": -3}, SIZE + "-3"),
        ({"log_eager": 1}, "`log_eager` expects a bool. Received: log_eager=1"),
        ({"log_eager": None}, "`log_eager` expects a bool. Received: log_eager=None"),
        ({"max_traces": True}, BUDGET + "True"),
        ({"max_traces": 1.5}, BUDGET + "1.5"),
        ({"max_traces": "2"}, BUDGET + "'2'"),
        ({"on_retrace": None}, ON_RETRACE + "None"),
        ({"on_retrace": "WARN"}, ON_RETRACE + "'WARN'"),
    ],
)
def test_layer_arguments_are_checked_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=exact(message)):
        SeedLayer(**kwargs)


def test_mixin_arguments_are_checked_for_builtin_layers_too():
    class TracedDense(tg.TraceAwareMixin, keras.layers.Dense):
        pass

    with pytest.raises(ValueError, match=exact("`max_traces` expects None or a non-negative integer. "
                                               "Received: max_traces=-1")):
        TracedDense(4, max_traces=-1)


def test_mixin_after_the_keras_layer_is_rejected_at_class_creation():
    with pytest.raises(TypeError, match=exact(
            "`TraceAwareMixin` must come before the Keras layer class in the bases of "
            "`test_mixin_after_the_keras_layer_is_rejected_at_class_creation.<locals>.Backwards`, "
            "e.g. `class Backwards(traceguard.TraceAwareMixin, keras.layers.Dense)`. "
            "Received: class Backwards(Dense, TraceAwareMixin)")):

        class Backwards(keras.layers.Dense, tg.TraceAwareMixin):
            pass


def test_mixin_without_a_keras_layer_is_rejected_at_construction():
    class Lonely(tg.TraceAwareMixin):
        pass

    # Keras 2.12 keeps its modules in keras/, 2.13-2.15 in keras/src/.
    old_keras2 = _compat.parse_version(_compat.DEFAULT_FLAVOR.version) < (2, 13)
    layer_base = {"keras3": "keras.src.layers.layer.Layer",
                  "tf_keras": "tf_keras.src.engine.base_layer.Layer",
                  "keras2": f"keras.{'' if old_keras2 else 'src.'}engine.base_layer.Layer",
                  }[_compat.KERAS_FLAVOR]
    with pytest.raises(TypeError, match=r"^`TraceAwareMixin` records Keras layers: mix it into a Keras "
                       r"`Layer` class, before it.*Received: an instance of .*Lonely, not a "
                       + re.escape(layer_base) + "$"):
        Lonely()


def test_mixin_can_be_extended_before_it_meets_a_layer():
    class Mixin(tg.TraceAwareMixin):
        pass

    class Dense(Mixin, keras.layers.Dense):
        pass

    layer = Dense(2)
    tf.function(layer)(tf.ones((1, 3)))
    assert [event.kind.value for event in layer.trace_log] == ["trace", "variable_retrace"]


@pytest.mark.parametrize(
    "args, message",
    [
        ((0,), "`maxlen` expects a positive integer. Received: maxlen=0"),
        ((2.0,), "`maxlen` expects a positive integer. Received: maxlen=2.0"),
        ((True,), "`maxlen` expects a positive integer. Received: maxlen=True"),
        ((None,), "`maxlen` expects a positive integer. Received: maxlen=None"),
        ((5, 3), "`owner` expects the layer's name (str). Received: owner=3"),
    ],
)
def test_trace_log_arguments_are_checked(args, message):
    with pytest.raises(ValueError, match=exact(message)):
        tg.TraceLog(*args)


KINDS = "eager, symbolic, trace, variable_retrace, retrace, save"


@pytest.mark.parametrize(
    "kind, message",
    [
        (["trace", "bogus"], f"`kind` expects a TraceKind, one of {KINDS}, or a collection of them; "
                             "'bogus' is none of them. Received: kind=['trace', 'bogus']"),
        ({"trace", 3}, None),
        ((tg.TraceKind.TRACE, None), f"`kind` expects a TraceKind, one of {KINDS}, or a collection of "
                                     "them; None is none of them. Received: kind=(<TraceKind.TRACE: "
                                     "'trace'>, None)"),
        ("TRACE", f"`kind` expects a TraceKind, one of {KINDS}, or a collection of them. "
                  "Received: kind='TRACE'"),
        (2.5, f"`kind` expects a TraceKind, one of {KINDS}, or a collection of them. Received: kind=2.5"),
    ],
)
def test_filter_and_count_name_the_bad_kind(kind, message):
    log = tg.TraceLog(3)
    for method in (log.filter, log.count):
        with pytest.raises(ValueError, match=exact(message) if message else "3 is none of them"):
            method(kind)


def test_filter_accepts_every_form_of_kind():
    log = tg.TraceLog(3)
    for kind in (None, "trace", tg.TraceKind.TRACE, ["trace", "retrace"], {tg.TraceKind.SAVE},
                 (kind for kind in ["eager"]), []):
        assert log.filter(kind) == [] and log.count(kind) == 0


@pytest.mark.parametrize("item", ["0", 1.0, None, True])
def test_trace_log_index_must_be_an_integer_or_slice(item):
    with pytest.raises(TypeError, match=exact(f"`TraceLog` indices must be integers or slices. "
                                              f"Received: item={item!r}")):
        tg.TraceLog(3)[item]


def test_unknown_trace_kind_is_named():
    with pytest.raises(ValueError, match="'retraces' is not a valid TraceKind"):
        tg.TraceKind("retraces")


def test_unknown_command_names_it_and_the_choices(capsys):
    with pytest.raises(SystemExit) as info:
        main(["bogus"])
    assert info.value.code == 2
    assert "invalid choice: 'bogus' (choose from " in capsys.readouterr().err
