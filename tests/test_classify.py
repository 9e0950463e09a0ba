"""classify_run without TensorFlow: the rules, one by one."""

from traceguard._classify import EarlierTrace, RunContext, classify_run
from traceguard._events import TraceKind
from traceguard._signature import spec_of

A = {"inputs": spec_of((1, 2))}
B = {"inputs": spec_of((1, 3))}


def test_contexts_other_than_graph_decide_the_kind_alone():
    for context, kind in [(RunContext.EAGER, TraceKind.EAGER), (RunContext.SYMBOLIC, TraceKind.SYMBOLIC),
                          (RunContext.SAVE, TraceKind.SAVE)]:
        assert classify_run(context, A, "f", True, [EarlierTrace(A, True)]).kind is kind


def test_first_trace_of_a_function():
    verdict = classify_run(RunContext.GRAPH, A, "step", True, [])
    assert verdict.kind is TraceKind.TRACE and verdict.changes == () and verdict.hint is None
    assert verdict.reason.startswith("First trace of tf.function `step`")


def test_same_signature_after_a_variable_creating_trace_is_a_variable_retrace():
    verdict = classify_run(RunContext.GRAPH, A, "step", False, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.VARIABLE_RETRACE and verdict.changes == ()


def test_variable_retrace_of_keras2_train_function_points_at_the_optimizer():
    verdict = classify_run(RunContext.GRAPH, A, "train_function", False, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.VARIABLE_RETRACE
    assert "model.optimizer.build(model.trainable_variables)" in verdict.hint
    layer_hint = classify_run(RunContext.GRAPH, A, "step", False, [EarlierTrace(A, True)]).hint
    assert "call the layer once" in layer_hint


def test_same_signature_without_the_phase_change_is_an_unexplained_retrace():
    verdict = classify_run(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.RETRACE and verdict.changes == ()
    assert "did not change" in verdict.reason


def test_new_signature_is_a_retrace_against_the_closest_earlier_trace():
    far = {"inputs": spec_of((9, 9))}
    earlier = [EarlierTrace(far, True), EarlierTrace(A, False)]
    verdict = classify_run(RunContext.GRAPH, B, "step", False, earlier)
    assert verdict.kind is TraceKind.RETRACE
    assert verdict.changes == ("inputs[1]: 2 -> 3",)


def test_hints_follow_the_cause():
    def hint(old, new, function="f"):
        return classify_run(RunContext.GRAPH, new, function, False, [EarlierTrace(old, True)]).hint

    class Shape:
        def __init__(self, *shape, dtype="float32"):
            self.shape, self.dtype = shape, dtype

    assert "input_signature" in hint({"x": spec_of(Shape(2))}, {"x": spec_of(Shape(3))})
    in_fit = hint({"x": spec_of(Shape(2))}, {"x": spec_of(Shape(3))}, "one_step_on_data")
    assert "drop_remainder=True" in in_fit
    assert "Cast" in hint({"x": spec_of(Shape(2))}, {"x": spec_of(Shape(2, dtype="int32"))})
    assert "tf.constant" in hint({"k": spec_of(1)}, {"k": spec_of(2)})
    assert "training" in hint({"training": spec_of(True)}, {"training": spec_of(False)})


def test_graph_without_function_name_reads_naturally():
    verdict = classify_run(RunContext.GRAPH, B, None, None, [EarlierTrace(A, True)])
    assert verdict.reason.startswith("The graph traced again")


def test_same_signature_in_a_new_function_of_the_same_code_is_a_retrace():
    verdict = classify_run(RunContext.GRAPH, A, "step", True, [], [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.RETRACE
    assert verdict.changes == ("tf.function `step`: new object, same Python function",)
    assert "outside the loop" in verdict.hint
    other_signature = classify_run(RunContext.GRAPH, B, "step", True, [], [EarlierTrace(A, True)])
    assert other_signature.kind is TraceKind.TRACE
def test_runs_of_the_same_trace_are_classified_against_earlier_traces_only():
    token, other = object(), object()
    # The second replica of a first trace: a trace, not a retrace.
    first = classify_run(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True, token)],
                         trace=token)
    assert first.kind is TraceKind.TRACE
    # The second replica of a variable retrace.
    earlier = [EarlierTrace(A, True, other), EarlierTrace(A, False, token)]
    verdict = classify_run(RunContext.GRAPH, A, "step", False, earlier, trace=token)
    assert verdict.kind is TraceKind.VARIABLE_RETRACE
    # Unknown tokens never match: an earlier run without one is an earlier trace.
    assert classify_run(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True)], trace=None).kind \
        is TraceKind.RETRACE
