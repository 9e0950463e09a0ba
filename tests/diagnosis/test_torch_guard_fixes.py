"""A torch.compile recompile's fix follows what torch does with the guarded thing (issue #39, held-out 4).

Each test is a real run under `watch()` with Dynamo's `eager` backend; torch's own count of its
frame compiles (`get_compilation_metrics()`) is the oracle. Measured with torch 2.14.1:

- sizes 0 and 1 are always specialised: batches 1, 2, 3 compile twice by default, with
  `dynamic=True` and with `mark_dynamic`, once with `mark_unbacked`;
- a `str` argument is guarded by equality and never made dynamic;
- an int read from an attribute (an nn.Module's step counter) or a global is guarded by exact value on
  every compile, also with `dynamic=True`; `allow_unspec_int_on_nn_module = True` makes a module's
  dynamic after one recompile;
- the global grad mode is guarded (`GLOBAL_STATE changed: grad_mode`): one compile per mode, both kept;
- an inference tensor lacks the autograd dispatch keys of a normal one: one compile each, same device.
"""

import pytest
import torch
from torch._dynamo.utils import clear_compilation_metrics, counters, get_compilation_metrics

import traceguard as tg

pytestmark = pytest.mark.backend("torch")


def compiles_with_a_cache_entry():
    return [m for m in get_compilation_metrics() if m.has_guarded_code and m.graph_op_count is not None]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    clear_compilation_metrics()
    yield
    torch._dynamo.reset()


def runs_of(report, name):
    (runs,) = [runs for key, runs in report.functions.items() if name in str(key)]
    return runs


def events_of(report, name):
    return runs_of(report, name).events


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.linear(x).relu()


def test_a_first_size_of_one_is_specialised_whatever_dynamic_says():
    model = torch.compile(Head(), backend="eager", dynamic=True)
    with tg.watch() as report, torch.no_grad():
        for batch in (1, 2, 3):
            model(torch.ones(batch, 4))
    assert len(compiles_with_a_cache_entry()) == 2  # dynamic=True did not make size 1 symbolic.
    first, recompile = events_of(report, "forward")
    assert [str(change) for change in recompile.changes] == ["x: dim 0 1 -> 2"]
    assert "torch._dynamo.decorators.mark_unbacked(x, 0)" in recompile.hint
    assert "dynamic=True" not in recompile.hint and "mark_dynamic(" not in recompile.hint


def test_a_string_argument_is_guarded_by_value_and_the_fix_moves_the_string_work_out():
    @torch.compile(backend="eager", dynamic=True)
    def encode(text):
        return torch.tensor([ord(character) for character in text]).sum()

    with tg.watch() as report:
        for text in ("ab", "abc", "abcd"):
            encode(text)
    assert len(compiles_with_a_cache_entry()) == 3
    events = events_of(report, "encode")
    assert [str(change) for change in events[1].changes] == ["text: 'ab' -> 'abc'"]
    assert "tokenizing) outside the compiled function" in events[1].hint
    assert "torch.tensor(text)" not in events[1].hint


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.linear(x)


def test_an_int_attribute_recompiles_every_call_and_the_fix_is_torchs_switch():
    model = torch.compile(Counter(), backend="eager", dynamic=True)
    with tg.watch() as report:
        for _ in range(3):
            model(torch.ones(2, 4))
    assert len(compiles_with_a_cache_entry()) == 3  # dynamic=True does not reach the attribute.
    events = events_of(report, "forward")
    assert [str(change) for change in events[1].changes] == ["self.step: 0 -> another value"]
    assert "torch._dynamo.config.allow_unspec_int_on_nn_module = True" in events[1].hint
    assert "torch.tensor(self.step)" not in events[1].hint


def test_the_grad_mode_is_a_mode_one_compile_each_nothing_to_fix():
    @torch.compile(backend="eager")
    def smooth(x):
        return x.sin().cos()

    with tg.watch() as report:
        for _ in range(2):
            with torch.inference_mode():
                smooth(torch.ones(3))
            smooth(torch.ones(3))
    assert len(compiles_with_a_cache_entry()) == 2
    first, recompile = events_of(report, "smooth")
    assert [str(change) for change in recompile.changes] == ["grad_mode: False -> True (tracing context)"]
    assert recompile.hint.startswith("Expected, once per value: torch.compile guards the global `grad_mode`")
    assert runs_of(report, "smooth").avoidable_seconds == 0  # Expected: no fix removes it.


def test_an_inference_tensor_is_not_a_device_change():
    @torch.compile(backend="eager", fullgraph=True)
    def sine(x):
        return x.sin()

    with torch.inference_mode():
        made_inside = torch.randn(3)
    with tg.watch() as report:
        sine(made_inside)
        sine(torch.randn(3))
        sine(made_inside)
    assert len(compiles_with_a_cache_entry()) == 2
    first, recompile = events_of(report, "sine")
    assert [str(change) for change in recompile.changes] == ["x: an inference tensor -> a normal tensor"]
    assert "`torch.no_grad()`, which makes normal tensors" in recompile.hint
