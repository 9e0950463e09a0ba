"""Runs the issue-18 corpus under traceguard and checks each report against the program's `Expected:` block.

Usage (from the repository root):

    python tests/programs/check.py [--out DIR] [--modes run,watch,count] [NAME ...]

For each program `tests/programs/<NAME>.py` (all of them by default), one at a
time, in a fresh interpreter each:

- `run`: `python -m traceguard run --full --output <DIR>/<NAME>.run.txt <program>`;
  the program's own stdout/stderr go to `<NAME>.run.log`.
- `watch`: the program is run with `runpy` inside `traceguard.watch()`; the
  report (`str()` of the yielded `Explanation`) goes to `<NAME>.watch.txt`.
- `count`: `_trace_counts.py` counts every `tf.function`'s (or, for a JAX
  program, every `jax.jit` function's) traces without traceguard, to confirm
  the program still traces as its `traces:` says.

A program's `backend:` (`tensorflow`, the default, `jax` or `torch`) picks the
interpreter: JAX programs run with `$TRACEGUARD_JAX_PYTHON` (default: this
interpreter) and `KERAS_BACKEND=jax`, torch programs with
`$TRACEGUARD_TORCH_PYTHON` and `KERAS_BACKEND=torch`. `run` and `watch` also write a trace file
(`<NAME>.run.jsonl`, `<NAME>.watch.jsonl`).

Each report is then checked with keyword heuristics taken from the
`Expected:` block (see README.md): does it name the function, the changed
argument and aspect, a fix keyword, and none of the forbidden keywords. A
block with structured keys (`backend`, `kinds`, `changes`) is also checked
against the trace file's records: the backend, the number and kinds of the
function's traces, and each retrace's changed `argument`, `aspect` and `axis`.
A report "names the cause" when every applicable check passes. The keyword
checks are heuristics; the report texts are saved so that a person can judge
them.
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
    # Added with issue #31's reports:
    "weak-type",  # JAX: a weakly typed scalar became a typed one (same dtype and shape)
    "static-value",  # JAX: a static argument (static_argnums/static_argnames) took a new value
    "static-identity",  # JAX: a static argument without value equality is a new object
    "object-identity",  # tf.function: a Python object argument (keyed by identity) is a new object
    "relaxed",  # one retrace that relaxed a shape to None, then none
    "tracing-context",  # JAX: a call under another jax.config value or context manager
    # Added with issue #39's torch reports (torch.compile's guards; traceguard may not name them yet):
    "graph-break",  # torch: a graph break splits a compiled function into frames compiled one by one
    "requires-grad",  # torch: a tensor argument's requires_grad changed (a guard torch keeps per tensor)
    "recompile-limit",  # torch: a frame recompiled up to torch._dynamo's recompile_limit, then runs eagerly
    # Added with issue #38's held-out reports (traceguard may not name them yet):
    "call-structure",  # JAX: the same arguments passed positionally, then by keyword
    "static-field",  # JAX: a pytree node's static field (auxiliary data) took a new value
    "sharding",  # JAX: an argument's sharding or committedness changed (a trace, or a compile alone)
    "restored-function",  # a function restored from a SavedModel was called with a new signature
)
BACKENDS = ("tensorflow", "jax", "torch")
# What changed in one retrace, as the trace file's `change_fields[].aspect` names it (issue #31).
ASPECTS = ("dim", "rank", "dtype", "weak_type", "value", "identity", "structure", "function_object",
           "added", "removed", "context",
           # Issue #38: JAX keys these too; named here so a program can expect them before traceguard does.
           "call_structure", "static_field", "sharding",
           # Issue #39: torch guards each tensor's requires_grad, and its autograd dispatch keys
           # (an inference tensor has none).
           "requires_grad", "inference")
KINDS = ("trace", "retrace", "variable_retrace", "save",
         "compile")  # a compilation without a trace (issue #34): listed in `kinds:`, not counted in `traces:`
COMPILE = "compile"
# `set: NAME` groups a batch of held-out reports so they can be run together (`--set NAME`).
SETS = ("heldout3", "heldout4")
STATUSES = ("open",)  # `status: open`: the diagnosis does not pass yet; the slow test skips it
REPEAT = "*"  # In `changes:`, repeats the entry before it for every later retrace
JAX_PYTHON_VARIABLE = "TRACEGUARD_JAX_PYTHON"
TORCH_PYTHON_VARIABLE = "TRACEGUARD_TORCH_PYTHON"
TIMEOUT_SECONDS = 300

WATCH_SNIPPET = """
import runpy, sys, traceback
import traceguard
script, out, trace_file = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [script]
status = 0
with traceguard.watch(trace_file=trace_file) as report:
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:
        status = 1
        traceback.print_exc()
pathlib = __import__("pathlib")
pathlib.Path(out).write_text(report.summary(full=True))
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
    expected.setdefault("backend", "tensorflow")
    _check_structured_keys(path.name, expected)
    return expected


def _check_structured_keys(name, expected):
    """Validates `backend`, `status`, `kinds` and `changes`; raises ValueError naming the key."""
    if expected["backend"] not in BACKENDS:
        raise ValueError(f"{name}: `backend:` expects one of {', '.join(BACKENDS)}. "
                         f"Received: backend={expected['backend']!r}")
    if "status" in expected and expected["status"] not in STATUSES:
        raise ValueError(f"{name}: `status:` expects one of {', '.join(STATUSES)} (or no `status:`). "
                         f"Received: status={expected['status']!r}")
    if "set" in expected and expected["set"] not in SETS:
        raise ValueError(f"{name}: `set:` expects one of {', '.join(SETS)} (or no `set:`). "
                         f"Received: set={expected['set']!r}")
    kinds = expected.get("kinds")
    if kinds is not None:
        if not isinstance(kinds, list) or any(kind not in KINDS for kind in kinds):
            raise ValueError(f"{name}: `kinds:` expects a JSON list of {', '.join(KINDS)}. "
                             f"Received: kinds={kinds!r}")
        if str(sum(kind != COMPILE for kind in kinds)) != str(expected.get("traces")):
            raise ValueError(f"{name}: `kinds:` lists {len(kinds)} traces but `traces:` says "
                             f"{expected.get('traces')}")
    changes = expected.get("changes")
    if changes is not None:
        if not isinstance(changes, list) or not changes:
            raise ValueError(f"{name}: `changes:` expects a non-empty JSON list. Received: changes={changes!r}")
        for index, change in enumerate(changes):
            if change == REPEAT and index == len(changes) - 1 and index > 0:
                continue
            if not isinstance(change, dict) or change.get("aspect") not in ASPECTS \
                    or set(change) - {"argument", "aspect", "axis"}:
                raise ValueError(
                    f"{name}: `changes:` entry {index} expects {{\"argument\": ..., \"aspect\": one of "
                    f"{', '.join(ASPECTS)}, \"axis\": ...}} (or a final {REPEAT!r}). Received: {change!r}")
        # One entry per record after the first: the traces, and compilations listed in `kinds:`.
        records = len(kinds) if kinds is not None else int(expected.get("traces", 0))
        if REPEAT not in changes and len(changes) != records - 1:
            raise ValueError(f"{name}: `changes:` lists {len(changes)} retraces but `traces:` says "
                             f"{expected.get('traces')} traces (without a final {REPEAT!r})")


def has_structured_keys(expected):
    """Whether the block asks for the trace-file checks (any of `kinds:` or `changes:`)."""
    return "kinds" in expected or "changes" in expected


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
    elif aspect.startswith("requires_grad"):
        pattern = r"requires_grad"
    else:
        pattern = r"->|object|changed"
    return any(re.search(rf"\b{re.escape(name)}\b[^\n]{{0,100}}(?:{pattern})", text) for name in names)


def judge(text, expected, program_name):
    """The keyword checks of one report against one `Expected:` block."""
    # The report's header names the script; its file name must not count as a keyword.
    text = text.replace(program_name, "<program>").replace("traceguard report for run ", "traceguard report for ")
    result = {}
    # Not `\b`: a name such as `<lambda>` starts and ends with a non-word character.
    result["function"] = any(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)
                             for name in expected["functions"])
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


def judge_run(outcome, expected, program_name):
    """The keyword checks of a run's report, and the structured checks of its trace file if asked."""
    verdict = judge(outcome.pop("text"), expected, program_name)
    records = outcome.pop("records", [])
    if has_structured_keys(expected):
        verdict["structured"] = judge_trace_file(records, expected)
        verdict["names_cause"] = verdict["names_cause"] and verdict["structured"]["structured_ok"]
    return verdict


def read_trace_records(path):
    """The JSON records of a trace file (a cut last line is skipped); [] when there is no file."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # A killed process's cut last line.
    return records


def _function_matches(record, functions):
    names = {record.get("qualname") or "", record.get("event", {}).get("function") or ""}
    names |= {name.rsplit(".", 1)[-1] for name in names}
    return any(function in names or function.rsplit(".", 1)[-1] in names for function in functions)


def _parameter(argument):
    """The top-level parameter of a change's argument: `x` for `x[0]['ids']` or `x.field`."""
    return re.split(r"[\[.]", argument or "", maxsplit=1)[0]


def _change_fields(record):
    """A trace's changes as `{"argument", "aspect", "axis"}` dicts: schema version 2 holds them in
    the event (the argument as its parameter and keys), version 1 in `change_fields`."""
    if "change_fields" in record:
        return record.get("change_fields") or []
    fields = []
    for change in record.get("event", {}).get("changes") or []:
        if isinstance(change, dict):
            argument = change.get("argument") or {}
            fields.append({"argument": argument.get("parameter") if isinstance(argument, dict) else argument,
                           "aspect": change.get("aspect"), "axis": change.get("axis")})
    return fields


def _change_matches(field, spec):
    if not field or field.get("aspect") != spec["aspect"]:
        return False
    if "axis" in spec and field.get("axis") != spec["axis"]:
        return False
    if "argument" in spec:
        accepted = [name.strip() for name in spec["argument"].split("|")]
        return _parameter(field.get("argument")) in accepted
    return True


def expected_changes(expected, retraces):
    """`changes:` aligned with the retraces after the first trace (a final `*` repeats)."""
    changes = list(expected.get("changes") or [])
    if changes and changes[-1] == REPEAT:
        changes = changes[:-1] + [changes[-2]] * max(0, retraces - len(changes) + 1)
    return changes


def judge_trace_file(records, expected):
    """The structured checks of one trace file's records against one `Expected:` block."""
    result = {}
    header = records[0] if records and records[0].get("type") == "header" else {}
    result["backend_ok"] = header.get("backend") == expected["backend"]
    traces = [record for record in records
              if record.get("type") == "function_trace" and _function_matches(record, expected["functions"])]
    # A trace is written as it ends and again with its costs when its call returns: the later line.
    latest = {(record.get("key"), record["event"].get("serial")): record for record in traces}
    traces = list(latest.values())
    kinds = [record["event"]["kind"] for record in traces]
    result["recorded_kinds"] = kinds
    # `traces:` is the backend's trace count: a compilation without a trace is not one.
    result["traces_ok"] = str(sum(kind != COMPILE for kind in kinds)) == str(expected.get("traces"))
    if "kinds" in expected:
        result["kinds_ok"] = kinds == expected["kinds"]
    if "changes" in expected:
        specs = expected_changes(expected, len(traces) - 1)
        missed = []
        for number, spec in enumerate(specs, start=2):
            fields = _change_fields(traces[number - 1]) if number <= len(traces) else []
            if not any(_change_matches(field, spec) for field in fields):
                missed.append({"trace": number, "expected": spec,
                               "recorded": [f for f in fields if f] if number <= len(traces) else "no trace"})
        result["changes_missed"] = missed
        result["changes_ok"] = not missed
    checks = [value for key, value in result.items() if key.endswith("_ok")]
    result["structured_ok"] = all(checks)
    return result


def _interpreter(expected):
    if expected.get("backend") == "jax":
        return os.environ.get(JAX_PYTHON_VARIABLE) or sys.executable
    if expected.get("backend") == "torch":
        return os.environ.get(TORCH_PYTHON_VARIABLE) or sys.executable
    return sys.executable


def run_mode(mode, program, out_dir, env, rejudge=False, expected=None):
    name = program.stem
    expected = expected or parse_expected(program)
    report_path = out_dir / f"{name}.{mode}.txt"
    trace_path = out_dir / f"{name}.{mode}.jsonl"
    log_path = out_dir / f"{name}.{mode}.log"
    if rejudge:
        text = report_path.read_text() if report_path.exists() else ""
        return {"status": "saved", "seconds": 0.0, "text": text, "records": read_trace_records(trace_path)}
    python = _interpreter(expected)
    if expected["backend"] in ("jax", "torch"):
        env = dict(env, KERAS_BACKEND=expected["backend"])
    if mode == "run":
        command = [python, "-m", "traceguard", "run", "--full", "--output", str(report_path),
                   "--trace-file", str(trace_path), str(program)]
    elif mode == "watch":
        command = [python, "-c", WATCH_SNIPPET, str(program), str(report_path), str(trace_path)]
    else:
        command = [python, str(HERE / "_trace_counts.py"), "--backend", expected["backend"], str(program)]
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
    return {"status": status, "seconds": seconds, "text": text, "records": read_trace_records(trace_path)}


def mark(value):
    return {True: "yes", False: "NO", None: "n/a"}[value]


def select_programs(parser, args):
    """The programs named on the command line (all by default), of `--backend` and `--set` if given."""
    programs = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "check.py")
    if args.names:
        by_name = {p.stem: p for p in programs}
        missing = [n for n in args.names if n not in by_name]
        if missing:
            parser.error(f"no such program: {', '.join(missing)}. Available: {', '.join(sorted(by_name))}")
        programs = [by_name[n] for n in args.names]
    if args.backend:
        programs = [p for p in programs if parse_expected(p)["backend"] == args.backend]
    if args.program_set:
        programs = [p for p in programs if parse_expected(p).get("set") == args.program_set]
    return programs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="program names (file stems); all by default")
    parser.add_argument("--out", default="/tmp/traceguard-corpus", help="directory for reports and logs")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--rejudge", action="store_true",
                        help="do not run anything: judge the reports already saved in --out "
                        "(run and watch only)")
    parser.add_argument("--backend", choices=BACKENDS, help="only the programs of this backend")
    parser.add_argument("--set", choices=SETS, dest="program_set",
                        help="only the programs whose block says `set: NAME`")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.rejudge:
        modes = [m for m in modes if m != "count"]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"--modes expects a subset of {','.join(MODES)}. Received: {','.join(unknown)}")
    programs = select_programs(parser, args)
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))

    results = {}
    for program in programs:
        expected = parse_expected(program)
        entry = {"expected": {k: v for k, v in expected.items() if k != "summary"}}
        for mode in modes:
            outcome = run_mode(mode, program, out_dir, env, rejudge=args.rejudge, expected=expected)
            if mode == "count":
                counts = outcome["counts"] or {}
                measured = max((counts.get(n, 0) for n in expected["functions"]), default=0)
                outcome["measured_traces"] = measured
                outcome["traces_as_expected"] = str(measured) == str(expected.get("traces"))
            else:
                outcome.update(judge_run(outcome, expected, program.name))
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
                         + (f" structured={mark(outcome['structured']['structured_ok'])}"
                            if "structured" in outcome else "")
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
            for backend in BACKENDS:
                of_backend = [r for r in results.values() if r["expected"]["backend"] == backend]
                if of_backend and len(of_backend) != total:
                    named = sum(r[mode]["names_cause"] for r in of_backend)
                    print(f"  {backend}: {named}/{len(of_backend)}")
    results_name = "results.rejudged.json" if args.rejudge else "results.json"
    (out_dir / results_name).write_text(json.dumps(results, indent=2, default=str))
    print(f"reports, logs and results.json in {out_dir}")


if __name__ == "__main__":
    main()
