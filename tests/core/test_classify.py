"""classify_run without a backend: the rules, one by one."""

from helpers import classify, python_spec, tensor, texts

from traceguard._core.changes import Aspect
from traceguard._core.events import TraceKind
from traceguard._core.verdicts import EarlierTrace, Hint, Reason, RunContext, SymbolicPass

A = {"inputs": python_spec((1, 2))}
B = {"inputs": python_spec((1, 3))}


def test_contexts_other_than_graph_decide_the_kind_alone():
    for context, kind in [(RunContext.EAGER, TraceKind.EAGER), (RunContext.SYMBOLIC, TraceKind.SYMBOLIC),
                          (RunContext.SAVE, TraceKind.SAVE)]:
        assert classify(context, A, "f", True, [EarlierTrace(A, True)]).kind is kind


def test_a_symbolic_run_s_hint_follows_the_keras_pass_that_ran_it():
    expected = {None: Hint.SYMBOLIC_PASS, SymbolicPass.BUILD: Hint.DEFINE_BUILD,
                SymbolicPass.OUTPUT: Hint.DEFINE_COMPUTE_OUTPUT_SHAPE,
                SymbolicPass.ENCLOSING: Hint.ENCLOSING_SYMBOLIC_PASS,
                SymbolicPass.KERAS2: Hint.KERAS2_FUNCTIONAL}
    assert set(expected) == {None, *SymbolicPass}
    for symbolic_pass, hint in expected.items():
        verdict = classify(RunContext.SYMBOLIC, A, "f", None, [], symbolic_pass=symbolic_pass)
        assert (verdict.kind, verdict.reason, verdict.hint) == (TraceKind.SYMBOLIC, Reason.SYMBOLIC, hint)
    # Only a symbolic run has a pass: a graph run's verdict ignores it.
    graph = classify(RunContext.GRAPH, A, "f", True, [], symbolic_pass=SymbolicPass.BUILD)
    assert graph.kind is TraceKind.TRACE and graph.hint is None


def test_first_trace_of_a_function():
    verdict = classify(RunContext.GRAPH, A, "step", True, [])
    assert verdict.kind is TraceKind.TRACE and texts(verdict.changes) == () and verdict.hint is None
    assert verdict.reason is Reason.FIRST_TRACE and verdict.function == "step"


def test_same_signature_after_a_variable_creating_trace_is_a_variable_retrace():
    verdict = classify(RunContext.GRAPH, A, "step", False, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.VARIABLE_RETRACE and texts(verdict.changes) == ()


def test_variable_retrace_of_keras2_train_function_points_at_the_optimizer():
    verdict = classify(RunContext.GRAPH, A, "train_function", False, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.VARIABLE_RETRACE
    assert verdict.hint is Hint.BUILD_OPTIMIZER_FIRST
    layer_hint = classify(RunContext.GRAPH, A, "step", False, [EarlierTrace(A, True)]).hint
    assert layer_hint is Hint.CREATE_VARIABLES_FIRST


def test_same_signature_without_the_phase_change_is_an_unexplained_retrace():
    verdict = classify(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.RETRACE and texts(verdict.changes) == ()
    assert verdict.reason is Reason.SAME_ARGUMENTS and verdict.hint is Hint.KEEP_OUTSIDE_VALUES_FIXED


def test_new_signature_is_a_retrace_against_the_closest_earlier_trace():
    far = {"inputs": python_spec((9, 9))}
    earlier = [EarlierTrace(far, True), EarlierTrace(A, False)]
    verdict = classify(RunContext.GRAPH, B, "step", False, earlier)
    assert verdict.kind is TraceKind.RETRACE
    assert texts(texts(verdict.changes)) == ("inputs[1]: 2 -> 3",)
    (change,) = verdict.changes
    assert (str(change.argument), change.parameter, change.aspect, str(change.old), str(change.new)) == (
        "inputs[1]", "inputs", Aspect.VALUE, "2", "3")


def test_hints_follow_the_cause():
    def hint(old, new, keras_step=False, backend="tensorflow"):
        return classify(RunContext.GRAPH, new, "f", False, [EarlierTrace(old, True)],
                            backend=backend, keras_step=keras_step).hint


    two, three = {"x": tensor(2)}, {"x": tensor(3)}
    assert hint(two, three) is Hint.NONE_DIMENSION
    assert hint(two, three, backend="jax") is Hint.FIXED_SHAPES
    assert hint(two, three, keras_step=True) is Hint.PARTIAL_BATCH
    assert hint(two, {"x": tensor(2, 1)}) is Hint.ONE_RANK
    assert hint(two, {"x": tensor(2, dtype="int32")}) is Hint.ONE_DTYPE
    assert hint({"k": python_spec(1)}, {"k": python_spec(2)}) is Hint.PYTHON_VALUE_AS_TENSOR
    assert hint({"k": python_spec(1)}, {"k": python_spec([1])}) is Hint.FIXED_STRUCTURE
    assert hint({"training": python_spec(True)}, {"training": python_spec(False)}) is Hint.TRAINING_VALUE


def test_graph_without_function_name_reads_naturally():
    verdict = classify(RunContext.GRAPH, B, None, None, [EarlierTrace(A, True)])
    assert verdict.reason is Reason.SIGNATURE_CHANGED and verdict.function is None


def test_same_signature_in_a_new_function_of_the_same_code_is_a_first_trace_of_the_object():
    # The new object's cache is empty: its first trace is a `trace`, explained as the code made anew.
    verdict = classify(RunContext.GRAPH, A, "step", True, [], [EarlierTrace(A, True)])
    assert verdict.kind is TraceKind.TRACE
    assert texts(texts(verdict.changes)) == ("tf.function `step`: new object, same Python function",)
    assert verdict.changes[0].aspect is Aspect.FUNCTION_OBJECT
    assert verdict.reason is Reason.NEW_FUNCTION_OBJECT and verdict.hint is Hint.CREATE_FUNCTION_ONCE
    other_signature = classify(RunContext.GRAPH, B, "step", True, [], [EarlierTrace(A, True)])
    assert other_signature.kind is TraceKind.TRACE
def test_runs_of_the_same_trace_are_classified_against_earlier_traces_only():
    token, other = object(), object()
    # The second replica of a first trace: a trace, not a retrace.
    first = classify(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True, token)],
                         trace=token)
    assert first.kind is TraceKind.TRACE
    # The second replica of a variable retrace.
    earlier = [EarlierTrace(A, True, other), EarlierTrace(A, False, token)]
    verdict = classify(RunContext.GRAPH, A, "step", False, earlier, trace=token)
    assert verdict.kind is TraceKind.VARIABLE_RETRACE
    # Unknown tokens never match: an earlier run without one is an earlier trace.
    assert classify(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True)], trace=None).kind \
        is TraceKind.RETRACE


def test_batch_dimension_hints_follow_the_keras_method_and_its_data():
    from traceguard._core.keras_names import KerasCall

    def hint(old_batch, new_batch, call, axis=0):
        old = [4, 4]
        new = list(old)
        old[axis], new[axis] = old_batch, new_batch
        return classify(RunContext.GRAPH, {"x": tensor(*new)}, "one_step_on_data", False,
                            [EarlierTrace({"x": tensor(*old)}, True)], keras_step=True,
                            keras_call=call).hint


    assert hint(32, 6, KerasCall("fit", "dataset")) is Hint.PARTIAL_BATCH_DATASET
    assert hint(32, 6, KerasCall("fit", "arrays", 70, 32)) is Hint.PARTIAL_BATCH_ARRAYS
    assert hint(32, 6, KerasCall("evaluate", "arrays", 70, 32)) is Hint.PARTIAL_BATCH_EVALUATE
    assert hint(32, 6, KerasCall("predict", "arrays", 70, 32)) is Hint.PREDICT_BATCH_SIZE
    assert hint(32, 6, KerasCall("predict_on_batch")) is Hint.PREDICT_BATCH_SIZE
    assert hint(32, 6, KerasCall("train_on_batch")) is Hint.ONE_BATCH_SIZE
    assert hint(32, 6, None) is Hint.PARTIAL_BATCH  # A Keras step whose method was not seen.
    assert hint(5, 7, KerasCall("fit", "dataset"), axis=1) is Hint.VARYING_LENGTH
    assert hint(32, None, KerasCall("predict")) is Hint.PREDICT_BATCH_SIZE
    assert hint(32, None, KerasCall("fit", "arrays")) is Hint.PARTIAL_BATCH_ARRAYS
    assert hint(5, None, KerasCall("fit", "dataset"), axis=1) is Hint.RELAXED_DIMENSION


def test_a_run_again_in_a_loop_body_of_the_same_trace_is_part_of_it():
    token = object()
    verdict = classify(RunContext.GRAPH, A, "step", True, [EarlierTrace(A, True, token)], trace=token,
                           control_flow="tf.while_loop")
    assert (verdict.kind, verdict.reason, verdict.control_flow) == (
        TraceKind.TRACE, Reason.SAME_TRACE, "tf.while_loop")
    # Another signature in the loop body is a trace of its own.
    other = classify(RunContext.GRAPH, B, "step", True, [EarlierTrace(A, True, token)], trace=token,
                         control_flow="tf.while_loop")
    assert other.reason is Reason.FIRST_TRACE


def test_variable_retrace_of_a_built_layer_blames_the_other_variables():
    built = [EarlierTrace(A, True, created_variables=False)]
    in_step = classify(RunContext.GRAPH, A, "one_step_on_data", False, built, keras_step=True)
    assert (in_step.kind, in_step.hint) == (TraceKind.VARIABLE_RETRACE, Hint.STEP_CREATED_OTHER_VARIABLES)
    in_function = classify(RunContext.GRAPH, A, "step", False, built)
    assert in_function.hint is Hint.FUNCTION_CREATED_OTHER_VARIABLES
    creating = [EarlierTrace(A, True, created_variables=True)]
    assert classify(RunContext.GRAPH, A, "step", False, creating).hint is Hint.CREATE_VARIABLES_FIRST


def test_variable_owner_reads_keras_names():
    from traceguard._core.keras_names import variable_owner

    assert [variable_owner(name) for name in (
        "adam/iteration", "adam/dense_kernel_momentum", "Adam/dense/kernel/m", "mean_absolute_error/total",
        "compile_loss/dice/variable", "dense/kernel")] == [
        "optimizer", "optimizer", "optimizer", "metric", "loss", "other"]
