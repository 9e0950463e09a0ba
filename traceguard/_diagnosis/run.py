"""`traceguard run SCRIPT | -m MODULE [ARGS...]`: an unmodified script or module, run under `watch()`.

A script runs as `python SCRIPT ARGS...` would run it: as module `__main__`,
with `sys.argv` set to `[SCRIPT, *ARGS]` and the script's directory first on
`sys.path`. A module runs as `python -m MODULE ARGS...` would: found on
`sys.path` with the current directory first, run as `__main__` by
`runpy.run_module(..., alter_sys=True)` (as `python -m cProfile -m` and
`python -m pdb -m` do), so `sys.argv[0]` is its file and its package's relative
imports work. The report is written when the script ends, however it ends, and
the exit code is the script's.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from traceguard._diagnosis.trace_file import check_trace_file_path

if TYPE_CHECKING:
    from traceguard._diagnosis.explanation import Explanation
    from traceguard._diagnosis.fix_checks import FixChecks


def check_output_file(option: str, path: str | None, command: str) -> str | None:
    """The message for `path` given to `option` when it cannot be a file to write, else None.

    Said before the script runs, not after an hour of training.
    """
    if path is None:
        return None
    if os.path.isdir(path) or not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        return f"{command}: {option} expects a file in an existing directory. Received: {option} {path!r}"
    return None


def run_script(script: str, arguments: Sequence[str], output: str | None, err: TextIO,
               html: str | None = None, summary: bool = True, verify_fixes: bool = False,
               trace_file: str | None = None, trace_file_label: str | None = None) -> int:
    """Runs `script` with `arguments` under `watch()`, then writes the report.

    Args:
        script: Path of the Python file to run.
        arguments: The script's command-line arguments.
        output: Path of the file to write the report to; None for `err`.
        err: Where the report (without `output`) and the script's traceback go.
        html: Path of the HTML report to write as well; None for none.
        summary: Whether the text report is the default one (the problems and the tables), not
            the full one (`--full`).
        verify_fixes: Whether to check the fix-its by replaying each retracing
            function's recorded signatures (runs the script's functions again).
        trace_file: Path of the trace file to write as the script runs; None for none.
        trace_file_label: How reports name this process in the trace file.

    Returns:
        The exit code `python SCRIPT` would have had; 2 for a usage error.
    """
    if os.path.isdir(script):
        print(f"traceguard run: {script!r} is a directory; SCRIPT is a Python file (train.py), "
              "or run a package with -m MODULE (its __main__.py).", file=err)
        return 2
    if not os.path.isfile(script):
        print(f"traceguard run: no such file: {script!r}", file=err)
        return 2

    def run() -> dict[str, Any]:
        return runpy.run_path(script, run_name="__main__")

    return _run(run, f"run {os.path.basename(script)}", [script, *arguments],
                os.path.dirname(os.path.abspath(script)), output, err, html, summary, verify_fixes,
                trace_file, trace_file_label)


def run_module(module: str, arguments: Sequence[str], output: str | None, err: TextIO,
               html: str | None = None, summary: bool = True, verify_fixes: bool = False,
               trace_file: str | None = None, trace_file_label: str | None = None) -> int:
    """Runs `module` as `python -m module arguments...` would under `watch()`, then writes the report.

    The arguments after `module` are those of `run_script`.

    Returns:
        The exit code `python -m module` would have had; 2 when the module
        cannot be found or run as a module (the message names it).
    """

    def run() -> dict[str, Any]:
        try:
            return runpy.run_module(module, run_name="__main__", alter_sys=True)
        except ImportError as error:
            if _raised_by_runpy(error):  # Finding the module failed; its own code did not run.
                raise _ModuleNotFound(f"traceguard run -m {module}: {error}") from None
            raise

    # `python -m` puts the current directory first on sys.path (the console script's is its bin/).
    return _run(run, f"run -m {module}", [module, *arguments], os.getcwd(), output, err, html, summary,
                verify_fixes, trace_file, trace_file_label)


class _ModuleNotFound(Exception):
    """`run -m`'s module could not be found: a usage error, said without a traceback."""


def _raised_by_runpy(error: ImportError) -> bool:
    """Whether runpy raised `error` itself, finding the module (not the module's own imports).

    runpy raises a plain `ImportError` from its own frame ("No module named x",
    "'x' is a package and cannot be directly executed"); an import inside the
    module fails in the module's frames or importlib's.
    """
    entry = error.__traceback__
    while entry is not None and entry.tb_next is not None:
        entry = entry.tb_next
    return (type(error) is ImportError and entry is not None
            and entry.tb_frame.f_globals.get("__name__") == "runpy")


def _run(run: Callable[[], dict[str, Any]], title: str, argv: list[str], path0: str,
         output: str | None, err: TextIO, html: str | None, summary: bool, verify_fixes: bool,
         trace_file: str | None, trace_file_label: str | None) -> int:
    """Calls `run` under `watch()` with `sys.argv` and `sys.path[0]` set, then writes the report."""
    message = check_output_file("--html", html, "traceguard run")
    if message is not None:
        print(message, file=err)
        return 2
    if trace_file is not None:
        try:
            check_trace_file_path(trace_file, trace_file_label, None)
        except ValueError as error:
            print(f"traceguard run: {error}", file=err)
            return 2
    from traceguard._diagnosis.watch import watch

    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = argv
    if sys.path:
        sys.path[0] = path0
    report = None
    kept_alive: object = None
    try:
        with watch(trace_file=trace_file, trace_file_label=trace_file_label) as report:
            report.title = title
            try:
                # The script's globals (or, if it raises, its traceback's frames) stay alive until
                # the report is written: `--verify-fixes` replays the functions they hold.
                kept_alive = run()
                code = 0
            except _ModuleNotFound as error:
                print(error, file=err)
                report = None  # Nothing ran: no report.
                return 2
            except SystemExit as exit_request:
                code, kept_alive = _exit_code(exit_request, err), exit_request
            except Exception as error:
                _print_user_traceback(error, err)
                code, kept_alive = 1, error
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
        if report is not None:
            checks = report.verify_fixes() if verify_fixes else None
            _write_report(report.summary(full=not summary, fix_checks=checks)
                          + _fixes_text(report, checks), output, err)
            if html is not None:
                report.to_html(html)
            written = report._trace_file.path if report._trace_file is not None else None
            print(_closing_line(report, output, html, written), file=err)
        del kept_alive
    return code


def _exit_code(exit_request: SystemExit, err: TextIO) -> int:
    """What the interpreter makes of `sys.exit(code)`: None is 0, an int itself, else printed and 1."""
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def _print_user_traceback(error: BaseException, err: TextIO) -> None:
    """Prints the traceback from the user's own frames on, as `python SCRIPT` and `python -m` do.

    The frames of traceguard, runpy and importlib that started the script or module (importing
    its package, compiling it) are left out. A SyntaxError in the script has no frame of it
    left, and is shown without a traceback, as Python shows it.
    """
    entry = error.__traceback__
    while entry is not None and _is_launcher_frame(entry.tb_frame.f_globals.get("__name__")):
        entry = entry.tb_next
    traceback.print_exception(type(error), error, entry, file=err)


def _is_launcher_frame(module: object) -> bool:
    return isinstance(module, str) and (module in _LAUNCHER_MODULES or module.startswith("traceguard."))


_LAUNCHER_MODULES = frozenset({"runpy", "importlib._bootstrap", "importlib._bootstrap_external"})


def _fixes_text(report: Explanation, checks: FixChecks | None) -> str:
    """The fix-its after the report, with what replaying them did when checked; empty when none."""
    from traceguard._reports.fixes import format_fix_checks, format_fixes

    if checks is not None:
        return "\n\n" + format_fix_checks(checks)
    fixes = format_fixes(report.fixes())
    return "\n\n" + fixes if fixes else ""


def _write_report(text: str, output: str | None, err: TextIO) -> None:
    if output is None:
        print(f"\n{text}", file=err)
        return
    with open(output, "w", encoding="utf-8") as file:
        file.write(text + "\n")


def _closing_line(report: Explanation, output: str | None, html: str | None, trace_file: str | None) -> str:
    """How many functions and layers were watched and where the report is."""
    where = [f"report written to {output}" if output is not None else "report above"]
    if html is not None:
        where.append(f"HTML report written to {html}")
    if trace_file is not None:
        where.append(f"trace file written to {trace_file}")
    return (f"traceguard: watched {_plural(len(report.functions), 'function')} and "
            f"{_plural(len(report.layers), 'layer')}; {', '.join(where)}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
