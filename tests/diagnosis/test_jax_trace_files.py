"""Trace files on Keras 3's JAX backend: `jax.jit` cache misses and Keras's JAX train step,
written by `watch(trace_file=...)` and read back as the report that wrote them."""

import json

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from helpers import texts
from trace_file_parity import assert_same_function_events, assert_same_report, schema_errors

import traceguard as tg
from traceguard._diagnosis.trace_file_reader import merged_explanation, read_trace_file

pytestmark = pytest.mark.backend("jax")


def test_jit_and_fit_traces_read_back_as_the_report_that_wrote_them(tmp_path):
    path = tmp_path / "jax.jsonl"
    step = jax.jit(lambda x: x * 2)
    with tg.watch(trace_file=path, trace_file_label="jax-worker") as report:
        for rows in (1, 2):
            step(jnp.ones((rows, 3)))
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((64, 3)), np.ones((64, 2)), batch_size=32, verbose=0)
        model.fit(np.ones((70, 3)), np.ones((70, 2)), batch_size=32, verbose=0)
    header = json.loads(path.read_text().splitlines()[0])
    assert (header["backend"], header["versions"]["jax"]) == ("jax", jax.__version__)
    restored = merged_explanation([read_trace_file(str(path))])
    assert restored.events == report.events
    assert restored.functions == report.functions
    assert assert_same_function_events(report, path) >= 4  # Each event views the very trace.
    assert restored.count("retrace", layer="dense") == 1
    assert [texts(event.changes) for runs in restored.functions.values() for event in runs.events
            if runs.function == "<lambda>"] == [(), ("x: dim 0 1 -> 2",)]
    restored_text = restored.summary(full=True).replace("trace file jax-worker", "watch()")
    assert restored_text == report.summary(full=True)


def test_keras_step_signatures_show_the_batch_first_and_fold_the_state(tmp_path):
    # Keras's JAX `train_step(state, data)` is keyed by every variable: with Adam, its optimizer
    # state alone is 6 arrays here (the iteration, the learning rate, two slots per variable).
    paths = []
    for batch_size in (32, 35):
        paths.append(tmp_path / f"fit{batch_size}.jsonl")
        with tg.watch(trace_file=paths[-1]) as report:
            model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")])
            model.compile(optimizer="adam", loss="mse")
            model.fit(np.ones((70, 3)), np.ones((70, 2)), batch_size=batch_size, verbose=0)
    state = "state=([float32[3,2], float32[2]], [], [6 arrays], [float32[], float32[]])"
    assert f"#1 trace  (data=(float32[35,3], float32[35,2]), {state}), called at " in \
        report.summary(full=True)
    comparison = str(tg.compare([str(paths[1])], baseline=str(paths[0])))
    # The trace lines are cut at 110 characters: inside the state, after the batch.
    assert ("#1 trace data: (float32[35,3], float32[35,2]), state: ([float32[3,2], float32[2]], [], "
            "[int32[], float32[], float32[...\n") in comparison
    assert "differs: data[0]: dim 0 32 -> 35; data[1]: dim 0 32 -> 35" in comparison


def test_a_jit_program_reads_back_as_its_report(tmp_path):
    # Misses of several kinds: a new shape, a weak type made strong, a new static value.
    path = tmp_path / "jit.jsonl"
    step = jax.jit(lambda x, scale, n: x * scale * n, static_argnums=2)
    with tg.watch(trace_file=path) as report:
        for rows, scale, n in ((1, 2.0, 1), (2, 2.0, 1), (2, jnp.float32(2.0), 1), (2, 2.0, 3), (2, 2.0, 3)):
            step(jnp.ones((rows, 3)), scale, n)
    restored = assert_same_report(report, path)
    [runs] = restored.functions.values()
    assert (runs.counts()["trace"], runs.counts()["retrace"]) == (1, 3)


def test_every_record_a_jax_run_writes_is_the_documented_schema(tmp_path):
    # Weak types, static values, a layer's runs and Keras's JAX steps.
    path = tmp_path / "schema.jsonl"
    step = jax.jit(lambda x, scale, n: x * scale * n, static_argnums=2)
    with tg.watch(trace_file=path):
        step(jnp.ones((2, 3)), 2.0, 1)
        step(jnp.ones((2, 3)), jnp.float32(2.0), 3)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(np.ones((40, 3)), np.ones((40, 2)), batch_size=32, verbose=0)
    assert schema_errors(path) == []
    assert {"header", "layer_run", "function_trace", "end"} <= \
        {json.loads(line)["type"] for line in path.read_text().splitlines()}
