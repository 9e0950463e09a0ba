"""The corpus in tests/programs (issues 18 and 31): every program's `Expected:` block is complete and valid.

Running the programs takes minutes (tests/programs/check.py); the quick tests only read their
docstrings and judge hand-made trace files. The slow test runs each program whose block is not
`status: open` on its own backend's stack.
"""
import importlib.util
import json
import os
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

PROGRAMS_DIR = pathlib.Path(__file__).parent.parent / "programs"
PROGRAMS = sorted(p for p in PROGRAMS_DIR.glob("*.py") if not p.name.startswith("_") and p.name != "check.py")


def _load_check():
    spec = importlib.util.spec_from_file_location("corpus_check", PROGRAMS_DIR / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load_check()


def test_corpus_has_the_programs_the_readme_lists():
    readme = (PROGRAMS_DIR / "README.md").read_text()
    assert len(PROGRAMS) >= 20
    for program in PROGRAMS:
        assert f"`{program.name}`" in readme, program.name


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_expected_block_is_valid(program):
    expected = check.parse_expected(program)
    assert expected["cause"] in check.CAUSES
    assert all(url.startswith("https://") for url in expected["sources"])
    assert expected["functions"] and all(expected["functions"])
    # A negative control may expect no trace at all (Keras on JAX run eagerly: nothing is jitted).
    assert int(expected["traces"]) >= (0 if expected["cause"] == "none-expected" else 1)
    assert isinstance(expected["fix_keywords"], list)
    if expected["cause"] != "none-expected":
        assert expected["fix_keywords"], "a program that retraces needs fix keywords"
    assert expected["backend"] in check.BACKENDS
    if expected["cause"] == "none-expected" and check.has_structured_keys(expected):
        assert expected["kinds"] == ["trace"] * int(expected["traces"])
    if expected["backend"] in ("jax", "torch"):
        assert check.has_structured_keys(expected), "a JAX or torch block needs `kinds:` or `changes:`"


def test_the_issue_31_reports_have_the_required_mix():
    # At least 16 reports; JAX >= 6, plain tf.function >= 5, Keras 3 on TensorFlow >= 2, and >= 3
    # where nothing retraces. Each has structured expectations (kinds, changes), which the 28
    # programs before them have not.
    blocks = [check.parse_expected(p) for p in PROGRAMS]
    new = [b for b in blocks if check.has_structured_keys(b)]
    jax_blocks = [b for b in new if b["backend"] == "jax"]
    tensorflow_blocks = [b for b in new if b["backend"] == "tensorflow"]
    keras_steps = [b for b in tensorflow_blocks
                   if {"one_step_on_data", "train_function"} & set(b["functions"])]
    quiet = [b for b in new if b["cause"] == "none-expected"]
    assert len(new) >= 16
    assert len(jax_blocks) >= 6
    assert len(tensorflow_blocks) - len(keras_steps) >= 5
    assert len(keras_steps) >= 2
    assert len(quiet) >= 3


def test_held_out_set_3_has_the_mix_issue_38_asks_for():
    # Issue #38's discipline: at least 12 reports none of the others covers, at least half JAX or
    # Keras on JAX, at least 3 where nothing retraces although the user thought so.
    blocks = [check.parse_expected(p) for p in PROGRAMS]
    held_out = [b for b in blocks if b.get("set") == "heldout3"]
    assert len(held_out) >= 12
    assert sum(b["backend"] == "jax" for b in held_out) * 2 >= len(held_out)
    assert sum(b["cause"] == "none-expected" for b in held_out) >= 3
    assert all(check.has_structured_keys(b) for b in held_out)


def test_held_out_set_4_has_the_mix_issue_39_asks_for():
    # Issue #39's hidden suite: 8-12 torch reports none of the others covers, some of Keras on torch,
    # about a third where nothing recompiles or nothing is to be fixed.
    blocks = [check.parse_expected(p) for p in PROGRAMS]
    held_out = [b for b in blocks if b.get("set") == "heldout4"]
    assert 8 <= len(held_out) <= 12
    assert all(b["backend"] == "torch" and check.has_structured_keys(b) for b in held_out)
    assert sum(b["cause"] == "none-expected" for b in held_out) >= 3
    assert sum(any("keras" in url for url in b["sources"]) for b in held_out) >= 1


@pytest.mark.parametrize("key, value, message", [
    ("backend", "mxnet", "`backend:` expects one of tensorflow, jax, torch. Received: backend='mxnet'"),
    ("status", "flaky", "`status:` expects one of open"),
    ("set", "heldout9", "`set:` expects one of heldout3, heldout4"),
    ("kinds", '["trace", "recompile"]', "`kinds:` expects a JSON list of trace, retrace"),
    ("kinds", '["trace"]', "`kinds:` lists 1 traces but `traces:` says 2"),
    ("changes", '[{"argument": "x", "aspect": "colour"}]', "`changes:` entry 0 expects"),
    ("changes", '["*"]', "`changes:` entry 0 expects"),
    ("changes", '[{"aspect": "dim"}, {"aspect": "dim"}]', "`changes:` lists 2 retraces but `traces:` says 2"),
])
def test_parse_expected_rejects_bad_structured_keys(tmp_path, key, value, message):
    program = tmp_path / "bad.py"
    program.write_text('"""Summary.\n\nSource:\n  https://example.org/x\n\nExpected:\n  function: f\n'
                       '  cause: dtype\n  changed: "x: dtype"\n  fix: none\n  fix_keywords: ["dtype"]\n'
                       f'  traces: 2\n  {key}: {value}\n"""\n')
    with pytest.raises(ValueError, match=re.escape(message)):
        check.parse_expected(program)


def _trace_file(tmp_path, backend, traces):
    """A trace file with a header and one function_trace record per (kind, change_fields) pair."""
    lines = [{"type": "header", "schema": "traceguard.trace-file", "version": 1, "backend": backend}]
    for serial, (kind, fields) in enumerate(traces, start=1):
        lines.append({"type": "function_trace", "qualname": "A.f", "key": "A.f (x.py:3)",
                      "event": {"serial": serial, "kind": kind, "function": "A.f"},
                      "change_fields": fields})
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{\"type\": \"end")  # A cut last line.
    return check.read_trace_records(path)


def _block(**keys):
    expected = {"functions": ["f"], "backend": "jax", "traces": "3", "cause": "weak-type"}
    expected.update(keys)
    return expected


def test_judge_trace_file_checks_backend_count_kinds_and_each_retraces_change(tmp_path):
    weak = {"argument": "lr", "aspect": "weak_type", "old": "f32[]", "new": "f32[]", "axis": None}
    records = _trace_file(tmp_path, "jax", [("trace", []), ("retrace", [weak]), ("retrace", [dict(weak)])])
    expected = _block(kinds=["trace", "retrace", "retrace"],
                      changes=[{"argument": "lr | rate", "aspect": "weak_type"}, "*"])
    verdict = check.judge_trace_file(records, expected)
    assert verdict["structured_ok"] and verdict["recorded_kinds"] == ["trace", "retrace", "retrace"]
    assert not check.judge_trace_file(records, dict(expected, backend="tensorflow"))["structured_ok"]
    assert not check.judge_trace_file(records, dict(expected, traces="2"))["traces_ok"]
    dtype_changes = [{"argument": "lr", "aspect": "dtype"}, "*"]
    dtype = check.judge_trace_file(records, dict(expected, changes=dtype_changes))
    assert [m["trace"] for m in dtype["changes_missed"]] == [2, 3] and not dtype["structured_ok"]


def test_judge_trace_file_reads_the_parameter_and_axis_of_a_nested_change(tmp_path):
    nested = {"argument": "inputs['ids'][0]", "aspect": "dim", "old": 3, "new": 5, "axis": 1}
    records = _trace_file(tmp_path, "tensorflow", [("trace", []), ("retrace", [None, nested])])
    expected = _block(backend="tensorflow", traces="2",
                      changes=[{"argument": "inputs", "aspect": "dim", "axis": 1}])
    assert check.judge_trace_file(records, expected)["structured_ok"]
    wrong_axis = dict(expected, changes=[{"argument": "inputs", "aspect": "dim", "axis": 0}])
    assert not check.judge_trace_file(records, wrong_axis)["changes_ok"]


def test_judge_trace_file_finds_no_retrace_in_a_missing_file(tmp_path):
    records = check.read_trace_records(tmp_path / "absent.jsonl")
    verdict = check.judge_trace_file(records, _block(traces="1", kinds=["trace"]))
    assert records == [] and not verdict["structured_ok"] and verdict["recorded_kinds"] == []


def test_parse_expected_rejects_an_unknown_cause(tmp_path):
    program = tmp_path / "bad.py"
    program.write_text('"""Summary.\n\nSource:\n  https://example.org/x\n\nExpected:\n  function: f\n'
                       '  cause: gremlins\n  changed: "x: value"\n  fix: none\n"""\n')
    with pytest.raises(ValueError, match="`cause:` expects one of .*Received: cause=.gremlins."):
        check.parse_expected(program)


def test_judge_needs_the_enclosing_functions_argument():
    expected = check.parse_expected(PROGRAMS_DIR / "python_int_epoch.py")
    named = check.judge("retrace in train_step: epoch: 0 -> 1\n fix: pass it as a tensor", expected, "x.py")
    layer_only = check.judge("retrace in train_step: no argument of the layer changed\n"
                             " fix: pass values as tensors", expected, "x.py")
    assert named["names_cause"]
    assert not layer_only["names_cause"] and layer_only["changed"] is False


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS, ids=[program.stem for program in PROGRAMS])
def test_report_names_the_established_cause(program, tmp_path):
    # The programs reproduce reports on TF 2.21 with Keras 3, on jax 0.10 or torch 2.14 with Keras 3 (their
    # `Expected:` counts were measured there); other stacks trace differently. A block with
    # `status: open` is a report the diagnosis does not pass yet: check.py runs it, this
    # test does not, until the diagnosis lands and the block drops `status: open`.
    from traceguard import _compat

    expected = check.parse_expected(program)
    if expected.get("status") == "open":
        pytest.skip("status: open (the diagnosis does not pass yet): run by tests/programs/check.py only")
    if expected["backend"] == "jax":
        if not _compat.IS_JAX:
            pytest.skip("a JAX program: runs on the jax stack")
    elif expected["backend"] == "torch":
        if not _compat.IS_TORCH:
            pytest.skip("a torch program (issue #39): runs on the torch stack")
    elif not _compat.IS_KERAS_3 or _compat.IS_JAX or _compat.IS_TORCH or _compat.TF_VERSION < (2, 21):
        pytest.skip("the corpus reproduces its TensorFlow reports on TensorFlow 2.21 with Keras 3")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = check.run_mode("run", program, tmp_path, env, expected=expected)
    log = (tmp_path / f"{program.stem}.run.log").read_text()
    assert result["status"] == (1 if expected.get("raises") else 0), log
    verdict = check.judge_run(result, expected, program.stem)
    assert verdict["names_cause"], verdict
