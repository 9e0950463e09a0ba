"""The call-level hooks on TensorFlow (`_compat.tensorflow.calls`, `_keras_batches`) on real calls.

When one of these fails after a TensorFlow or Keras upgrade, a call path moved:
`Function.__call__`, `ConcreteFunction._call_flat`, `Dataset.batch`'s dataset, or
Keras 3's `EpochIterator` and its data adapters.
"""

import importlib
import inspect

import numpy as np
import pytest
import tensorflow as tf
from helpers import record_kind

from traceguard import _compat
from traceguard._compat import _function_calls, _function_tracing, _keras_batches
from traceguard._compat.tensorflow import calls as _tf_calls
from traceguard._core.specs import format_signature
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("tensorflow")

keras = _compat.keras


@pytest.fixture
def records():
    records = FunctionRecords()
    completed = []

    def on_complete(tracing):
        done = records.on_complete(tracing)
        if done is not None:
            record, cost = done
            assert records.cost_of(record) is cost  # Held beside the record, not in a copy of it.
            completed.append(record)

    records.completed = completed
    with _observers.listening_to_traces(records.on_trace, on_complete):
        yield records
    assert not _function_tracing.is_installed()


def matmuls(x):
    for _ in range(20):
        x = tf.matmul(x, x) * 0.01
    return x


def test_the_hooked_internals_are_where_this_tensorflow_calls_functions():
    assert _tf_calls._FUNCTION.__dict__["__call__"] is _tf_calls._ORIGINAL_CALL
    assert tuple(inspect.signature(_tf_calls._CALL_FLAT).parameters) in {
        ("self", "tensor_inputs", "captured_inputs"),  # TF 2.13-2.21.
        ("self", "args", "captured_inputs", "cancellation_manager")}  # TF 2.12.
    assert tf.function(lambda x: x, jit_compile=True)._jit_compile is True
    dataset = tf.data.Dataset.range(10).batch(4)
    assert isinstance(dataset, _tf_calls._BATCH_DATASET)
    assert tf.get_static_value(dataset._batch_size) == 4
    assert not tf.get_static_value(dataset._drop_remainder)
    assert int(dataset._input_dataset.cardinality()) == 10


def test_listening_patches_the_calls_and_leaving_removes_every_shadow():
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    records = FunctionRecords()
    with _observers.listening_to_traces(records.on_trace, records.on_complete):
        assert _tf_calls._FUNCTION.__dict__["__call__"] is not _tf_calls._ORIGINAL_CALL
        step(tf.ones((3, 3)))
        concrete = step.get_concrete_function(tf.ones((3, 3)))
        assert "_call_flat" in concrete.__dict__  # A function running XLA keeps its shadow.
    assert _tf_calls._FUNCTION.__dict__["__call__"] is _tf_calls._ORIGINAL_CALL
    assert "_call_flat" not in concrete.__dict__
    assert len(_tf_calls._watched) == 0
    assert not _function_tracing.is_installed()
    assert _function_calls.current_call() is None


def test_a_plain_tf_function_s_first_call_is_its_lower_phase_and_only_it_is_timed(records):
    step = tf.function(matmuls)
    step(tf.ones((8, 8)))
    concrete = step.get_concrete_function(tf.ones((8, 8)))
    assert "_call_flat" not in concrete.__dict__  # The shadow left after the first call.
    step(tf.ones((8, 8)))
    (record,) = records.completed
    assert records.records() == [record] and set(record.phases) == {"trace"}  # The one record, as it ended.
    cost = records.cost_of(record)
    assert set(cost.phases) == {"trace", "lower"}
    assert cost.phases["trace"] == record.duration
    assert cost.phases["lower"] > 0
    assert cost.miss >= cost.phases["trace"] + cost.phases["lower"]
    assert cost.call_started <= cost.started


def test_jit_compile_with_reduce_retracing_compiles_each_new_shape_without_a_retrace(records):
    step = tf.function(matmuls, jit_compile=True, reduce_retracing=True)
    for rows in (4, 5, 6, 7, 5, 8):
        step(tf.ones((rows, rows)))
    call_line = inspect.currentframe().f_lineno - 1
    assert step.experimental_get_tracing_count() == 2
    assert [record_kind(record) for record in records.completed] == ["first", "retrace", "compile", "compile",
                                                             "compile"]
    assert [[str(change) for change in record.changes] for record in records.completed[2:]] == [
        ["x: dim 0 5 -> 6", "x: dim 1 5 -> 6"], ["x: dim 0 6 -> 7", "x: dim 1 6 -> 7"],
        ["x: dim 0 7 -> 8", "x: dim 1 7 -> 8"]]
    first, retrace, compile_6, *_ = records.completed
    assert set(records.cost_of(first).phases) == {"trace", "compile"}  # XLA's first call compiles.
    cost_6 = records.cost_of(compile_6)
    assert set(cost_6.phases) == {"compile"}
    assert format_signature(compile_6.signature) == {"x": "float32[6,6]"}
    assert cost_6.miss >= cost_6.phases["compile"] > 0
    assert str(compile_6.call_site) == f"{__file__}:{call_line}"


def test_keras_fit_with_jit_compile_reports_the_partial_batch_s_compilation(records):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    model.fit(np.ones((70, 8)), np.ones((70, 4)), batch_size=32, epochs=2, verbose=0)
    compiles = [record for record in records.completed if record_kind(record) == "compile"]
    assert len(compiles) == 1  # The second epoch's batch of 6 was compiled already.
    (compiled,) = compiles
    assert (compiled.name, compiled.xla_functions) == (
        ("multi_step_on_iterator", ("one_step_on_data",)) if _compat.IS_KERAS_3
        else ("train_function", ("run_step",)))
    assert [str(change) for change in compiled.changes] == ["iterator[0]: dim 0 32 -> 6",
                                                             "iterator[1]: dim 0 32 -> 6"]
    assert (compiled.keras_call.method, compiled.keras_call.samples) == ("fit", 70)


def test_keras_fit_on_a_generator_with_jit_compile_runs_as_without_traceguard(records):
    # Keras 3's generator adapter leaves `partial_batch_size` to its base, which raises
    # NotImplementedError (Keras's own `run_layer_test` fits so): sizes unknown, the fit unchanged.
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)

    def batches():
        while True:
            yield np.ones((16, 8)), np.ones((16, 4))

    history = model.fit(batches(), steps_per_epoch=2, epochs=2, shuffle=False, verbose=0)
    assert len(history.history["loss"]) == 2
    assert [record.name for record in records.completed if record_kind(record) == "compile"] == []


def test_a_failure_reading_the_compiled_shapes_is_logged_and_the_fit_goes_on(records, monkeypatch,
                                                                            caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a Keras internal moved")

    monkeypatch.setattr(_keras_batches, "step_batch_sizes", broken)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    history = model.fit(np.ones((70, 8)), np.ones((70, 4)), batch_size=32, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert "Reading the shapes XLA compiles for" in caplog.text
    assert "a Keras internal moved" in caplog.text


def test_the_batch_sizes_of_a_dataset_come_from_its_batch(records):
    class Adapter:
        _dataset = tf.data.Dataset.from_tensor_slices(np.ones((70, 2))).batch(32).prefetch(1)

    assert _tf_calls._dataset_batches(Adapter) == (32, 6)
    Adapter._dataset = tf.data.Dataset.range(64).batch(32, drop_remainder=True)
    assert _tf_calls._dataset_batches(Adapter) == (32, None)
    Adapter._dataset = tf.data.Dataset.range(64).batch(32).filter(lambda x: True)  # Unknown after it.
    assert _tf_calls._dataset_batches(Adapter) is None


@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="Keras 3's EpochIterator")
def test_keras3_epoch_iterator_counts_the_steps_of_each_call():
    from keras.src.trainers.epoch_iterator import EpochIterator

    epoch_iterator = EpochIterator(np.ones((70, 2)), batch_size=32)
    assert all(hasattr(epoch_iterator, name) for name in _keras_batches.KERAS3_FIELDS)
    adapter = epoch_iterator.data_adapter
    assert (adapter.batch_size, adapter.partial_batch_size, adapter.num_batches) == (32, 6, 3)
    sizes = [fit(iterator, epoch_iterator=epoch_iterator)
             for _, _, iterator in epoch_iterator._enumerate_iterator()]
    assert sizes == [(32,), (32,), (6,)]


@pytest.mark.skipif(_compat.IS_KERAS_3, reason="Keras 2's DataHandler")
def test_keras2_data_handler_counts_the_steps_of_each_call():
    package = _compat.keras.__name__.split(".")[0]
    try:
        data_adapter = importlib.import_module(f"{package}.src.engine.data_adapter")
    except ImportError:  # Keras 2.12.
        data_adapter = importlib.import_module(f"{package}.engine.data_adapter")
    data_handler = data_adapter.DataHandler(np.ones((70, 2)), batch_size=32, epochs=1,
                                            steps_per_execution=tf.Variable(1))
    assert all(hasattr(data_handler, name) for name in _keras_batches.KERAS2_FIELDS)
    sizes = []
    for _, iterator in data_handler.enumerate_epochs():
        for _ in data_handler.steps():
            sizes.append(fit(iterator, data_handler))
    assert sizes == [(32,), (32,), (6,)]


def fit(iterator, data_handler=None, epoch_iterator=None):
    """Stands for Keras's `fit`, whose locals `_keras_batches` reads."""
    return _keras_batches.step_batch_sizes(iterator, inspect.currentframe())


@pytest.fixture(autouse=True)
def this_file_is_keras(monkeypatch):
    """`fit` above counts as a Keras frame."""
    monkeypatch.setattr(_keras_batches, "_KERAS_DIRS", (*_keras_batches._KERAS_DIRS, __file__))
    monkeypatch.setattr(_keras_batches, "_counters", {})
