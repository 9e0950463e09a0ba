"""`python -m traceguard report FILE...`: the reports of trace files, offline, without TensorFlow.

Reads every file first, so a bad one stops the command before anything is written;
then prints the text report (or writes it to `--output`), and writes the HTML report
and the Trace Event Format export when asked.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from typing import TextIO

from traceguard._diagnosis.trace_file_reader import (
    TraceFileError,
    merged_explanation,
    read_trace_file,
    unique_labels,
    unreadable,
)
from traceguard._reports.trace_events import trace_events


def report_files(paths: Sequence[str], out: TextIO, err: TextIO, output: str | None = None,
                 html: str | None = None, summary: bool = True, trace_events_path: str | None = None) -> int:
    """Renders the trace files at `paths` as one report.

    Args:
        paths: The trace files, one per process or worker.
        out: Where the text report goes without `output`.
        err: Where warnings (a cut last line, a file not closed) and errors go.
        output: Path of the file to write the text report to; None for `out`.
        html: Path of the HTML report to write as well; None for none.
        summary: Whether the text report is the default one, not the full one (`--full`).
        trace_events_path: Path of the Trace Event Format JSON to write; None for none.

    Returns:
        0, or 2 when a file cannot be read (one line names it) or for a bad argument,
        as `traceguard compare`.
    """
    for option, path in (("--output", output), ("--html", html), ("--trace-events", trace_events_path)):
        directory = os.path.dirname(os.path.abspath(path)) if path is not None else ""
        if path is not None and (os.path.isdir(path) or not os.path.isdir(directory)):
            print(f"traceguard report: {option} expects a file in an existing directory. "
                  f"Received: {option} {path!r}", file=err)
            return 2
    trace_files = []
    for path in paths:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                trace_files.append(read_trace_file(path))
            except (TraceFileError, OSError) as error:
                message = unreadable(path, error) if isinstance(error, OSError) else error
                print(f"traceguard report: {message}", file=err)
                return 2
        for warning in caught:
            print(f"traceguard report: warning: {warning.message}", file=err)
        if not trace_files[-1].complete:
            print(f"traceguard report: warning: {path} has no end line: its process did not close it "
                  "(it was killed, or is still running); its records up to then are reported, without "
                  "the counts of eager runs.", file=err)
    explanation = merged_explanation(trace_files)
    text = explanation.summary(full=not summary)
    if output is None:
        print(text, file=out)
    else:
        with open(output, "w", encoding="utf-8") as file:
            file.write(text + "\n")
    if html is not None:
        explanation.to_html(html)
    if trace_events_path is not None:
        with open(trace_events_path, "w", encoding="utf-8") as file:
            json.dump(trace_events(trace_files, unique_labels(trace_files)), file)
    return 0
