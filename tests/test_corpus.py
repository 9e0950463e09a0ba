"""The issue-18 corpus in tests/programs: every program's `Expected:` block is complete and valid.

Running the programs takes minutes (tests/programs/check.py); this only reads their docstrings.
"""
import importlib.util
import os
import pathlib

import pytest

PROGRAMS_DIR = pathlib.Path(__file__).parent / "programs"
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
    assert int(expected["traces"]) >= 1
    assert isinstance(expected["fix_keywords"], list)
    if expected["cause"] != "none-expected":
        assert expected["fix_keywords"], "a program that retraces needs fix keywords"


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
    # The programs reproduce reports on TF 2.21 with Keras 3 (their `Expected:` counts were measured
    # there); other stacks trace differently.
    from traceguard import _compat

    if not _compat.IS_KERAS_3 or _compat.IS_JAX or _compat.TF_VERSION < (2, 21):
        pytest.skip("the corpus reproduces its reports on TensorFlow 2.21 with Keras 3")
    expected = check.parse_expected(program)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = check.run_mode("run", program, tmp_path, env)
    log = (tmp_path / f"{program.stem}.run.log").read_text()
    assert result["status"] == (1 if expected.get("raises") else 0), log
    verdict = check.judge(result["text"], expected, program.stem)
    assert verdict["names_cause"], (verdict, result["text"])
