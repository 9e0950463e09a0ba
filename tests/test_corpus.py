"""The issue-18 corpus in tests/programs: every program's `Expected:` block is complete and valid.

Running the programs takes minutes (tests/programs/check.py); this only reads their docstrings.
"""
import importlib.util
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
