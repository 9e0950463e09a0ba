"""A function restored by `tf.saved_model.load`: reported as the user's, with a fix-it that applies."""

import pytest
import tensorflow as tf

import traceguard as tg
from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")


class Doubler(tf.Module):
    @tf.function
    def f(self, x):
        return x * 2.0


def test_a_restored_function_s_new_shape_names_saving_a_signature_or_the_serving_signature(tmp_path):
    module = Doubler()
    module.f(tf.ones((2,)))
    module.f(tf.ones((3,)))
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    with tg.watch() as explanation:
        loaded.f(tf.ones((2,)))
        loaded.f(tf.ones((3,)))  # A saved signature: traced by the restored function all the same.
        assert loaded.f.experimental_get_tracing_count() == 2
        # Measured: a shape nothing was saved for traces, and the trace raises; nothing is cached.
        # TF 2.14+ counts cache entries (2); TF 2.12-2.13 counted the trace as it began (3).
        with pytest.raises(ValueError, match="Could not find matching concrete function"):
            loaded.f(tf.ones((4,)))
        assert loaded.f.experimental_get_tracing_count() == (3 if _compat.TF_VERSION < (2, 14) else 2)
    (runs,) = explanation.functions.values()
    assert runs.function == loaded.f.name == "restored_function_body"  # As TensorFlow names it.
    # Where the call that raised traced nothing (the count stayed 2), no third trace is recorded.
    assert len(runs.events) == loaded.f.experimental_get_tracing_count()
    assert [event.kind.value for event in runs.events[:2]] == ["trace", "retrace"]
    retrace = runs.events[1]
    assert [str(change) for change in retrace.changes] == ["x: dim 0 2 -> 3"]
    assert "`restored_function_body` was restored by `tf.saved_model.load`" in retrace.hint
    assert "input_signature" in retrace.hint and 'loaded.signatures["serving_default"]' in retrace.hint
    assert "reduce_retracing" not in retrace.hint


class TwoFunctions(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None])])
    def f(self, x):
        return x * 2.0

    @tf.function(input_signature=[tf.TensorSpec([None])])
    def g(self, x):
        return x * 3.0


def test_two_restored_functions_share_tensorflow_s_code_but_each_first_trace_is_its_own(tmp_path):
    tf.saved_model.save(TwoFunctions(), str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    with tg.watch() as explanation:
        loaded.f(tf.ones((2,)))
        loaded.g(tf.ones((2,)))
    events = [event for runs in explanation.functions.values() for event in runs.events]
    # Each restored function's own count is 1: two first traces, not one object "made anew".
    assert loaded.f.experimental_get_tracing_count() == loaded.g.experimental_get_tracing_count() == 1
    assert [(event.kind.value, event.hint) for event in events] == [("trace", None), ("trace", None)]
