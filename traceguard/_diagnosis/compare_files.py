"""`python -m traceguard compare FILE...`: workers that traced differently, or what a run traced anew.

Reads every file first (with `trace_file_reader`, without TensorFlow), so a bad one
stops the command before anything is written; then prints the text report (or, with
`--json`, the comparison as JSON) and writes the HTML report when asked. The exit
code is what CI gates on: 1 when workers diverge (or, with `--fail-on-new`, when a
run traced what the baseline did not), 2 for a file that cannot be read or a bad
argument, else 0.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import TextIO

from traceguard._diagnosis.compare import UNNAMED_WORKERS, Comparison, ModeUndecided, compare
from traceguard._diagnosis.run import check_output_file
from traceguard._diagnosis.trace_file_reader import unreadable

_NAME = "traceguard compare"


def compare_files(paths: Sequence[str], out: TextIO, err: TextIO, baseline: str | None = None,
                  workers: bool = False, fail_on_new: bool = False, html: str | None = None,
                  as_json: bool = False) -> int:
    """Compares the trace files at `paths` (with `baseline`, as runs) and reports it.

    Args:
        paths: The trace files: one per worker, or the runs to compare with `baseline`.
        out: Where the report (text, or JSON with `as_json`) goes.
        err: Where warnings (a last line cut short) and errors go.
        baseline: The trace file of the baseline run; None to compare workers.
        workers: Whether to compare the files as workers whatever they say.
        fail_on_new: Whether a run's trace that the baseline did not make is a failure (exit 1).
        html: Path of the HTML report to write as well; None for none.
        as_json: Whether to print the comparison as JSON instead of text.

    Returns:
        0; 1 when workers diverge, or a run made a new trace with `fail_on_new`; 2 when
        a file cannot be read or an argument is wrong (the message says which).
    """
    if baseline is not None and workers:
        print(f"{_NAME}: --workers compares workers of one job and --baseline runs against a baseline; "
              f"give one of them. Received: --workers --baseline {baseline!r}", file=err)
        return 2
    if fail_on_new and baseline is None:
        print(f"{_NAME}: --fail-on-new fails on the traces a run made that its baseline did not: it needs "
              "--baseline FILE.", file=err)
        return 2
    if len(paths) < (1 if baseline is not None else 2):
        print(f"{_NAME}: compares two trace files or more (one per worker), or runs with --baseline FILE. "
              f"Received: {len(paths)} file{'' if len(paths) == 1 else 's'}", file=err)
        return 2
    message = check_output_file("--html", html, _NAME)
    if message is not None:
        print(message, file=err)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            comparison = compare(paths, baseline=baseline, workers=True if workers else None)
        except ModeUndecided as error:
            print(f"{_NAME}: cannot tell whether these files are workers of one job or runs one after "
                  f"another: {', '.join(error.unnamed)} {UNNAMED_WORKERS} Compare them as workers with "
                  "--workers, or as runs with --baseline FILE.", file=err)
            return 2
        except OSError as error:
            print(f"{_NAME}: {unreadable(error.filename, error)}", file=err)
            return 2
        except ValueError as error:  # TraceFileError is a ValueError naming the file and line.
            print(f"{_NAME}: {error}", file=err)
            return 2
    for warning in caught:
        print(f"{_NAME}: warning: {warning.message}", file=err)
    if as_json:
        print(json.dumps(comparison.to_dict(), indent=1, default=str), file=out)
    else:
        print(comparison, file=out)
    if html is not None:
        comparison.to_html(html)
    return exit_code(comparison, fail_on_new)


def exit_code(comparison: Comparison, fail_on_new: bool) -> int:
    """1 when the workers diverge, or (`fail_on_new`) a run traced what its baseline did not; else 0."""
    return int(comparison.diverged or (fail_on_new and bool(comparison.new_traces)))

