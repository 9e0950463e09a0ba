"""TraceMonitor(log_dir=...): trace counts and retrace reasons, read back from TensorBoard event files."""

import logging
import warnings

import pytest
import tensorflow as tf
from helpers import FakeLayer, event
from test_callbacks import compiled_projection_model, data, model, monitor_class_of  # noqa: F401

import traceguard as tg
from traceguard._core.events import TraceKind

pytestmark = pytest.mark.backend("tensorflow")

PARTIAL_BATCH_RETRACE = (
    "**#{index} retrace** of tf.function `{step}` during fit call 2, epoch 1\n\n"
    "- changed: inputs: dim 0 32 -> None\n"
    "- why: The tf.function `{step}` traced again because the signature changed: "
    "inputs: dim 0 32 -> None.\n"
    "- fix: `fit` got 70 samples in batches of 32: the last batch of 6 has a new shape and costs a "
    "trace, the first time it comes (later `fit` calls of the model reuse it). Arrays have no "
    "`drop_remainder`: choose a `batch_size` that divides "
    "the number of samples, or trim `x` and `y` to a multiple of it "
    "(`n = len(x) // batch_size * batch_size; x, y = x[:n], y[:n]`).")


def read_summaries(log_dir):
    """(step, tag, plugin, value) of every summary in the event files, in the order written."""
    summaries = []
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        for record in tf.compat.v1.train.summary_iterator(str(path)):
            for value in record.summary.value:
                array = tf.make_ndarray(value.tensor)
                decoded = array.item().decode() if array.dtype == object else float(array)
                summaries.append((record.step, value.tag, value.metadata.plugin_data.plugin_name, decoded))
    return summaries


def counts(step, trace, variable_retrace, retrace, layer="projection"):
    return [(step, f"traceguard/{layer}/trace", "scalars", trace),
            (step, f"traceguard/{layer}/variable_retrace", "scalars", variable_retrace),
            (step, f"traceguard/{layer}/retrace", "scalars", retrace)]


def test_fit_then_fit_with_a_partial_batch_writes_counts_per_epoch_and_the_retrace_reason(
        keras_flavor, tmp_path):
    log_dir = tmp_path / "logs"
    flavor_model = compiled_projection_model(keras_flavor)
    monitor = monitor_class_of(keras_flavor)(log_dir=log_dir)
    assert not log_dir.exists()  # The file writer is made at the first write.
    flavor_model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
    with pytest.warns(UserWarning, match="inputs: dim 0 32 -> None"):
        flavor_model.fit(*data(70), batch_size=32, epochs=2, verbose=0, callbacks=[monitor])
    # Keras 2 creates the optimizer's variables in the first trace of `train_function`.
    variable_retrace = keras_flavor.pick(0.0, 1.0)
    reason = PARTIAL_BATCH_RETRACE.format(index=keras_flavor.pick(3, 4),
                                          step=keras_flavor.pick("one_step_on_data", "train_function"))
    assert read_summaries(log_dir) == [
        *counts(0, 1.0, variable_retrace, 0.0),  # fit 1, epoch 0: the first trace.
        *counts(1, 1.0, variable_retrace, 1.0),  # fit 2 counts its epochs from 0 again: the next step.
        (1, "traceguard/projection/retrace_reason", "text", reason),
        *counts(2, 1.0, variable_retrace, 1.0),  # fit 2, epoch 1: no new trace, no text.
    ]


def test_a_single_fit_on_a_partial_batch_does_not_retrace(keras_flavor, tmp_path):
    flavor_model = compiled_projection_model(keras_flavor)
    monitor = monitor_class_of(keras_flavor)(log_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flavor_model.fit(*data(70), batch_size=32, epochs=2, verbose=0, callbacks=[monitor])
    variable_retrace = keras_flavor.pick(0.0, 1.0)
    assert read_summaries(tmp_path) == [*counts(0, 1.0, variable_retrace, 0.0),
                                        *counts(1, 1.0, variable_retrace, 0.0)]


def test_steps_follow_keras_epochs_and_calls_outside_fit_take_the_next_step(tmp_path):
    monitor = tg.callbacks.TraceMonitor(log_dir=tmp_path)
    layer = FakeLayer("fake")
    monitor.on_train_begin()  # fit(initial_epoch=5, epochs=6): Keras numbers the epoch 5.
    monitor.on_epoch_begin(5)
    monitor._observer.record_event(layer, event(1, TraceKind.TRACE, layer="fake"))
    monitor.on_epoch_end(5)
    monitor.on_train_end()
    monitor.on_predict_begin()
    monitor._observer.record_event(layer, event(2, TraceKind.RETRACE, layer="fake", hint="Do X."))
    with pytest.warns(UserWarning, match="during predict call 2: none of its arguments changed"):
        monitor.on_predict_end()
    assert read_summaries(tmp_path) == [
        *counts(5, 1.0, 0.0, 0.0, layer="fake"),
        *counts(6, 1.0, 0.0, 1.0, layer="fake"),
        (6, "traceguard/fake/retrace_reason", "text",
         "**#2 retrace** of tf.function `step` during predict call 2\n\n"
         "- changed: none of its arguments\n- why: why\n- fix: Do X.")]


def test_a_log_dir_that_cannot_be_written_is_logged_once_and_fit_finishes(model, tmp_path, caplog):  # noqa: F811
    (tmp_path / "file").write_text("")
    log_dir = tmp_path / "file" / "logs"
    monitor = tg.callbacks.TraceMonitor(log_dir=log_dir)
    history = model.fit(*data(64), batch_size=32, epochs=2, verbose=0, callbacks=[monitor])
    assert len(history.history["loss"]) == 2
    [record] = [r for r in caplog.records if r.name == "traceguard" and r.levelno == logging.WARNING]
    assert record.getMessage().startswith(
        f"TraceMonitor: could not write TensorBoard summaries to {str(log_dir)!r}, and stops trying: ")
