"""`python -m traceguard run SCRIPT`: an unmodified script under watch(), as `python SCRIPT` runs it."""

import contextlib
import io
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import DEFAULT, keras
from helpers import RETRACING, script

import traceguard as tg
from traceguard._diagnosis import instrument as _instrument
from traceguard._diagnosis.run import run_module, run_script

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def traceguard_run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "traceguard", "run", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_run_reports_the_fit_example_partial_batch_retrace():
    result = traceguard_run("--full", "examples/fit_partial_batch.py")
    assert result.returncode == 0, result.stderr
    assert "TraceLog of layer 'projection'" in result.stdout  # The script's own output.
    report = result.stderr[result.stderr.index("traceguard report for run fit_partial_batch.py"):]
    # Keras 2 traces its train function twice (the optimizer's variables) and names the model "model".
    variable_retrace = DEFAULT.pick("", "1 variable_retrace, ")
    assert (f"Layer 'projection' (Projection, TraceAwareLayer): 1 symbolic, 1 trace, {variable_retrace}"
            "1 retrace") in report
    step = DEFAULT.pick("one_step_on_data", "train_function")
    assert f"  projection #{DEFAULT.pick(3, 4)} in {step}: inputs: dim 0 32 -> None" in report
    model = DEFAULT.pick("functional", "model")
    assert (f"Layer '{model}' (Functional, plain Keras layer): 1 trace, {variable_retrace}"
            "1 retrace") in report
    # NumPy inputs have no `drop_remainder` (#18): the fix for arrays, with the numbers.
    assert "`fit` got 70 samples in batches of 32: the last batch of 6" in report


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_run_finds_the_retrace_in_a_script_that_does_not_import_traceguard():
    assert "traceguard" not in (ROOT / "examples" / "train_loop_partial_batch.py").read_text().split(
        '"""', 2)[2]
    result = traceguard_run("--full", "examples/train_loop_partial_batch.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "train_step traced 2 times in 3 epochs\n"
    # Keras 2 builds the Sequential's Dense layers by a symbolic run, inside the watch.
    assert f"  hidden #{DEFAULT.pick(2, 3)} in train_step: inputs: dim 0 32 -> 6" in result.stderr
    symbolic = DEFAULT.pick("", "1 symbolic, ")
    assert f"Layer 'output' (Dense, plain Keras layer): {symbolic}1 trace, 1 retrace" in result.stderr


def test_run_writes_the_report_to_output_file(tmp_path):
    output = tmp_path / "report.txt"
    result = traceguard_run("--full", "--output", str(output), script(tmp_path, RETRACING))
    assert result.returncode == 0, result.stderr
    assert result.stderr.endswith(
        f"traceguard: watched 1 function and 1 layer; report written to {output}\n")
    assert "traceguard report for" not in result.stderr
    text = output.read_text()
    assert text.startswith("traceguard report for run script.py: 1 function traced 3 times: 1 trace, "
                           "1 variable_retrace, 1 retrace; 1 layer: 3 layer runs, 2 of them in 2 retraces; "
                           "0 eager layer runs\n")
    assert "  scripted #3 in function: inputs: dim 0 3 -> 5" in text


def run_in_process(path, *arguments):
    err = io.StringIO()
    code = run_script(path, list(arguments), None, err, summary=False)  # The full report.
    return code, err.getvalue()


def test_script_sees_main_argv_and_its_directory_on_the_path(tmp_path):
    (tmp_path / "sibling.py").write_text("VALUE = 'imported'\n")
    path = script(tmp_path, """
        import sys
        import sibling

        assert __name__ == "__main__"
        assert sys.argv[1:] == ["--epochs", "2"], sys.argv
        assert sibling.VALUE == "imported"
    """)
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    code, err = run_in_process(path, "--epochs", "2")
    assert code == 0, err
    assert sys.argv == saved_argv and sys.path == saved_path


@pytest.mark.parametrize("exit_call, code, printed", [
    ("sys.exit(3)", 3, None), ("sys.exit()", 0, None), ("sys.exit('bad input')", 1, "bad input"),
])
def test_exit_code_is_the_scripts(tmp_path, exit_call, code, printed):
    path = script(tmp_path, f"import sys\n{RETRACING}\n{exit_call}\n")
    result, err = run_in_process(path)
    assert result == code
    assert "traceguard report for run script.py: 1 function traced 3 times: " in err
    if printed:
        assert err.startswith(f"{printed}\n")


def test_script_exception_prints_its_traceback_then_the_report(tmp_path):
    before = {cls: cls.__dict__.get("call") for cls in _instrument.layer_classes()}
    path = script(tmp_path, f"{RETRACING}\nraise KeyError('from the script')\n")
    code, err = run_in_process(path)
    assert code == 1
    traceback_text, report = err.split("\ntraceguard report for run script.py", 1)
    assert traceback_text.startswith("Traceback (most recent call last):\n  File ")
    assert "runpy" not in traceback_text and "traceguard" not in traceback_text
    assert traceback_text.rstrip().endswith("KeyError: 'from the script'")
    assert "scripted #3 in function: inputs: dim 0 3 -> 5" in report
    assert {cls: cls.__dict__.get("call") for cls in _instrument.layer_classes()
            if cls in before} == before
    assert keras.layers.Dense.__dict__["call"] is before[keras.layers.Dense]


def test_syntax_error_is_shown_without_traceguard_frames(tmp_path):
    code, err = run_in_process(script(tmp_path, "x = (\n"))
    assert code == 1
    assert err.startswith(f'  File "{tmp_path / "script.py"}", line 1\n')
    assert "SyntaxError: '(' was never closed" in err and "runpy" not in err


def test_missing_script_is_a_usage_error(tmp_path):
    code, err = run_in_process(str(tmp_path / "missing.py"))
    assert code == 2 and err == f"traceguard run: no such file: {str(tmp_path / 'missing.py')!r}\n"


def test_run_ends_with_the_number_of_functions_and_layers_watched(tmp_path):
    body = RETRACING + 'keras.layers.Dense(2, name="eager_only")(tf.ones((3, 2)))\n'
    code, err = run_in_process(script(tmp_path, body))
    assert code == 0, err
    # A layer that ran only eagerly was watched too.
    assert err.endswith("\ntraceguard: watched 1 function and 2 layers; report above\n")


def test_run_report_puts_the_problem_first_and_full_lists_every_run(tmp_path):
    path = script(tmp_path, RETRACING)
    full, default = io.StringIO(), io.StringIO()
    assert run_script(path, [], None, full, summary=False) == 0
    assert run_script(path, [], None, default) == 0
    default_lines = default.getvalue().splitlines()
    first = default_lines.index("Problems (2), the most costly first:") + 1
    # Ranked by measured cost, so either retrace may come first.
    problems = {line[3:].split(",")[0]: index for index, line in enumerate(default_lines)
                if line[:3] in ("1. ", "2. ")}
    assert first < 15 and min(problems.values()) == first and len(problems) == 2
    variable = problems["`function`: 1 variable retrace (#2)"]
    assert default_lines[variable + 2].startswith(
        "   why: The tf.function `function` traced the same signature again")
    assert "`function`: 1 retrace (#3)" in problems
    assert "   changed: args[0]: dim 0 3 -> 5" in default.getvalue()
    # The layer's runs are folded under the function's traces; --full lists each.
    assert "Layer 'scripted'" in full.getvalue() and "Layer 'scripted'" not in default.getvalue()
    assert "   layers: 1 layer ran 1 time in it (scripted): `--full` lists each run" in default.getvalue()
    assert len(default_lines) < len(full.getvalue().splitlines())


def test_summary_of_a_50_layer_model_without_retraces_fits_on_one_screen():
    model = keras.Sequential([keras.Input((4,))] + [keras.layers.Dense(4) for _ in range(50)])
    model.compile("sgd", "mse")
    with tg.watch() as report:
        model.fit(np.ones((32, 4)), np.ones((32, 4)), batch_size=32, verbose=0)
    lines = report.summary().splitlines()
    assert len(lines) <= 24, "\n".join(lines)
    assert any("(50 layers)" in line for line in lines)


@pytest.fixture
def package(tmp_path, monkeypatch, request):
    """An importable package `pkg_<test>` in the current directory (tmp_path), forgotten afterwards."""
    name = f"pkg_{request.node.originalname}"
    directory = tmp_path / name
    directory.mkdir()
    (directory / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    yield directory
    for module in [module for module in sys.modules if module.split(".")[0] == name]:
        del sys.modules[module]


def module_in_process(module, *arguments, err=None):
    err = err or io.StringIO()
    code = run_module(module, list(arguments), None, err)
    return code, err.getvalue()


def test_run_module_reports_its_retrace_and_restores_argv_path_and_main(package):
    (package / "layers.py").write_text("from tensorflow import keras\nDense = keras.layers.Dense\n")
    (package / "train.py").write_text(textwrap.dedent("""
        import sys

        import tensorflow as tf

        from .layers import Dense

        assert __name__ == "__main__" and sys.modules["__main__"].__file__ == __file__
        assert sys.argv == [__file__, "--epochs", "2"], sys.argv
        step = tf.function(Dense(2, name="scripted"))
        step(tf.ones((3, 2)))
        step(tf.ones((5, 2)))
    """))
    saved_argv, saved_path, saved_main = list(sys.argv), list(sys.path), sys.modules["__main__"]
    code, err = module_in_process(f"{package.name}.train", "--epochs", "2")  # The default report.
    assert code == 0, err
    assert (sys.argv, sys.path, sys.modules["__main__"]) == (saved_argv, saved_path, saved_main)
    assert err.startswith(f"\ntraceguard report for run -m {package.name}.train: 1 function traced 3 times: "
                          "1 trace, 1 variable_retrace, 1 retrace; 1 layer: 3 layer runs, 2 of them in 2 "
                          "retraces; 0 eager layer runs\n")
    assert "   changed: args[0]: dim 0 3 -> 5" in err


def test_run_module_finds_it_from_the_current_directory_first(package):
    (package / "__main__.py").write_text("import sys\nprint(sys.path[0])\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code, err = module_in_process(package.name)  # A package runs its __main__.
    assert code == 0, err
    assert out.getvalue() == f"{os.getcwd()}\n"


@pytest.mark.parametrize("name, message", [
    ("{package}.missing", "No module named {package}.missing"),
    ("{package}", "No module named {package}.__main__; '{package}' is a package and cannot be "
                  "directly executed"),
    ("no_such_package.train", "Error while finding module specification for 'no_such_package.train' "
                              "(ModuleNotFoundError: No module named 'no_such_package')"),
])
def test_module_that_cannot_be_found_is_a_usage_error_naming_it(package, name, message):
    name, message = name.format(package=package.name), message.format(package=package.name)
    code, err = module_in_process(name)
    assert code == 2
    assert err == f"traceguard run -m {name}: {message}\n"


def test_module_exception_prints_its_traceback_from_its_own_frames(package):
    (package / "train.py").write_text("import missing_dependency_of_train\n")
    code, err = module_in_process(f"{package.name}.train")
    assert code == 1
    traceback_text, report = err.split(f"\ntraceguard report for run -m {package.name}.train", 1)
    assert traceback_text.startswith(f'Traceback (most recent call last):\n  File "{package / "train.py"}", '
                                     "line 1, in <module>\n")
    assert traceback_text.rstrip().endswith(
        "ModuleNotFoundError: No module named 'missing_dependency_of_train'")
    assert "runpy" not in traceback_text and "traceguard" not in traceback_text
