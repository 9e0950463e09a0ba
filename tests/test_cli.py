"""`python -m traceguard`: help without TensorFlow, and commands without TensorFlow's start-up lines."""

import os
import pathlib
import subprocess
import sys

import pytest

from traceguard import _cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEAVY_MODULES = ("tensorflow", "jax", "keras", "tf_keras")


def python(code, *arguments, **environment):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **environment}
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run([sys.executable, "-c", code, *arguments], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("command", [[], ["demo"], ["run"], ["report"]], ids=["top", "demo", "run", "report"])
def test_help_answers_within_a_second_without_importing_the_backend(command):
    # As `python -m traceguard ... --help`, timed from before `import traceguard`.
    code = (
        "import runpy, sys, time\n"
        "start = time.perf_counter()\n"
        "sys.argv = ['traceguard', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('traceguard', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        f"print([name for name in {HEAVY_MODULES!r} if name in sys.modules], file=sys.stderr)\n"
        "print(time.perf_counter() - start, file=sys.stderr)\n"
    )
    result = python(code, *command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: python -m traceguard {' '.join(command)}".rstrip())
    imported, seconds = result.stderr.splitlines()
    assert imported == "[]"
    assert float(seconds) < 1.0


def test_every_command_takes_verbose():
    parser = _cli.build_parser()
    assert parser.parse_args(["demo", "--verbose"]).verbose is True
    assert parser.parse_args(["run", "--verbose", "script.py", "--verbose"]).arguments == ["--verbose"]
    assert parser.parse_args(["demo"]).verbose is False


STARTUP_LINES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1796114029.990968    3020 cudart_stub.cc:31] Could not find cuda drivers on your "
    "machine, GPU will not be used.\n"
    "E0000 00:00:1796114032.053826    3020 cuda_executor.cc:1228] failed call to cuInit: "
    "UNKNOWN ERROR (303)\n"
    "I0000 00:00:1796114030.070117    3020 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with "
    "the appropriate compiler flags.\n"
)


def test_startup_lines_written_to_descriptor_2_are_hidden_and_the_rest_kept(capfd):
    with _cli._startup_lines_hidden():
        os.write(2, STARTUP_LINES.encode())  # As absl writes them, from C++.
        print("UserWarning: a Python warning stays", file=sys.stderr)
        os.write(2, b"a C++ line of another kind stays\n")
    os.write(2, b"after the block\n")
    assert capfd.readouterr().err == (
        "UserWarning: a Python warning stays\na C++ line of another kind stays\nafter the block\n")


def test_startup_lines_are_shown_again_when_the_block_raises(capfd):
    with pytest.raises(ImportError), _cli._startup_lines_hidden():
        os.write(2, b"error output of the failed import\n")
        raise ImportError("no backend")
    assert capfd.readouterr().err == "error output of the failed import\n"


def test_demo_prints_no_tensorflow_startup_line_without_verbose():
    result = python("import runpy; runpy.run_module('traceguard', run_name='__main__')", "demo",
                    TF_CPP_MIN_LOG_LEVEL=None)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("traceguard demo on ")


@pytest.mark.slow  # Two more TensorFlow start-ups.
def test_verbose_demo_prints_what_importing_tensorflow_prints():
    raw = python("import tensorflow", TF_CPP_MIN_LOG_LEVEL=None).stderr
    startup = [line.split("] ", 1)[-1] for line in raw.splitlines() if _cli._STARTUP_LINE.match(line)]
    if not startup:
        pytest.skip("this TensorFlow prints no start-up line")
    result = python("import runpy; runpy.run_module('traceguard', run_name='__main__')", "demo",
                    "--verbose", TF_CPP_MIN_LOG_LEVEL=None)
    assert result.returncode == 0, result.stderr
    # The import's lines, among more: TensorFlow's first op looks for a GPU (cuInit). Their order
    # differs between releases (TF 2.16 prints "Could not find cuda drivers" before the CPU notice).
    shown = [line.split("] ", 1)[-1] for line in result.stderr.splitlines()]
    assert set(startup) <= set(shown), (startup, shown)
