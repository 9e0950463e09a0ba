"""The oracle: traceguard's record held against the backend's own, on programs nobody here wrote.

Runs programs and Keras's own tests under `traceguard.watch(trace_file=...)` and the
backend's own record at once (`oracle.py`), and lists every disagreement: traces recorded
against the backend's count per function and per function object, retraces without a backend
miss of the same object, differences JAX's explanation names that the record lacks, and the
report read back from the trace file against the live one.

Usage, from the repository root:

    python tests/oracle/run.py                     # the CI selection, this interpreter's backend
    python tests/oracle/run.py --full              # everything, every backend (see --jax-python)
    python tests/oracle/run.py --sources programs  # only tests/programs/

Sources: `programs` (tests/programs/*.py of the backend), `keras-suite` (Keras's own tests
from the installed keras wheel, `pytest --pyargs`, with `tests/keras_suite`'s plugin for
Keras's markers). TensorFlow runs in this interpreter (or `--tf-python`), JAX in
`--jax-python` (default `$TRACEGUARD_JAX_PYTHON`, else this interpreter) with
`KERAS_BACKEND=jax`, torch in `--torch-python` (`$TRACEGUARD_TORCH_PYTHON`) with
`KERAS_BACKEND=torch`. Every subprocess has a timeout.

A disagreement that `OPEN_FINDINGS` (tests/oracle/open_findings.json) lists is printed and
counted but does not fail the run: those are traceguard's open bugs, each described in
tests/oracle/FINDINGS.md, listed so that CI fails on any new one. A listed finding that no
longer happens fails the run too, so the list stays true (`--write-findings` rewrites it).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from oracle import in_scope  # noqa: E402

PROGRAMS = ROOT / "tests" / "programs"
FINDINGS_FILE = HERE / "open_findings.json"
BACKENDS = ("tensorflow", "jax", "torch")
SOURCES = ("programs", "keras-suite")
PROGRAM_TIMEOUT = 240
SUITE_TIMEOUT = {"ci": 600, "full": 7200}  # Keras's suite, per selection.

# Keras's own tests, as `pytest --pyargs` takes them, per selection. `ci` is bounded to a
# few minutes per backend on two cores (about a second a test); `full` is every layer,
# model and trainer test the wheel ships.
KERAS_SUITE = {
    "ci": ("keras.src.models.sequential_test", "keras.src.layers.rnn.lstm_test"),
    "full": ("keras.src.layers", "keras.src.models", "keras.src.trainers"),
}
# tests/programs/ in CI, per backend: one or two of each cause (a program costs 5-20 s, most
# of it the backend's import). `full` runs them all.
CI_PROGRAMS = {
    "tensorflow": ("python_int_epoch", "fit_partial_batch_numpy", "fit_adam_metrics_double_trace",
                   "model_rebuilt_each_iteration", "tf_function_defined_per_call",
                   "vectorized_map_called_eagerly", "input_signature_shapes"),
    "jax": ("jit_weak_float_becomes_typed", "jit_static_self_hash_without_eq", "jit_lambda_created_in_loop",
            "jit_optional_argument_none", "keras_jax_fit_variable_seq_len", "recompile_before_each_fit_jax"),
    "torch": ("torch_image_size_recompile", "torch_loop_range_int_bounds", "torch_new_module_per_call",
              "torch_keras_jit_compile_auto_eager"),
}


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    started = time.monotonic()
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="traceguard-oracle-"))
    out.mkdir(parents=True, exist_ok=True)
    selection = "full" if args.full else "ci"
    results: list[dict] = []
    if args.from_results:  # Judge saved results again (after editing the open findings).
        results = json.loads((pathlib.Path(args.from_results) / "results.json").read_text())
        args.backends = []
    for backend in args.backends:
        python = {"jax": args.jax_python, "torch": args.torch_python}.get(backend, args.tf_python)
        if "programs" in args.sources:
            names = args.names or (None if args.full else CI_PROGRAMS[backend])
            results += _run_programs(backend, python, out, names)
        for directory in args.programs_dir or ():
            results += _run_programs(backend, python, out, None, pathlib.Path(directory).resolve())
        if "keras-suite" in args.sources:
            results += _run_keras_suite(backend, python, out, KERAS_SUITE[selection], args.pytest_args,
                                        SUITE_TIMEOUT[selection])
    seconds = time.monotonic() - started
    (out / "results.json").write_text(json.dumps(results, indent=1))
    found = _findings(results)
    if args.write_findings:  # The runs made replace their entries; the others' stay.
        ran = {(entry["backend"], entry["source"]) for entry in results}
        listed = json.loads(FINDINGS_FILE.read_text()) if FINDINGS_FILE.exists() else {}
        kept = {key: text for key, text in listed.items() if tuple(key.split(" | ")[:2]) not in ran}
        FINDINGS_FILE.write_text(json.dumps(dict(sorted({**kept, **found}.items())), indent=1) + "\n")
        print(f"wrote {len(found)} open findings to {FINDINGS_FILE.relative_to(ROOT)}")
    return _report(results, found, seconds, out, strict=args.strict)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="Every program and Keras's whole suite, on "
                        "every backend (unless --backends says otherwise).")
    parser.add_argument("--backends", help="Comma-separated, of tensorflow,jax,torch. Defaults to this "
                        "interpreter's (KERAS_BACKEND), or all with --full.")
    parser.add_argument("--sources", default=",".join(SOURCES),
                        help=f"Comma-separated, of {','.join(SOURCES)}.")
    parser.add_argument("--tf-python", default=sys.executable, help="The TensorFlow interpreter.")
    parser.add_argument("--jax-python", default=os.environ.get("TRACEGUARD_JAX_PYTHON", sys.executable),
                        help="The JAX interpreter. Defaults to $TRACEGUARD_JAX_PYTHON, else this one.")
    parser.add_argument("--torch-python", default=os.environ.get("TRACEGUARD_TORCH_PYTHON", sys.executable),
                        help="The torch interpreter. Defaults to $TRACEGUARD_TORCH_PYTHON, else this one.")
    parser.add_argument("--out", help="Directory for results and logs. Defaults to a new temporary one.")
    parser.add_argument("--strict", action="store_true", help="Fail on every disagreement, listed or not.")
    parser.add_argument("--write-findings", action="store_true",
                        help=f"Rewrite {FINDINGS_FILE.name} with the disagreements found.")
    parser.add_argument("--from-results", metavar="DIR",
                        help="Run nothing: judge the results.json an earlier run left in DIR.")
    parser.add_argument("--programs-dir", action="append", metavar="DIR",
                        help="Also run every DIR/*.py on each backend, with `keras.datasets` replaced by "
                             "small synthetic data (examples kept outside this repository, e.g. keras-io's).")
    parser.add_argument("--names", nargs="*", help="Only these programs (file stems).")
    parser.add_argument("pytest_args", nargs="*", help="After `--`: more pytest arguments for Keras's suite.")
    args = parser.parse_args(argv)
    if args.backends:
        args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    elif args.full:
        args.backends = list(BACKENDS)
    else:
        backend = os.environ.get("KERAS_BACKEND")
        args.backends = [backend if backend in BACKENDS else "tensorflow"]
    args.sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = [b for b in args.backends if b not in BACKENDS] + [s for s in args.sources if s not in SOURCES]
    if unknown:
        parser.error(f"--backends expects {','.join(BACKENDS)} and --sources {','.join(SOURCES)}. "
                     f"Received: {','.join(unknown)}")
    return args


def _environment(backend: str) -> dict[str, str]:
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    environment["KERAS_BACKEND"] = backend
    return environment


def _program_backend(program: pathlib.Path) -> str:
    spec = importlib.util.spec_from_file_location("corpus_check", PROGRAMS / "check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    return check.parse_expected(program)["backend"]


def _run_programs(backend: str, python: str, out: pathlib.Path, names: list[str] | None,
                  directory: pathlib.Path | None = None) -> list[dict]:
    if directory is None:  # The corpus: each program says its backend.
        programs = [p for p in sorted(PROGRAMS.glob("*.py")) if not p.name.startswith("_")
                    and p.name != "check.py" and _program_backend(p) == backend
                    and (not names or p.stem in names)]
    else:
        programs = sorted(directory.glob("*.py"))
    results = []
    for program in programs:
        source = program.stem if directory is None else f"{directory.name}/{program.stem}"
        path = out / f"{backend}.{source.replace('/', '.')}.json"
        log = path.with_suffix(".log")
        started = time.monotonic()
        command = [python, str(HERE / "observe.py"), backend, str(path),
                   *([] if directory is None else ["--offline-data"]),
                   str(program.relative_to(ROOT) if directory is None else program)]
        try:
            with open(log, "w") as file:
                code = subprocess.run(command, cwd=ROOT, env=_environment(backend), stdout=file,
                                      stderr=subprocess.STDOUT, timeout=PROGRAM_TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        result = json.loads(path.read_text()) if path.exists() else {}
        objects = result.get("objects", [])
        covered = [entry for entry in objects if in_scope(entry)]
        entry = {"backend": backend, "kind": "program", "source": source,
                 "outcome": f"exit {code}" if code != 0 else "raised" if result.get("status") else "passed",
                 "objects": len(objects),
                 "covered": len(covered), "backend_traces": sum(e["traces"] for e in covered),
                 "recorded_traces": sum(n for f in result.get("live", {}).get("functions", {}).values()
                                        for kind, n in f["kind_counts"].items() if kind != "compile"),
                 "seconds": round(time.monotonic() - started, 1),
                 "disagreements": result.get("disagreements", [])}
        if code != 0:
            entry["disagreements"] = entry["disagreements"] + [
                {"check": "run", "function": "-", "detail": f"the oracle did not finish ({code}); see {log}"}]
        print(_line(entry), flush=True)
        results.append(entry)
    return results


def _run_keras_suite(backend: str, python: str, out: pathlib.Path, modules: tuple[str, ...],
                     extra: list[str], timeout: int) -> list[dict]:
    lines = out / f"{backend}.keras-suite.jsonl"
    log = out / f"{backend}.keras-suite.log"
    lines.unlink(missing_ok=True)
    environment = _environment(backend)
    environment["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT / "tests" / "keras_suite"),
                                                 environment["PYTHONPATH"]])
    keras_root = subprocess.run([python, "-c", "import importlib.util as u, os; "
                                 "print(os.path.dirname(os.path.dirname(u.find_spec('keras').origin)))"],
                                capture_output=True, text=True, env=environment, timeout=120).stdout.strip()
    command = [python, "-m", "pytest", "-c", str(ROOT / "tests" / "keras_suite" / "pytest.ini"),
               "--rootdir", keras_root, "-p", "keras_suite_plugin", "-p", "oracle_plugin", "-q",
               "--continue-on-collection-errors", "--traceguard-mode=plain", f"--oracle-results={lines}",
               *extra, "--pyargs", *modules]
    started = time.monotonic()
    try:
        with open(log, "w") as file:
            code = subprocess.run(command, cwd=out, env=environment, stdout=file, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    results = []
    for text in (lines.read_text().splitlines() if lines.exists() else []):
        entry = json.loads(text)
        entry.update(backend=backend, kind="keras-suite")
        results.append(entry)
    tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
    print(f"keras suite on {backend}: {len(results)} tests in {time.monotonic() - started:.0f}s "
          f"(pytest exit {code}: {tail[0] if tail else ''})", flush=True)
    if code not in (0, 1) or not results:  # 1: some of Keras's tests failed; the oracle judged them.
        results.append({"backend": backend, "kind": "keras-suite", "source": "pytest",
                        "outcome": f"exit {code}",
                        "objects": 0, "covered": 0, "backend_traces": 0, "recorded_traces": 0,
                        "disagreements": [{"check": "run", "function": "-",
                                           "detail": f"pytest did not run Keras's tests; see {log}"}]})
    return results


def _line(entry: dict) -> str:
    return (f"{entry['backend']:10s} {entry['source'][:60]:60s} {entry['outcome']:8s} "
            f"objects {entry['objects']:3d} covered {entry['covered']:2d} traces backend "
            f"{entry['backend_traces']:3d} recorded {entry['recorded_traces']:3d}  "
            f"disagreements {len(entry['disagreements'])}")


def finding_key(entry: dict, disagreement: dict) -> str:
    """A disagreement's key in the open findings: backend, source, check and function, without
    paths that differ between machines (a `def` site keeps its file's name and line) and without
    a layer name's number."""
    function = re.sub(r"\(([^()]*/)?([^/()]+:\d+)\)", r"(\2)", disagreement["function"])
    # A layer's number (`lstm_10`, `dense#2`) depends on what ran before it in the process.
    function = re.sub(r"(_\d+|#\d+)+$", "", function)
    return f"{entry['backend']} | {entry['source']} | {disagreement['check']} | {function}"


def _findings(results: list[dict]) -> dict[str, str]:
    found = {}
    for entry in results:
        for disagreement in entry["disagreements"]:
            found[finding_key(entry, disagreement)] = disagreement["detail"][:300]
    return found


def _report(results: list[dict], found: dict[str, str], seconds: float, out: pathlib.Path,
            strict: bool) -> int:
    listed = json.loads(FINDINGS_FILE.read_text()) if FINDINGS_FILE.exists() else {}
    ran = {(entry["backend"], entry["source"]) for entry in results}
    new = sorted(key for key in found if key not in listed)
    fixed = sorted(key for key in listed if key not in found
                   and tuple(key.split(" | ")[:2]) in ran)
    by_check = collections.Counter(key.split(" | ")[2] for key in found)
    for backend in sorted({entry["backend"] for entry in results}):
        mine = [entry for entry in results if entry["backend"] == backend]
        for kind in ("program", "keras-suite"):
            of_kind = [entry for entry in mine if entry["kind"] == kind]
            if of_kind:
                print(f"{backend} {kind}: {len(of_kind)} runs, {sum(e['objects'] for e in of_kind)} function "
                      f"objects traced ({sum(e['covered'] for e in of_kind)} of functions traceguard "
                      "reports), "
                      f"backend traces {sum(e['backend_traces'] for e in of_kind)}, recorded "
                      f"{sum(e['recorded_traces'] for e in of_kind)}, runs with a disagreement "
                      f"{sum(bool(e['disagreements']) for e in of_kind)}")
    print(f"disagreements: {len(found)} ({', '.join(f'{n} {c}' for c, n in sorted(by_check.items()))}); "
          f"open findings listed {len(listed)}, new {len(new)}, no longer seen {len(fixed)}")
    for key in new:
        print(f"  NEW {key}: {found[key]}")
    for key in fixed:
        print(f"  FIXED (remove from {FINDINGS_FILE.name}) {key}")
    print(f"oracle: {seconds:.0f}s in all; results in {out}")
    failed = bool(found) if strict else bool(new or fixed)
    print("FAILED" if failed else "OK")
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
