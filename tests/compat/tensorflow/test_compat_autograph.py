"""Each AutoGraph internal traceguard relies on, checked on the installed versions.

`traceguard/_compat/tensorflow/autograph.py` wraps `call` and keeps AutoGraph out of traceguard;
when one of these fails after an upgrade, it needs a new branch.
"""

import inspect
import sys

import pytest
import tensorflow as tf

from traceguard import _compat
from traceguard._compat.tensorflow import autograph as _autograph
from traceguard._compat.tensorflow import function as _tf_function
from traceguard._side_effects.routed_globals import copy_with_print

pytestmark = pytest.mark.backend("tensorflow")


def wrapped_call():
    def original(self, inputs, training=None, mask=None):
        return inputs

    def wrapper(self, *args, **kwargs):
        return original(self, *args, **kwargs)

    return original, _compat.wrap_call(original, wrapper)


def test_wrapped_call_shows_the_original_arguments_to_keras_2_and_3():
    from tensorflow.python.util import tf_inspect

    original, wrapper = wrapped_call()
    assert tf_inspect.getfullargspec(wrapper).args == ["self", "inputs", "training", "mask"]
    assert list(inspect.signature(wrapper).parameters) == ["self", "inputs", "training", "mask"]
    assert wrapper.__wrapped__ is original


def test_tf_convert_leaves_an_autograph_artifact_as_it_is():
    _, wrapper = wrapped_call()
    context = tf.__internal__.autograph.control_status_ctx()
    assert tf.__internal__.autograph.tf_convert(wrapper, context) is wrapper


def test_autograph_does_not_convert_traceguard_modules():
    from tensorflow.python.autograph.impl import conversion

    from traceguard._record import recorder as _recorder

    assert conversion.is_allowlisted(_recorder.record_build)
    assert conversion.is_allowlisted(_tf_function.enclosing_tf_function)  # In a subpackage.
    assert not conversion.is_allowlisted(test_autograph_does_not_convert_traceguard_modules)


def test_converted_code_calls_an_artifact_through_call_unconverted():
    callers = []
    probe = _compat.keep_autograph_out(lambda x: callers.append(sys._getframe(1).f_code) or x)
    tf.function(lambda x: probe(x) + 1)(tf.ones(()))
    assert callers == [_autograph._CALL_UNCONVERTED_CODE]


def test_tf_function_rewraps_a_decorated_function_before_calling_it():
    seen = []

    def target(x):
        return x

    def wrapper(x):
        seen.append(wrapper.__wrapped__ is not target)
        return target(x)

    wrapper = tf.__internal__.decorator.make_decorator(target, wrapper)
    tf.function(wrapper)(tf.ones(()))
    assert seen == [True]  # The converted target, which `graph_body` takes.


def test_run_unconverted_keeps_autograph_out_and_converted_code_reads_fn_globals():
    def tensor_branch(x):
        if tf.reduce_sum(x) > 0:  # Needs AutoGraph: a Python `if` on a tensor.
            return x
        return -x

    step = tf.function(lambda x: tensor_branch(x), autograph=True)
    assert step(-tf.ones(2)).numpy().tolist() == [1.0, 1.0]
    unconverted = tf.function(lambda x: _compat.run_unconverted(tensor_branch)(x), autograph=True)
    with pytest.raises(TypeError, match="Using a symbolic `tf.Tensor` as a Python `bool`"):
        unconverted(-tf.ones(2))

    # AutoGraph instantiates its converted copy with the function's own
    # `__globals__` (transpiler.py: `factory.instantiate(globals_=fn.__globals__)`),
    # which is how a routed copy's `print` survives conversion.
    seen = []
    routed = copy_with_print(tensor_branch_printing, _compat.run_unconverted(seen.append))
    tf.function(lambda x: routed(x), autograph=True)(-tf.ones(2))
    assert seen == ["positive", "negative"]  # tf.cond traces both branches.


def tensor_branch_printing(x):
    if tf.reduce_sum(x) > 0:
        print("positive")
        return x
    print("negative")
    return -x
