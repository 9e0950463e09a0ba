"""`python -m traceguard run SCRIPT [ARGS...]`: an unmodified script, run under `watch()`.

The script runs as `python SCRIPT ARGS...` would run it: as module `__main__`,
with `sys.argv` set to `[SCRIPT, *ARGS]` and the script's directory first on
`sys.path`. The report is written when the script ends, however it ends, and
the exit code is the script's.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from traceguard._diagnosis.trace_file import check_trace_file_path

if TYPE_CHECKING:
    from traceguard._diagnosis.explanation import Explanation


def run_script(script: str, arguments: Sequence[str], output: str | None, err: TextIO,
               html: str | None = None, summary: bool = False, verify_fixes: bool = False,
               trace_file: str | None = None, trace_file_label: str | None = None) -> int:
    """Runs `script` with `arguments` under `watch()`, then writes the report.

    Args:
        script: Path of the Python file to run.
        arguments: The script's command-line arguments.
        output: Path of the file to write the report to; None for `err`.
        err: Where the report (without `output`) and the script's traceback go.
        html: Path of the HTML report to write as well; None for none.
        summary: Whether the text report leaves out the run-by-run detail.
        verify_fixes: Whether to check the fix-its by replaying each retracing
            function's recorded signatures (runs the script's functions again).
        trace_file: Path of the trace file to write as the script runs; None for none.
        trace_file_label: How reports name this process in the trace file.

    Returns:
        The exit code `python SCRIPT` would have had; 2 for a usage error.
    """
    if not os.path.isfile(script):
        print(f"traceguard run: no such file: {script!r}", file=err)
        return 2
    # Say so before the script runs, not after an hour of training.
    html_directory = os.path.dirname(os.path.abspath(html)) if html is not None else ""
    if html is not None and (os.path.isdir(html) or not os.path.isdir(html_directory)):
        print(f"traceguard run: --html expects a file in an existing directory. Received: --html {html!r}",
              file=err)
        return 2
    if trace_file is not None:
        try:
            check_trace_file_path(trace_file, trace_file_label, None)
        except ValueError as error:
            print(f"traceguard run: {error}", file=err)
            return 2
    from traceguard._diagnosis.watch import watch

    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *arguments]
    if sys.path:
        sys.path[0] = os.path.dirname(os.path.abspath(script))
    report = None
    kept_alive: object = None
    try:
        with watch(trace_file=trace_file, trace_file_label=trace_file_label) as report:
            report.title = f"run {os.path.basename(script)}"
            try:
                # The script's globals (or, if it raises, its traceback's frames) stay alive until
                # the report is written: `--verify-fixes` replays the functions they hold.
                kept_alive = runpy.run_path(script, run_name="__main__")
                code = 0
            except SystemExit as exit_request:
                code, kept_alive = _exit_code(exit_request, err), exit_request
            except Exception as error:
                _print_script_traceback(error, script, err)
                code, kept_alive = 1, error
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
        if report is not None:
            _write_report(report.summary(brief=summary) + _fixes_text(report, verify_fixes), output, err)
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


def _print_script_traceback(error: BaseException, script: str, err: TextIO) -> None:
    # Show the traceback from the script's own frames on, as `python SCRIPT` does.
    entry = error.__traceback__
    script_path = os.path.abspath(script)
    while entry is not None and os.path.abspath(entry.tb_frame.f_code.co_filename) != script_path:
        entry = entry.tb_next
    # No frame of the script: it did not compile (SyntaxError), which Python shows without traceback.
    traceback.print_exception(type(error), error, entry, file=err)


def _fixes_text(report: Explanation, verify: bool) -> str:
    """The fix-its after the report, checked by replay when asked; empty when there are none."""
    from traceguard._reports.fixes import format_fix_checks, format_fixes

    if verify:
        return "\n\n" + format_fix_checks(report.verify_fixes())
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
