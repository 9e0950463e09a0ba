"""The Dynamo frame-compile hook (`_compat/torch/traces`) and the torch internals it reads.

When one of these fails after a torch upgrade, what the hook relies on in
torch/_dynamo/convert_frame.py moved (https://github.com/pytorch/pytorch/blob/main/torch/_dynamo/convert_frame.py:
`_compile`, called by `ConvertFrameAssert.__call__`, calling
`get_and_maybe_log_recompilation_reasons` from torch/_dynamo/guards.py), or torch words a guard
failure differently (torch/csrc/dynamo/guards.cpp): `traceguard/_compat/torch/` needs a new branch.
Compiles use `backend="eager"`: Dynamo's guards and recompiles are the same, without Inductor's cost.
"""

import inspect

import pytest
import torch
from torch._dynamo import convert_frame
from torch._dynamo.utils import counters

from traceguard._compat.torch import guard_reasons as _guard_reasons
from traceguard._compat.torch import traces as _dynamo_traces
from traceguard._core.changes import Aspect
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("torch")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def test_the_internals_the_hook_replaces_are_where_it_expects():
    parameters = tuple(inspect.signature(convert_frame._compile).parameters)
    assert parameters[:5] == ("code", "globals", "locals", "builtins", "closure")
    assert {"frame", "compile_id"} <= set(parameters)
    assert "_compile" in convert_frame.ConvertFrameAssert.__call__.__code__.co_names
    assert "get_and_maybe_log_recompilation_reasons" in convert_frame._compile.__code__.co_names
    assert "guarded_code" in convert_frame.ConvertFrameReturn.__dataclass_fields__
    # Whether a recompile relaxed a Python value: the new entry's guards asked of the frame's locals.
    from torch._dynamo.guards import GuardManagerWrapper

    assert "guard_manager" in convert_frame.GuardedCode.__dataclass_fields__
    assert tuple(inspect.signature(GuardManagerWrapper.check).parameters) == ("self", "x")
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    assert tuple(inspect.signature(InstructionTranslatorBase.log_graph_break).parameters) == (
        "self", "code_options", "reason", "exc")


def test_the_hooks_exist_only_while_listening_and_are_restored_exactly():
    original, reasons = convert_frame._compile, convert_frame.get_and_maybe_log_recompilation_reasons
    with _observers.listening_to_traces(FunctionRecords().on_trace):
        assert convert_frame._compile is not original
        assert _dynamo_traces.is_installed()
    assert convert_frame._compile is original is _dynamo_traces._ORIGINAL_COMPILE
    assert convert_frame.get_and_maybe_log_recompilation_reasons is reasons
    assert "log_graph_break" not in vars(_dynamo_traces._TRANSLATOR) or \
        _dynamo_traces._TRANSLATOR.log_graph_break is _dynamo_traces._ORIGINAL_LOG_BREAK
    assert not _dynamo_traces.is_installed()


def test_torch_words_a_size_and_a_value_guard_as_the_parser_reads_them(records):
    @torch.compile(backend="eager")
    def f(x, n):
        return x * n

    f(torch.ones(8), 2)
    f(torch.ones(5), 2)  # The size guard of compile 0 fails.
    f(torch.ones(5), 3)  # Compile 1 made `x` dynamic: its `n == 2` guard fails.
    kept = records.records()
    assert [r.origin for r in kept] == ["torch.compile"] * 3
    assert kept[1].backend_reasons == ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 5",)
    assert _guard_reasons.reason_lines(kept[2].backend_reasons[0]) == "n == 2"
    assert [str(c) for r in kept[1:] for c in r.changes] == ["x: dim 0 8 -> 5", "n: 2 -> 3"]


@pytest.mark.parametrize(("reason", "arguments", "expected", "aspect"), [
    ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 5", {}, "x: dim 0 8 -> 5", Aspect.DIM),
    ("0/1: tensor 'data[0]' size mismatch at index 0. expected 32, actual 4", {}, "data[0]: dim 0 32 -> 4",
     Aspect.DIM),
    ("0/1: n == 2                       # return x * n  # t.py:3 in f\nUser stack trace:\n  ...", {"n": 3},
     "n: 2 -> 3", Aspect.VALUE),
    ("Cache line invalidated because list.__getitem__(L['self']._layers, 1) got deallocated", {},
     "self._layers[1]: an object -> a new object (the earlier one was deleted) (compared by identity)",
     Aspect.IDENTITY),
    ("1/0: list.__getitem__(self._layers, 1)._kernel._value.grad is None  # if p.grad is not None:", {},
     "self._layers[1]._kernel._value.grad: None (before the first backward pass) -> a gradient "
     "(tracing context)", Aspect.CONTEXT),
    ("0/1: tensor 'x' requires_grad mismatch. expected requires_grad=0", {}, "x: requires_grad False -> True",
     Aspect.REQUIRES_GRAD),
    ("0/1: tensor 'x' stride mismatch at index 1. expected 1, actual 4", {}, "x: stride 1 1 -> 4",
     Aspect.STRIDE),
    ("0/1: tensor 'x' Tensor device index mismatch. Expected device index to be 0, actual 1", {},
     "x: device 0 -> 1", Aspect.DEVICE),
    ("1/0: flag == True                 # return x * 2 if flag else x  # t.py:3 in g", {},
     "flag: True -> False", Aspect.VALUE),
    ("0/1: tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, BackendSelect, "
     "ADInplaceOrView), "
     "actual DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU)", {},
     "x: an inference tensor -> a normal tensor", Aspect.INFERENCE),
    ("0/0: GLOBAL_STATE changed: autocast(cpu)_enabled ", {},
     "autocast(cpu)_enabled: the earlier compile's value -> another value (tracing context)", Aspect.CONTEXT),
    ("0/0: ___check_global_state() against CUDA", {}, "torch guard: ___check_global_state() against CUDA -> "
     "failed (tracing context)", Aspect.CONTEXT),
])
def test_guard_reasons_read_as_changes(reason, arguments, expected, aspect):
    (change,) = _guard_reasons.changes_of(reason, arguments)
    assert (str(change), change.aspect) == (expected, aspect)


def test_the_torch_backend_answers_every_question_of_the_interface():
    from traceguard import _compat
    from traceguard._compat._interface import BACKEND_NAMES
    from traceguard._compat.torch import backend as _torch

    assert sorted(_torch.__all__) == sorted(BACKEND_NAMES)
    assert all(hasattr(_torch, name) for name in BACKEND_NAMES)
    assert (_compat.BACKEND, _compat.TRACER, _compat.executing_eagerly()) == ("torch", "torch.compile", True)


def test_a_resume_frame_maps_to_its_functions_code_as_torch_keeps_it():
    # torch/_dynamo/resume_execution.py: `ContinueExecutionCache` generates each resume frame's code
    # from the function's own code, and keeps its metadata (`code`) per generated code object.
    from torch._dynamo.resume_execution import ContinueExecutionCache

    from traceguard._compat.torch import resume
    from traceguard._reports import torch_words

    def noisy(x):
        y = x + 1
        print("between")
        return y * 2

    torch.compile(noisy, backend="eager")(torch.ones(3))
    (generated,) = ContinueExecutionCache.cache.get(noisy.__code__).values()
    line = noisy.__code__.co_firstlineno + 2
    assert generated.co_name == f"torch_dynamo_resume_in_noisy_at_{line}"
    assert resume.original_code(generated) == (noisy.__code__, line)
    assert resume.original_code(noisy.__code__) is None
    assert resume.runs_part_of(generated, noisy.__code__)
    assert resume.runs_part_of(noisy.__code__, noisy.__code__)
    # The words name torch's frame with the prefix `_reports` keeps (it imports no torch).
    assert torch_words.PREFIX == resume.PREFIX
