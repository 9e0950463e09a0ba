"""The fix of a torch.compile recompile, from the guard as a change and what torch's new compile did.

Pure rules (`_core/hints.py`): the facts they follow are measured on torch 2.14.1 in
`tests/record/test_torch_compiles.py` (`relaxed`: whether the new compile passes another value).
"""

import pytest

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.function_rules import EXPECTED_HINTS
from traceguard._core.hints import retrace_hint
from traceguard._core.specs import ArgumentPath
from traceguard._core.verdicts import Hint


@pytest.mark.parametrize(("change", "relaxed", "hint"), [
    (Change(ArgumentPath("n"), Aspect.VALUE, 2, 3), True, Hint.DYNAMIC_VALUE),
    (Change(ArgumentPath("start"), Aspect.VALUE, 0, 1), False, Hint.SPECIALISED_VALUE),
    (Change(ArgumentPath("lr"), Aspect.VALUE, 0.1, "another value"), None, Hint.PYTHON_VALUE_AS_TENSOR),
    (Change(ArgumentPath("flag"), Aspect.VALUE, True, False), None, Hint.MODE_FLAG),
    (Change(ArgumentPath("x"), Aspect.REQUIRES_GRAD, False, True), None, Hint.REQUIRES_GRAD),
    (Change(ArgumentPath("x"), Aspect.STRIDE, 4, 1, 0), None, Hint.ONE_LAYOUT),
    (Change(ArgumentPath("x"), Aspect.DEVICE, "CPU", "Meta"), None, Hint.ONE_DEVICE),
    (Change(ArgumentPath("text"), Aspect.VALUE, "ab", "abc"), None, Hint.STRING_VALUE),
    (Change(ArgumentPath("self.step"), Aspect.VALUE, 0, "another value"), None, Hint.STATIC_ATTRIBUTE),
    (Change(ArgumentPath("G['count']"), Aspect.VALUE, 2, "another value"), None, Hint.STATIC_ATTRIBUTE),
    (Change(ArgumentPath("self.param_groups[0]['lr']"), Aspect.VALUE, 0.1, "another value"), None,
     Hint.PYTHON_VALUE_AS_TENSOR),
    (Change(ArgumentPath("grad_mode"), Aspect.CONTEXT, False, True), None, Hint.GLOBAL_MODE),
    (Change(ArgumentPath("x"), Aspect.DIM, 1, 2, 0), None, Hint.SIZE_ONE_SPECIALISED),
    (Change(ArgumentPath("x"), Aspect.DIM, 8, 5, 0), None, Hint.DYNAMIC_DIMENSION),
    (Change(ArgumentPath("x"), Aspect.INFERENCE, "an inference tensor", "a normal tensor"), None,
     Hint.INFERENCE_TENSOR),
], ids=["made-dynamic", "still-guarded", "not-asked", "bool", "requires_grad", "stride", "device", "str",
        "int-attribute", "int-global", "float-attribute", "grad-mode", "size-one", "size-eight",
        "inference-tensor"])
def test_a_torch_recompile_gets_the_fix_of_what_torch_did(change, relaxed, hint):
    assert retrace_hint(change, {}, {}, backend=Backend.TORCH, relaxed=relaxed) == (hint, change.parameter)


def test_a_bool_mode_flag_is_expected_and_tensor_properties_read_as_changes():
    assert Hint.MODE_FLAG in EXPECTED_HINTS and Hint.GLOBAL_MODE in EXPECTED_HINTS
    requires_grad = Change(ArgumentPath("x"), Aspect.REQUIRES_GRAD, False, True)
    assert str(requires_grad) == "x: requires_grad False -> True"
    assert str(Change(ArgumentPath("x"), Aspect.STRIDE, 4, 1, 0)) == "x: stride 0 4 -> 1"
    assert str(Change(ArgumentPath("x"), Aspect.DEVICE, "CPU", "Meta")) == "x: device CPU -> Meta"


def _compile_event(serial, after=None, breaks=()):
    from traceguard._core.function_event import FunctionEvent
    from traceguard._core.functions import FunctionTrace
    from traceguard._core.kinds import TraceKind
    from traceguard._core.verdicts import Reason, Verdict

    reason = Reason.PART_OF_TRACE if after else Reason.FIRST_TRACE
    verdict = Verdict(TraceKind.TRACE, (), reason, None, "step", Backend.TORCH, of_function=True,
                      resumed_after=after, graph_breaks=breaks)
    trace = FunctionTrace(index=serial, serial=serial, parent=None, origin="torch.compile", name="step",
                          qualname="step", definition=None, call_site=None, caller=None, entry=None,
                          signature={}, kind=TraceKind.TRACE, reason=reason, changes=(), closest=None,
                          duration=0.0, object_number=1, objects=1, saving=False, phase=None,
                          created_variables=(), relaxed=None, raised=False, graph_breaks=breaks,
                          resumed_after=after, verdict=verdict)
    return FunctionEvent(trace, "why", None, trace.miss_cost)


def test_the_frames_of_a_function_split_at_graph_breaks_are_counted_and_worded():
    from traceguard._core.function_runs import FunctionRuns
    from traceguard._core.specs import Site
    from traceguard._reports.torch_words import frames_text, graph_break_lines

    backward = ("Unsupported Tensor.backward() call", Site("/site-packages/keras/src/trainer.py", 70))
    data = ("Data dependent operator", Site("/work/step.py", 9))
    runs = FunctionRuns("step", "step", None, False)
    assert runs.frames == 1 and frames_text(runs) is None and graph_break_lines([runs]) == []
    for event in (_compile_event(1, breaks=(backward,)), _compile_event(2, backward[1], (data,))):
        runs.add(event)
    assert runs.frames == 2 and runs.graph_breaks == (backward, data)
    # Two breaks, and no frame after the second: the code after it compiled no graph.
    assert frames_text(runs) == (
        "compiled as 2 frames (2 graph breaks: Unsupported Tensor.backward() call at trainer.py:70 (Keras's "
        "code); Data dependent operator at step.py:9); no frame after 1 of them compiled a graph")
    assert graph_break_lines([runs])[1:3] == [
        "Graph breaks (1 function):",
        "  step: compiled as 2 frames (2 graph breaks: Unsupported Tensor.backward() call at trainer.py:70"]
