"""The words of reasons and hints, pinned: users read them, and tests elsewhere match them."""

from traceguard._core.classify import EarlierTrace, Hint, Reason, RunContext, Verdict, classify_run
from traceguard._core.events import TraceKind
from traceguard._core.signature import spec_of
from traceguard._reports.messages import hint_text, reason_text

A = {"inputs": spec_of((1, 2))}
B = {"inputs": spec_of((1, 3))}


def test_every_hint_has_words_on_both_backends():
    for hint in Hint:
        for backend in ("tensorflow", "jax"):
            verdict = Verdict(TraceKind.RETRACE, (), Reason.SIGNATURE_CHANGED, hint, "f", backend, "k")
            assert hint_text(verdict).endswith(".")


def test_reasons_name_the_function_and_the_tracer():
    first = classify_run(RunContext.GRAPH, A, "step", True, [])
    assert reason_text(first) == ("First trace of tf.function `step` for this signature: TensorFlow "
                                  "ran the Python body to build a graph.")
    on_jax = classify_run(RunContext.GRAPH, A, "step", True, [], backend="jax")
    assert reason_text(on_jax) == ("First trace of jax.jit `step` for this signature: JAX ran the "
                                   "Python body to build a jaxpr.")
    changed = classify_run(RunContext.GRAPH, B, None, None, [EarlierTrace(A, True)])
    assert reason_text(changed) == "The graph traced again because the signature changed: inputs[1]: 2 -> 3."
    symbolic = classify_run(RunContext.SYMBOLIC, A, "function", None, [])
    assert reason_text(symbolic) == ("Keras ran `call` on symbolic inputs to build the layer or infer its "
                                     "output shapes inside tf.function `function`; no graph is kept.")


def test_python_value_hint_names_the_argument_and_the_backend_s_array():
    verdict = classify_run(RunContext.GRAPH, {"k": spec_of(2)}, "f", False,
                           [EarlierTrace({"k": spec_of(1)}, True)])
    assert hint_text(verdict) == (
        "Each new Python value of `k` is a new signature: pass it as a tensor "
        "(e.g. `tf.constant(...)`) so the graph takes it as an input, or keep it fixed.")
    on_jax = classify_run(RunContext.GRAPH, {"k": spec_of(2)}, "f", False,
                          [EarlierTrace({"k": spec_of(1)}, True)], backend="jax")
    assert "`jnp.asarray(...)`" in hint_text(on_jax)


def test_expected_runs_have_no_hint():
    for verdict in (classify_run(RunContext.EAGER, A, None, None, []),
                    classify_run(RunContext.SAVE, A, "f", None, []),
                    classify_run(RunContext.GRAPH, A, "f", True, [])):
        assert hint_text(verdict) is None
