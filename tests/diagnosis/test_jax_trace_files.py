"""Trace files on Keras 3's JAX backend: `jax.jit` cache misses and Keras's JAX train step,
written by `watch(trace_file=...)` and read back as the report that wrote them."""

import json

import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from helpers import texts

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
    assert restored.count("retrace", layer="dense") == 1
    assert [texts(event.changes) for runs in restored.functions.values() for event in runs.events
            if runs.function == "<lambda>"] == [(), ("x: dim 0 1 -> 2",)]
    restored_text = restored.summary(full=True).replace("trace file jax-worker", "watch()")
    assert restored_text == report.summary(full=True)
