"""`traceguard` and `python -m traceguard`: help without TensorFlow, commands without its start-up lines."""

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from traceguard import _cli

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
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


def console_script():
    """The `traceguard` command installed with this Python, as pip made it from the entry point."""
    scripts = pathlib.Path(sysconfig.get_path("scripts"))
    script = scripts / ("traceguard.exe" if os.name == "nt" else "traceguard")
    if script.exists():
        return script
    declared = importlib.metadata.entry_points(group="console_scripts", name="traceguard")
    if not declared:  # An install made before the entry point existed; CI installs afresh.
        pytest.skip("the installed keras-traceguard predates the `traceguard` command: "
                    "reinstall it (pip install -e .)")
    pytest.fail(f"keras-traceguard declares the console script {next(iter(declared)).value}, "
                f"but {scripts} has no `traceguard`")


def traceguard_command(*arguments, cwd=ROOT, **environment):
    # This checkout's code, whichever copy of traceguard the command was installed from.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", **environment}
    return subprocess.run([str(console_script()), *arguments], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def imported_modules(importtime_log):
    """The top-level names of the modules in `python -X importtime`'s log."""
    # "import time: self [us] | cumulative | imported package", the name indented by depth.
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in importtime_log.splitlines()
            if line.startswith("import time:") and "imported package" not in line}


@pytest.mark.parametrize("command", [[], ["run"]], ids=["top", "run"])
def test_console_script_help_names_the_command_and_imports_no_backend(command):
    result = traceguard_command(*command, "--help", PYTHONPROFILEIMPORTTIME="1")
    assert result.returncode == 0, result.stderr
    imported = imported_modules(result.stderr)
    assert "traceguard" in imported
    assert imported.isdisjoint(HEAVY_MODULES), imported & set(HEAVY_MODULES)
    usage = ("usage: traceguard [-h] COMMAND ...\n" if not command else
             "usage: traceguard run [options] SCRIPT [ARGS...]\n"
             "       traceguard run [options] -m MODULE [ARGS...]\n")
    assert result.stdout.startswith(usage)
    if command:
        help_text = " ".join(result.stdout.split())
        assert ("-m run MODULE (a dotted name, found on sys.path with the current directory first; a "
                "package runs its __main__) as `python -m MODULE` would: as __main__, with sys.argv[0] "
                "its file, its package's relative imports working.") in help_text


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_console_script_runs_a_module_of_a_package_as_python_m_does(tmp_path):
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text("EPOCHS = 'from a relative import'\n")
    (package / "train.py").write_text(textwrap.dedent("""
        import sys

        from .settings import EPOCHS

        print(__name__, __spec__.name, sys.argv, EPOCHS, sys.modules["__main__"].__file__ == __file__)
        sys.exit(int(sys.argv[-1]))
    """))
    # From the package's directory, as `python -m trainer.train` is run: the console script's
    # own sys.path[0] is its bin/ directory.
    result = traceguard_command("run", "--summary", "-m", "trainer.train", "--epochs", "3", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    argv = [str(package / "train.py"), "--epochs", "3"]
    assert result.stdout == f"__main__ trainer.train {argv} from a relative import True\n"
    assert result.stderr.startswith("\ntraceguard report for run -m trainer.train: 0 functions traced; "
                                    "0 layers:")
    assert result.stderr.endswith("traceguard: watched 0 functions and 0 layers; report above\n")


def test_run_without_a_script_or_module_is_a_usage_error(capsys):
    for arguments, message in ((["run"], "expects a SCRIPT, or -m MODULE"),
                               (["run", "--summary", "-m"], "-m expects a MODULE")):
        with pytest.raises(SystemExit) as exited:
            _cli.main(arguments)
        assert exited.value.code == 2
        assert capsys.readouterr().err.endswith(f"traceguard run: error: {message}\n")


def test_options_after_the_script_or_module_belong_to_it():
    parser = _cli.build_parser()
    module = parser.parse_args(["run", "--full", "-m", "trainer.train", "-m", "x", "--full"])
    assert (module.module, module.script, module.arguments, module.full) == (
        True, "trainer.train", ["-m", "x", "--full"], True)
    # `--summary`, the default report now, is still accepted.
    assert parser.parse_args(["run", "--summary", "train.py"]).full is False
    script = parser.parse_args(["run", "train.py", "-m", "x"])
    assert (script.module, script.script, script.arguments) == (False, "train.py", ["-m", "x"])


@pytest.mark.parametrize("command", ["run", "demo", "report", "compare"])
def test_an_unknown_option_of_a_command_prints_that_command_usage(command, capsys):
    with pytest.raises(SystemExit) as exited:
        _cli.main([command, "--bogus", "x.jsonl"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: traceguard {command} ")
    unknown = "--bogus x.jsonl" if command == "demo" else "--bogus"  # demo takes no FILE.
    assert err.endswith(f"traceguard {command}: error: unrecognized arguments: {unknown}\n")


def test_run_of_a_directory_says_it_is_one_and_what_run_accepts(tmp_path, capsys):
    assert _cli.main(["run", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"traceguard run: {str(tmp_path)!r} is a directory; SCRIPT is a Python file (train.py), "
        "or run a package with -m MODULE (its __main__.py).\n")


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_file_that_cannot_be_opened_is_one_line_and_exit_2_for_report_and_compare(
        command, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    cases = [(tmp_path, f"{tmp_path}: a directory; give the trace files in it (written by "
                        "--trace-file or trace_file=...)."),
             (tmp_path / "missing.jsonl", f"{tmp_path / 'missing.jsonl'}: no such file."),
             (bad, f"{bad}:1: not a JSON record")]
    for path, message in cases:
        assert _cli.main([command, str(path), str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"traceguard {command}: {message}")
        assert err.count("\n") == 1


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_demo_keras_2_without_tf_keras_names_an_install_the_index_serves():
    from traceguard import _compat

    if not _compat.IS_KERAS_3:
        pytest.skip("tf.keras is Keras 2 here: the demo runs")
    code = ("import sys; sys.modules['tf_keras'] = None\n"  # As if tf_keras were not installed.
            "from traceguard._cli import main\n"
            "main(['demo', '--keras', '2'])\n")
    result = python(code, TF_CPP_MIN_LOG_LEVEL="3")
    assert result.returncode == 2
    minor = "{}.{}".format(*_compat.TF_VERSION)
    assert result.stderr.splitlines()[-1].startswith(
        "traceguard: error: --keras 2: traceguard's Keras 2 support needs Keras 2: install `tf_keras` "
        f"(pip install 'tf_keras=={minor}.*')")
    assert "keras-traceguard" not in result.stderr


@pytest.mark.slow  # A Python process that imports TensorFlow.
def test_demo_on_tensorflow_without_keras_runs_a_plain_tf_function():
    from traceguard import _compat

    if _compat.TF_VERSION < (2, 16) or os.environ.get("TF_USE_LEGACY_KERAS"):
        pytest.skip("TensorFlow >= 2.16 routes tf.keras to the `keras` package, made absent here")
    code = ("import sys; sys.modules['keras'] = None\n"  # As if Keras were not installed.
            "from traceguard._cli import main\n"
            "sys.exit(main(['demo']))\n")
    result = python(code, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=None)
    assert result.returncode == 0, result.stderr
    import tensorflow as tf

    assert result.stdout.startswith(f"traceguard demo on TensorFlow {tf.__version__}, without Keras: "
                                    "plain tf.function\n")
    assert "1 function traced 2 times: 1 trace, 1 retrace" in result.stdout
    assert "1. `step`: 1 retrace (#2)" in result.stdout
    assert "changed: inputs: dim 0 8 -> 5" in result.stdout
    assert result.stderr == ""  # AutoGraph found the program's source: no warning.
