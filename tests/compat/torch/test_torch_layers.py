"""A `TraceAwareLayer`'s runs that Dynamo traces (`_compat/torch/layers`), and the internals they use.

When one of these fails after a torch upgrade, what `note_trace_run` relies on moved:
`torch._dynamo.comptime` (https://github.com/pytorch/pytorch/blob/main/torch/_dynamo/comptime.py:
`comptime(fn)`, `ComptimeContext.get_local(name, stacklevel=)`, `ComptimeVar`'s accessors) or
`OutputGraph.compile_subgraph` setting `compile_subgraph_reason` (torch/_dynamo/output_graph.py).
Keras's `jit_compile=True` steps are compiled with Dynamo's `eager` backend: the same frames,
guards and graph breaks as with Inductor, without its seconds per compile.
"""

import functools
import inspect

import keras
import numpy as np
import pytest
import torch
from torch._dynamo import comptime, output_graph
from torch._dynamo.utils import clear_compilation_metrics, counters, get_compilation_metrics

import traceguard as tg

pytestmark = pytest.mark.backend("torch")


def test_the_comptime_internals_are_where_note_trace_run_expects():
    assert tuple(inspect.signature(type(comptime.comptime).__call__).parameters)[:1] == ("fn",)
    assert tuple(inspect.signature(comptime.ComptimeContext.get_local).parameters) == (
        "self", "name", "stacklevel")
    for name in ("_i_will_not_complain_if_bc_breaks_VariableTracker", "as_fake", "is_proxy",
                 "is_python_constant", "as_python_constant"):
        assert callable(getattr(comptime.ComptimeVar, name))
    assert callable(comptime.ComptimeContext._i_will_not_complain_if_bc_breaks_InstructionTranslator)
    assert "compile_subgraph_reason" in output_graph.OutputGraph.compile_subgraph.__code__.co_names
    assert callable(output_graph.OutputGraph.add_cleanup_hook)
    assert "call_cleanup_hooks" in output_graph.OutputGraph.compile_and_call_fx_graph.__code__.co_names
    # Outside Dynamo, `comptime(fn)` runs its fallback (nothing), never `fn`.
    comptime.comptime(lambda ctx: pytest.fail("ran outside Dynamo"))


class Scale(tg.TraceAwareLayer):
    def call(self, inputs):
        return inputs * 2.0


class PlainScale(keras.layers.Layer):
    def call(self, inputs):
        return inputs * 2.0


def _fit(layer, watched):
    """Keras's `fit` with `jit_compile=True` from a fresh Dynamo: what torch compiled."""
    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3), layer, keras.layers.Dense(1)])
    model.compile("sgd", "mse", jit_compile=True)
    x, y = np.ones((40, 4), "float32"), np.ones((40, 1), "float32")  # 40 = 2 x 16 + 8
    if watched:
        with tg.watch() as report:
            model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    else:
        report = None
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    compiles = [(m.co_name, m.recompile_reason is None, m.graph_op_count) for m in get_compilation_metrics()]
    return compiles, sum(counters["graph_break"].values()), counters["stats"]["unique_graphs"], report


@pytest.mark.slow  # About 60 s on 2 cores: Dynamo traces Keras's steps 3 times, without Inductor.
def test_layer_runs_in_a_compiled_fit_are_traces_of_their_frames_and_change_no_compile(monkeypatch):
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    plain = _fit(PlainScale(), watched=False)
    layer = Scale()
    *watched, report = _fit(layer, watched=True)
    # torch compiled the same frames, with the same recompiles, graphs and breaks (torch 2.14.1,
    # Keras 3.15.1: 20 frame compiles, 8 graphs, 9 graph breaks).
    assert tuple(watched) == plain[:3]
    # `train_step` holds the forward pass: compiled 3 times (first, once gradients exist, the last
    # batch of 8 with dimension 0 dynamic); `one_step_on_data`'s graph is empty (`train_step` is
    # a frame of its own after `loss.backward()`'s break), so the layer ran in none of it.
    # Keras's symbolic passes first (two building the model, one as `fit` starts), then the traces.
    assert [event.kind.value for event in layer.trace_log][:3] == ["symbolic"] * 3
    events = list(layer.trace_log)[3:]
    assert [(event.kind.value, event.function) for event in events] == [
        ("trace", "train_step"), ("retrace", "train_step"), ("retrace", "train_step")]
    assert [str(event.signature["inputs"]) for event in events] == [
        "torch.float32[16,3]", "torch.float32[16,3]", "torch.float32[None,3]"]
    # The frames compiled after `train_step`'s graph breaks are its too, and run no layer.
    step_serials = [event.serial for runs in report.functions.values() for event in runs.events
                    if event.function == "train_step" and event.verdict.resumed_after is None]
    assert [event.function_trace for event in events] == step_serials
    # Unwatched, no frame compile is recorded: a run is told as its attempt ends, if it compiled.
    unwatched = Scale()
    *compiles, _ = _fit(unwatched, watched=False)
    assert tuple(compiles) == plain[:3]
    assert [(event.kind.value, str(event.signature["inputs"])) for event in unwatched.trace_log][3:] == [
        ("trace", "torch.float32[16,3]"), ("retrace", "torch.float32[16,3]"),
        ("retrace", "torch.float32[None,3]")]
    text = report.summary(full=True)
    assert "changed: inputs: dim 0 16 -> None" in text
    # A plain Keras layer that `watch()` instruments reads the same, with its keyword arguments.
    assert text.count("(Dense, plain Keras layer): 1 symbolic, 1 trace, 2 retrace") == 2
    assert "#2 trace in train_step  (inputs=torch.float32[16,4], training=True)" in text
