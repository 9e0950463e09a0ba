"""The command line: `traceguard demo [--keras {2,3}]`, `run SCRIPT | -m MODULE`, `report FILE...`
and `compare FILE...`.

The same parser serves the `traceguard` console script (setup.cfg's entry point,
`main()`) and `python -m traceguard` (`__main__.py`, which names itself so in the
usage lines).

Parsing imports nothing heavy, so `--help` answers at once. `demo` and `run`
import the backend (TensorFlow or JAX) through `_quiet_backend_import()`, which
hides TensorFlow's C++ start-up lines unless `--verbose` is given; `report` and
`compare` read trace files without importing either.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence

# TensorFlow's C++ start-up lines: absl's notice that logging is not initialised yet, then
# glog-style lines ("I0000 00:00:1796114029.990968 3020 cudart_stub.cc:31] Could not find
# cuda drivers ...", "E0000 ... cuInit: UNKNOWN ERROR (303)") and cpu_feature_guard's
# second line. absl writes them to file descriptor 2 before TF_CPP_MIN_LOG_LEVEL applies.
_STARTUP_LINE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|[IWEF]\d{4} \d\d:\d\d:[\d.]+ +\d+ \S+:\d+\] "
    r"|To enable the following instructions: .* rebuild TensorFlow with the appropriate compiler flags\.")


def build_parser(prog: str = "traceguard") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="See, explain and control when Keras and TensorFlow run a layer's `call`.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's C++ start-up lines (absl, CUDA), hidden by default")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", parents=[common],
                               help="run the 'why does tf.function trace my layer twice?' "
                               "layer and explain every run of its body")
    demo.add_argument("--keras", type=int, choices=(2, 3), default=None,
                      help="run on Keras 2 (tf_keras, or tf.keras on TensorFlow <= 2.15) or "
                      "Keras 3; default: the Keras that tf.keras is")
    run = commands.add_parser(
        "run", parents=[common], help="run a Python script, or a module with -m, under "
        "traceguard.watch() and report every traced function and every Keras layer's body runs "
        "when it ends",
        usage=f"{prog} run [options] SCRIPT [ARGS...]\n       {prog} run [options] -m MODULE [ARGS...]",
        description="Run SCRIPT as `python SCRIPT ARGS...` would, or with -m the module MODULE as "
        "`python -m MODULE ARGS...` would, recording every trace of every tf.function (and Keras "
        "step, or jax.jit) and every run of every Keras layer's `call` body, and print the report "
        "to stderr when it ends (also when it raises), then one line saying how many functions and "
        "layers were watched and where the report is. The exit code is the script's; 2 for a "
        "script or module that cannot be found.")
    run.add_argument("-m", dest="module", action="store_true", help="run MODULE (a dotted name, found "
                     "on sys.path with the current directory first; a package runs its __main__) as "
                     "`python -m MODULE` would: as __main__, with sys.argv[0] its file, its package's "
                     "relative imports working. Options for traceguard come before -m; everything "
                     "after MODULE goes to the module")
    run.add_argument("--output", metavar="FILE", help="write the report to FILE instead of stderr")
    run.add_argument("--full", action="store_true", help="report every function trace and every "
                     "layer run with its reason, instead of the problems and the tables")
    run.add_argument("--summary", action="store_true", help=argparse.SUPPRESS)  # The default now.
    run.add_argument("--html", metavar="FILE", help="also write the report as a self-contained HTML "
                     "file: a timeline of every layer's body runs, then tables")
    run.add_argument("--verify-fixes", action="store_true", help="check each fix-it (the input_signature "
                     "or tensor argument that stops a tf.function's retraces) by replaying its recorded "
                     "signatures as zero tensors against copies of the function; runs them again")
    run.add_argument("--trace-file", metavar="FILE", help="also write every record to FILE as it "
                     "happens (JSON Lines; read it with `traceguard report FILE`); FILE may "
                     "hold {worker}, {task_type}, {task_index}, {process_index}, {pid} or {host}, "
                     "filled when it opens, so every worker of a job can run the same command")
    run.add_argument("--trace-file-label", metavar="LABEL", help="how reports name this process in "
                     "the trace file; default: the worker in a tf.distribute (TF_CONFIG) or "
                     "jax.distributed job (worker-1, process-1), else HOST:PID")
    run.add_argument("script", metavar="SCRIPT", nargs="?",
                     help="the Python script to run; with -m, the module")
    run.add_argument("arguments", metavar="ARGS", nargs=argparse.REMAINDER,
                     help="arguments for the script or module")
    report = commands.add_parser(
        "report", help="render the reports of trace files written by `run --trace-file`, "
        "`watch(trace_file=...)` or `TraceMonitor(trace_file=...)`, without TensorFlow",
        description="Read one or more trace files (one per process or worker; with several, each "
        "function and layer is named after its file's label) and print the text report to stdout. "
        "A last line cut short, as a killed process leaves it, is a warning; any other bad line, "
        "or a file that cannot be opened, is an error naming the file (exit code 2).")
    report.add_argument("files", metavar="FILE", nargs="+", help="the trace files")
    report.add_argument("--output", metavar="FILE", help="write the text report to FILE instead of stdout")
    report.add_argument("--full", action="store_true", help="report every function trace and every "
                        "layer run with its reason, instead of the problems and the tables")
    report.add_argument("--summary", action="store_true", help=argparse.SUPPRESS)  # The default now.
    report.add_argument("--html", metavar="FILE", help="also write the report as a self-contained "
                        "HTML file")
    report.add_argument("--trace-events", metavar="FILE", help="also write the function traces and "
                        "layer runs as Trace Event Format JSON, which Perfetto (ui.perfetto.dev) and "
                        "chrome://tracing open")
    compare = commands.add_parser(
        "compare", help="compare trace files: the workers of a job that traced differently from the "
        "others, or what a run traced that a baseline run did not; without TensorFlow",
        description="Compare the traces each trace file holds, function by function (matched by "
        "qualified name and definition site). Workers of one job (files written under tf.distribute's "
        "TF_CONFIG or jax.distributed, or labelled like worker-0; or --workers): every worker whose "
        "traces differ from the majority's, at the first trace where they do, what differs and the "
        "likely consequence in a collective job; exit code 1 when any does. Runs (--baseline FILE): the "
        "traces each run made that the baseline did not, with the baseline's closest signature, and "
        "the ones the baseline made that it did not. Exit code 2 for a file that cannot be read (the "
        "message names the file and line) or a bad argument.")
    compare.add_argument("files", metavar="FILE", nargs="+", help="the trace files: one per worker, or "
                         "the runs to compare with the baseline")
    compare.add_argument("--baseline", metavar="FILE", help="compare each FILE with this trace file, as "
                         "runs one after another")
    compare.add_argument("--workers", action="store_true", help="compare the files as workers of one job "
                         "whatever their headers and labels say")
    compare.add_argument("--fail-on-new", action="store_true", help="with --baseline: exit with 1 when a "
                         "run traced what the baseline did not")
    compare.add_argument("--html", metavar="FILE", help="also write the comparison as a self-contained "
                         "HTML file")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead of text")
    for command in (demo, run, report, compare):  # A command's error prints its own usage line.
        command.set_defaults(usage_error=command.error)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "traceguard") -> int:
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit code.

    Args:
        argv: The arguments after the program name.
        prog: How usage lines name the program: `"traceguard"` for the console
            script, `"python -m traceguard"` for `__main__.py`.
    """
    parser = build_parser(prog)
    # A command's unknown option is its error, with its usage: argparse hands the arguments its
    # subparser did not recognise back to the top-level parser, whose usage names no command.
    arguments, unknown = parser.parse_known_args(argv)
    if unknown:
        arguments.usage_error(f"unrecognized arguments: {' '.join(unknown)}")
    if arguments.command == "run" and arguments.script is None:
        arguments.usage_error("-m expects a MODULE" if arguments.module
                                  else "expects a SCRIPT, or -m MODULE")
    if arguments.command == "report":
        from traceguard._diagnosis.report_files import report_files

        return report_files(arguments.files, sys.stdout, sys.stderr, output=arguments.output,
                            html=arguments.html, summary=not arguments.full,
                            trace_events_path=arguments.trace_events)
    if arguments.command == "compare":
        from traceguard._diagnosis.compare_files import compare_files

        return compare_files(arguments.files, sys.stdout, sys.stderr, baseline=arguments.baseline,
                             workers=arguments.workers, fail_on_new=arguments.fail_on_new,
                             html=arguments.html, as_json=arguments.json)
    try:
        _quiet_backend_import(arguments.verbose)
    except ImportError as error:  # An unsupported setup: the message says what to install.
        parser.error(str(error))
    if arguments.command == "demo":
        from traceguard._demo import run_demo

        try:
            run_demo(sys.stdout, arguments.keras)
        except ImportError as error:
            parser.error(f"--keras {arguments.keras}: {error}")
    elif arguments.command == "run":
        from traceguard._diagnosis.run import run_module, run_script

        run = run_module if arguments.module else run_script
        return run(arguments.script, arguments.arguments, arguments.output, sys.stderr,
                   html=arguments.html, summary=not arguments.full,
                   verify_fixes=arguments.verify_fixes, trace_file=arguments.trace_file,
                   trace_file_label=arguments.trace_file_label)
    return 0


def _quiet_backend_import(verbose: bool) -> None:
    """Imports TensorFlow or JAX (through `_compat`), without TensorFlow's start-up lines unless verbose."""
    if verbose:
        from traceguard import _compat  # noqa: F401
        return
    # TensorFlow reads it once, when its C++ runtime loads; a value the user set stays.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _startup_lines_hidden():
        from traceguard import _compat  # noqa: F401


@contextlib.contextmanager
def _startup_lines_hidden() -> Iterator[None]:
    """Sends file descriptor 2 to a file while the block runs, then writes back all but start-up lines.

    absl writes its pre-initialisation lines from C++ straight to file descriptor
    2, so `sys.stderr` cannot catch them. Everything else written meanwhile (a
    Python warning, the error of a failed import) is written to stderr afterwards.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode(errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not _STARTUP_LINE.match(line)]
            sys.stderr.write("".join(kept))
            sys.stderr.flush()
