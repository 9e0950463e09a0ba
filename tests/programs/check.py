"""Runs the issue-18 corpus under traceguard and checks each report against the program's `Expected:` block.

Usage (from the repository root):

    python tests/programs/check.py [--out DIR] [--modes run,watch,count] [NAME ...]

For each program `tests/programs/<NAME>.py` (all of them by default), one at a
time, in a fresh interpreter each:

- `run`: `python -m traceguard run --output <DIR>/<NAME>.run.txt <program>`;
  the program's own stdout/stderr go to `<NAME>.run.log`.
- `watch`: the program is run with `runpy` inside `traceguard.watch()`; the
  report (`str()` of the yielded `Explanation`) goes to `<NAME>.watch.txt`.
- `count`: `_trace_counts.py` counts every `tf.function`'s traces without
  traceguard, to confirm the program still retraces as its `traces:` says.

Each report is then checked with keyword heuristics taken from the
`Expected:` block (see README.md): does it name the function, the changed
argument and aspect, a fix keyword, and none of the forbidden keywords. A
report "names the cause" when every applicable check passes. These are
heuristics for a quick, repeatable comparison; the report texts are saved so
that a person can judge them.
"""
import argparse
import ast
import json
import os
import pathlib
import re
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODES = ("run", "watch", "count")
CAUSES = (
    "python-value-arg", "new-function-object", "shape-batch-partial", "shape-batch-predict",
    "shape-nonbatch", "dtype", "structure", "variable-creation", "optimizer-slots", "metric-state",
    "control-flow-body", "training-flag", "none-expected",
)
TIMEOUT_SECONDS = 300

WATCH_SNIPPET = """
import runpy, sys, traceback
import traceguard
script, out = sys.argv[1], sys.argv[2]
sys.argv = [script]
status = 0
with traceguard.watch() as report:
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:
        status = 1
        traceback.print_exc()
pathlib = __import__("pathlib")
pathlib.Path(out).write_text(str(report))
sys.exit(status)
"""

NEW_FUNCTION_WORDS = (
    r"new function|function object|new model|rebuilt|re-?created|new `?tf\.function"
    r"|created (?:per|in a loop|each)"
)


def parse_expected(path):
    """Returns the `Expected:` block of a program's docstring as a dict."""
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    if not docstring or "Expected:" not in docstring:
        raise ValueError(f"{path.name}: no `Expected:` block in the module docstring")
    expected = {}
    for line in docstring.split("Expected:", 1)[1].splitlines():
        match = re.match(r"^\s{2}(\w+):\s*(.*)$", line)
        if not match:
            continue
        key, value = match.groups()
        value = value.strip()
        if value.startswith("[") or value.startswith('"'):
            value = json.loads(value)
        expected[key] = value
    sources = re.findall(r"https?://\S+", docstring.split("Expected:", 1)[0])
    expected["sources"] = sources
    expected["summary"] = docstring.splitlines()[0]
    for required in ("function", "cause", "changed", "fix"):
        if required not in expected:
            raise ValueError(f"{path.name}: `Expected:` block has no `{required}:`")
    if expected["cause"] not in CAUSES:
        raise ValueError(f"{path.name}: `cause:` expects one of {', '.join(CAUSES)}. "
                         f"Received: cause={expected['cause']!r}")
    if not sources:
        raise ValueError(f"{path.name}: the docstring names no source URL before `Expected:`")
    expected["functions"] = [name.strip() for name in expected["function"].split("|")]
    expected.setdefault("fix_keywords", [])
    expected.setdefault("forbidden_keywords", [])
    return expected


def summary_counts(text):
    """Kinds counted in the report's first line, e.g. {'trace': 4, 'retrace': 2}."""
    first = text.splitlines()[0] if text else ""
    return {kind: int(n) for n, kind in re.findall(r"(\d+) (\w+)", first)}


def check_changed(text, expected):
    """True/False if the report names the changed argument and aspect; None when not applicable."""
    changed = expected["changed"]
    cause = expected["cause"]
    if cause == "new-function-object":
        return bool(re.search(NEW_FUNCTION_WORDS, text, re.IGNORECASE))
    if changed.startswith("("):  # nothing changed between calls: variable creation, none-expected
        return None
    arguments, _, aspect = changed.partition(":")
    # "data | x" lists the names a correct report may use (Keras's step argument, the user's).
    names = [re.match(r"[A-Za-z_][A-Za-z_0-9]*", name.strip()).group(0) for name in arguments.split("|")]
    aspect = aspect.strip()
    dim = re.match(r"dim (\d+)", aspect)
    if dim:
        pattern = rf"dim {dim.group(1)}\b"
    elif aspect.startswith("value"):
        pattern = r"->"
    elif aspect.startswith("dtype"):
        pattern = r"dtype|float64"
    elif aspect.startswith("shape"):
        pattern = r"shape|dim|->"
    else:
        pattern = r"->|object|changed"
    return any(re.search(rf"\b{re.escape(name)}\b[^\n]{{0,100}}(?:{pattern})", text) for name in names)


def judge(text, expected, program_name):
    """The keyword checks of one report against one `Expected:` block."""
    # The report's header names the script; its file name must not count as a keyword.
    text = text.replace(program_name, "<program>").replace("traceguard report for run ", "traceguard report for ")
    result = {}
    result["function"] = any(re.search(rf"\b{re.escape(name)}\b", text) for name in expected["functions"])
    result["changed"] = check_changed(text, expected)
    keywords = expected["fix_keywords"]
    result["fix"] = any(k.lower() in text.lower() for k in keywords) if keywords else None
    result["forbidden"] = [k for k in expected["forbidden_keywords"] if k.lower() in text.lower()]
    if expected["cause"] == "none-expected":
        claimed = summary_counts(text).get("retrace", 0)
        result["no_false_retrace"] = claimed == 0
    checks = ("function", "changed", "fix", "no_false_retrace")
    applicable = [v for k, v in result.items() if k in checks and v is not None]
    result["names_cause"] = all(applicable) and not result["forbidden"]
    return result


def run_mode(mode, program, out_dir, env, rejudge=False):
    name = program.stem
    report_path = out_dir / f"{name}.{mode}.txt"
    log_path = out_dir / f"{name}.{mode}.log"
    if rejudge:
        text = report_path.read_text() if report_path.exists() else ""
        return {"status": "saved", "seconds": 0.0, "text": text}
    if mode == "run":
        command = [sys.executable, "-m", "traceguard", "run", "--output", str(report_path), str(program)]
    elif mode == "watch":
        command = [sys.executable, "-c", WATCH_SNIPPET, str(program), str(report_path)]
    else:
        command = [sys.executable, str(HERE / "_trace_counts.py"), str(program)]
    started = time.monotonic()
    try:
        completed = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
        )
        status, output = completed.returncode, completed.stdout + completed.stderr
    except subprocess.TimeoutExpired as error:
        status = "timeout"
        output = f"timed out after {TIMEOUT_SECONDS} s\n{error.stdout or ''}{error.stderr or ''}"
    seconds = time.monotonic() - started
    log_path.write_text(output)
    if mode == "count":
        match = re.search(r"^TRACE_COUNTS (.*)$", output, re.MULTILINE)
        return {"status": status, "seconds": seconds, "counts": json.loads(match.group(1)) if match else None}
    text = report_path.read_text() if report_path.exists() else ""
    return {"status": status, "seconds": seconds, "text": text}


def mark(value):
    return {True: "yes", False: "NO", None: "n/a"}[value]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="program names (file stems); all by default")
    parser.add_argument("--out", default="/tmp/traceguard-corpus", help="directory for reports and logs")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--rejudge", action="store_true",
                        help="do not run anything: judge the reports already saved in --out "
                        "(run and watch only)")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.rejudge:
        modes = [m for m in modes if m != "count"]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"--modes expects a subset of {','.join(MODES)}. Received: {','.join(unknown)}")
    programs = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "check.py")
    if args.names:
        by_name = {p.stem: p for p in programs}
        missing = [n for n in args.names if n not in by_name]
        if missing:
            parser.error(f"no such program: {', '.join(missing)}. Available: {', '.join(sorted(by_name))}")
        programs = [by_name[n] for n in args.names]
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))

    results = {}
    for program in programs:
        expected = parse_expected(program)
        entry = {"expected": {k: v for k, v in expected.items() if k != "summary"}}
        for mode in modes:
            outcome = run_mode(mode, program, out_dir, env, rejudge=args.rejudge)
            if mode == "count":
                counts = outcome["counts"] or {}
                measured = max((counts.get(n, 0) for n in expected["functions"]), default=0)
                outcome["measured_traces"] = measured
                outcome["traces_as_expected"] = str(measured) == str(expected.get("traces"))
            else:
                outcome.update(judge(outcome.pop("text"), expected, program.name))
            entry[mode] = outcome
            line = f"{program.stem:42s} {mode:5s} exit={outcome['status']!s:4s} {outcome['seconds']:5.1f}s"
            if mode == "count":
                line += f" traces={outcome['measured_traces']} expected={expected.get('traces')} " + (
                    "ok" if outcome["traces_as_expected"] else "MISMATCH")
            else:
                line += (f" function={mark(outcome['function'])} changed={mark(outcome['changed'])}"
                         f" fix={mark(outcome['fix'])}"
                         + (f" forbidden={outcome['forbidden']}" if outcome["forbidden"] else "")
                         + (f" no_false_retrace={mark(outcome['no_false_retrace'])}"
                            if "no_false_retrace" in outcome else "")
                         + f" => {'NAMES CAUSE' if outcome['names_cause'] else 'misses'}")
            print(line, flush=True)
        results[program.stem] = entry

    print()
    total = len(results)
    for mode in modes:
        if mode == "count":
            ok = sum(r["count"]["traces_as_expected"] for r in results.values())
            print(f"count: {ok}/{total} programs trace as their `traces:` says")
        else:
            named = sum(r[mode]["names_cause"] for r in results.values())
            print(f"{mode}: the report names the established cause in {named}/{total} programs")
    results_name = "results.rejudged.json" if args.rejudge else "results.json"
    (out_dir / results_name).write_text(json.dumps(results, indent=2, default=str))
    print(f"reports, logs and results.json in {out_dir}")


if __name__ == "__main__":
    main()
