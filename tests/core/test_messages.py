"""The words of reasons and hints, pinned: users read them, and tests elsewhere match them."""

from helpers import classify, python_spec, tensor

from traceguard._core.changes import Aspect, Change
from traceguard._core.events import TraceKind
from traceguard._core.specs import ArgumentPath
from traceguard._core.verdicts import EarlierTrace, Hint, Reason, RunContext, Verdict
from traceguard._reports.messages import hint_text, reason_text

A = {"inputs": python_spec((1, 2))}
B = {"inputs": python_spec((1, 3))}


def test_every_hint_has_words_on_every_backend():
    changes = (Change(ArgumentPath("k"), Aspect.DIM, 2, 3, axis=1),)
    for hint in Hint:
        for backend in ("tensorflow", "jax", "torch"):
            verdict = Verdict(TraceKind.RETRACE, changes, Reason.SIGNATURE_CHANGED, hint, "f", backend, "k")
            assert hint_text(verdict).endswith(".")


def test_reasons_name_the_function_and_the_tracer():
    first = classify(RunContext.GRAPH, A, "step", True, [])
    assert reason_text(first) == ("First trace of tf.function `step` for this signature: TensorFlow "
                                  "ran the Python body to build a graph.")
    on_jax = classify(RunContext.GRAPH, A, "step", True, [], backend="jax")
    assert reason_text(on_jax) == ("First trace of jax.jit `step` for this signature: JAX ran the "
                                   "Python body to build a jaxpr.")
    changed = classify(RunContext.GRAPH, B, None, None, [EarlierTrace(A, True)])
    assert reason_text(changed) == "The graph traced again because the signature changed: inputs[1]: 2 -> 3."
    symbolic = classify(RunContext.SYMBOLIC, A, "function", None, [])
    assert reason_text(symbolic) == ("Keras ran `call` on symbolic inputs to build the layer or infer its "
                                     "output shapes inside tf.function `function`; no graph is kept.")


def test_python_value_hint_names_the_argument_and_the_backend_s_array():
    verdict = classify(RunContext.GRAPH, {"k": python_spec(2)}, "f", False,
                           [EarlierTrace({"k": python_spec(1)}, True)])
    assert hint_text(verdict) == (
        "Each new Python value of `k` is a new signature: pass it as a tensor "
        "(e.g. `tf.constant(...)`) so the graph takes it as an input, or keep it fixed.")
    on_jax = classify(RunContext.GRAPH, {"k": python_spec(2)}, "f", False,
                          [EarlierTrace({"k": python_spec(1)}, True)], backend="jax")
    assert "`jnp.asarray(...)`" in hint_text(on_jax)


def test_expected_runs_have_no_hint():
    for verdict in (classify(RunContext.EAGER, A, None, None, []),
                    classify(RunContext.SAVE, A, "f", None, []),
                    classify(RunContext.GRAPH, A, "f", True, [])):
        assert hint_text(verdict) is None


def test_partial_batch_of_arrays_gives_the_numbers_and_no_drop_remainder():
    from traceguard._core.keras_names import KerasCall

    old, new = {"x": tensor(32, 8)}, {"x": tensor(6, 8)}
    verdict = classify(RunContext.GRAPH, new, "train_function", False, [EarlierTrace(old, True)],
                           keras_step=True, keras_call=KerasCall("fit", "arrays", 70, 32))
    text = hint_text(verdict)
    assert text.startswith("`fit` got 70 samples in batches of 32: the last batch of 6 has a new shape")
    assert "drop_remainder=True" not in text and "trim `x` and `y`" in text
    in_predict = classify(RunContext.GRAPH, new, "predict_function", False, [EarlierTrace(old, True)],
                              keras_step=True, keras_call=KerasCall("predict", "arrays", 70, 32))
    assert "predict in batches of one size" in hint_text(in_predict) and "drop" not in hint_text(in_predict)


def test_varying_length_hint_pads_in_a_keras_step_and_relaxes_in_a_user_function():
    from traceguard._core.keras_names import KerasCall

    old, new = {"x": tensor(8, 5)}, {"x": tensor(8, 7)}
    in_fit = classify(RunContext.GRAPH, new, "one_step_on_data", False, [EarlierTrace(old, True)],
                          keras_step=True, keras_call=KerasCall("fit", "dataset"))
    assert hint_text(in_fit).startswith("Dimension 1 of `x` (e.g. a sequence length) varies")
    assert "bucket_by_sequence_length" in hint_text(in_fit)
    in_user_function = classify(RunContext.GRAPH, new, "step", False, [EarlierTrace(old, True)])
    assert "`input_signature` with None for that dimension" in hint_text(in_user_function)


# --- forecasts (traceguard.forecast) ---------------------------------------------------------
def test_forecast_words_name_the_batches_and_the_variables_owners():
    from traceguard._core.forecasts import ForecastReason, ForeseenTrace, Outside, Unforeseeable
    from traceguard._reports.forecast import _OUTSIDE, hint_words, reason_words

    batches = {"samples": "70", "batch_size": "32", "last_batch": "6"}
    first = ForeseenTrace("train_function", "train", "trace", {}, ForecastReason.FIRST_TRACE, batches)
    assert reason_words(first) == (
        "The step function's first call traces it. Its batch dimension is None: 70 samples in batches "
        "of 32 leave a last batch of 6, and Keras's dataset of the arrays gives every batch that one "
        "spec, so a partial batch does not retrace.")
    assert hint_words(first) is None
    owners = {"optimizer": "Adam", "metrics": "compiled metrics"}
    creating = ForeseenTrace("train_function", "train", "variable_retrace", {},
                             ForecastReason.VARIABLE_CREATION, owners)
    assert reason_words(creating) == (
        "Its first trace creates variables (the Adam optimizer's slot variables; the compiled metrics' "
        "state), so TensorFlow traces it again without creating them.")
    assert hint_words(creating) == (
        "Before the call, build the optimizer: `model.optimizer.build(model.trainable_variables)`; "
        "the metrics' and losses' state is a one-time cost.")
    assert set(_OUTSIDE) == set(Unforeseeable)
    assert all(words.format(detail="x").endswith(".") for words in _OUTSIDE.values())
    assert Outside(Unforeseeable.BACKEND, "Keras 3 on JAX").detail == "Keras 3 on JAX"


def test_no_retrace_failure_reads_as_a_short_report():
    from traceguard._reports.guards import format_guard_failure

    text = format_guard_failure(
        "`train_step`", None, "inside the `traceguard.no_retrace()` block",
        signature={"x": "float32[6,4]"}, changes=["x: dim 0 32 -> 6"], reason="It traced again.",
        hint="Drop the partial batch.", call_site="train.py:12", layers=["'dense' (retrace)"])
    assert text == (
        "`train_step` retraced inside the `traceguard.no_retrace()` block.\n"
        "   called at: train.py:12\n"
        "   signature: x=float32[6,4]\n"
        "   changed: x: dim 0 32 -> 6\n"
        "   why: It traced again.\n"
        "   fix: Drop the partial batch.\n"
        "   layers traced in it: 'dense' (retrace)")


def test_a_retrace_of_an_unrecorded_warm_up_says_what_cannot_be_known():
    from traceguard._reports.guards import format_guard_failure, unrecorded_retrace_reason

    reason = unrecorded_retrace_reason("tf.function", "scale", 2)
    text = format_guard_failure(
        "`scale`", None, "during the test (`@pytest.mark.no_retrace`)", signature={"x": "float32[5]"},
        changes=[], reason=reason, hint=None, call_site="test_scale.py:9", baseline_recorded=False)
    assert text == (
        "`scale` retraced during the test (`@pytest.mark.no_retrace`).\n"
        "   called at: test_scale.py:9\n"
        "   signature: x=float32[5]\n"
        "   changed: unknown: traceguard did not record the function's earlier traces, so it knows no "
        "earlier\n"
        "            signature to compare with. Run the warm-up inside `traceguard.watch()` to see what\n"
        "            changed.\n"
        "   why: The tf.function `scale` traced again for a signature its cache did not hold; it had traced "
        "2\n"
        "        times before traceguard recorded it, so its first trace seen here is a retrace.")


def test_snapshot_difference_names_the_count_the_kind_and_what_changed():
    from traceguard._reports.snapshot_file import SnapshotTrace, describe_changes

    old = {"layer dense in train_step": [SnapshotTrace("trace", "inputs=float32[32,4]")],
           "function gone": [SnapshotTrace("trace", "x=1")]}
    new = {"layer dense in train_step": [SnapshotTrace("trace", "inputs=float32[32,4]"),
                                         SnapshotTrace("retrace", "inputs=float32[6,4]",
                                                       ("inputs: dim 0 32 -> 6",))],
           "function f": [SnapshotTrace("trace", "x=float32[3]")]}
    assert describe_changes(old, new) == [
        "layer 'dense' in `train_step`: 1 -> 2 traces: retrace, inputs: dim 0 32 -> 6",
        "function `f`: 0 -> 1 trace: trace, x=float32[3]",
        "function `gone`: 1 -> 0 traces: no longer trace (x=1)",
    ]
    assert describe_changes(old, old) == []


def test_a_tensorflow_retrace_with_an_unchanged_key_says_so_and_what_else_tensorflow_keys_on():
    verdict = Verdict(TraceKind.RETRACE, (), Reason.SAME_ARGUMENTS, Hint.KEEP_OUTSIDE_VALUES_FIXED, "step",
                      "tensorflow", of_function=True)
    text = reason_text(verdict)
    assert text.startswith("The tf.function `step` traced again, and its cache key shows no difference "
                           "from its closest earlier trace kept")
    assert "function context" in text and "captures by reference" in text
    assert "is not part of the key: a new value does not retrace" in text
    assert "something outside its arguments changed" not in text


def test_a_new_function_object_s_trace_is_worded_as_a_first_trace_of_the_code_made_anew():
    verdict = Verdict(TraceKind.TRACE, (), Reason.NEW_FUNCTION_OBJECT, Hint.CREATE_FUNCTION_ONCE, "step",
                      "tensorflow", objects=3, of_function=True)
    assert reason_text(verdict).startswith("First trace of tf.function `step` as a new function object "
                                           "(#3 so far) from the same code as earlier ones: not a retrace")
