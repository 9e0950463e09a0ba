"""A JAX retrace that built the same jaxpr again: what the waste line says can be relaxed (#38).

`jax.jit` has no `None` dimension and no `input_signature`: a shape is relaxed by padding, a call
structure by passing the argument one way. Real runs under `watch()`, read back from the trace file.
"""

import jax
import jax.numpy as jnp
import pytest

import traceguard as tg
from traceguard._diagnosis.trace_file_reader import merged_explanation, read_trace_file

pytestmark = pytest.mark.backend("jax")


def _words(text):
    """The report's text with its line wrapping undone."""
    return " ".join(text.split())


def test_a_shape_only_retrace_on_jax_says_to_pad_it(tmp_path):
    @jax.jit
    def apply(frames):
        return jnp.tanh(frames) * 2  # No constant that depends on the shape: the same jaxpr.

    trace_file = tmp_path / "trace.jsonl"
    with tg.watch(trace_file=str(trace_file)) as explanation:
        for count in (8, 12, 8):
            apply(jnp.ones((count, 4)))
    report = _words(explanation.summary(full=True))
    # Before: "Safe to relax: `frames` dim 0 (`None` in an input_signature)", TensorFlow's remedy.
    relax = "Safe to relax: `frames` dim 0 (pad it to one length: `jax.jit` has no `None` dimension)."
    assert relax in report
    assert "input_signature" not in report
    read_back = merged_explanation([read_trace_file(str(trace_file))])
    assert _words(read_back.summary(full=True)).count(relax) == 1


def test_a_call_structure_retrace_on_jax_says_to_pass_it_one_way():
    @jax.jit
    def f(x, y):
        return x + y

    with tg.watch() as explanation:
        f(1.0, 2.0)
        f(1.0, y=2.0)
    report = _words(explanation.summary(full=True))
    assert "Safe to relax: how `y` is passed (the same way at every call)." in report
