"""Runs Keras's own layer tests plain, mixed with `TraceAwareMixin`, and inside `watch()`; compares.

The keras wheel ships its tests (`keras/src/layers/**/*_test.py`). This script runs a
selection of them with pytest once per mode (see `keras_suite_plugin.py`): `plain`,
then `mixin` (every `run_layer_test` class mixed with `traceguard.TraceAwareMixin`)
and `watch` (every test inside `traceguard.watch()`), and compares each mode's outcome
with the plain run's, test by test. A difference is allowed only if it is listed in
`KNOWN_DIFFERENCES` with its reason; a listed difference that no longer happens is an
error too, so the list stays true. Exits 1 on any other difference, on a module that
fails to import (in the `ci` selection), or when pytest itself fails.

Usage, from the repository root:

    python tests/keras_suite/run.py --selection ci
    python tests/keras_suite/run.py --selection full --jobs 3 --out keras-suite-results
    python tests/keras_suite/run.py --modes plain,mixin -- -k Dense

The traceguard tested is the one in this repository (its root goes first on
`PYTHONPATH`). docs/keras-test-suite.md says what is needed and what was measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODES = ("plain", "mixin", "watch")

# Test modules, as `pytest --pyargs` takes them. `ci` fits about 5 minutes for the three
# modes on two cores (docs/keras-test-suite.md has the measurements); `full` is every
# layer test, by hand: its preprocessing tests also need `grain` and `scipy`.
SELECTIONS = {
    "ci": (
        # The wrappers, whose `from_config` passes the wrapped layer positionally, are in
        # these: core/wrapper_test, rnn/bidirectional_test and rnn/time_distributed_test,
        # normalization/spectral_normalization_test.
        "keras.src.layers.core",
        "keras.src.layers.merging",
        "keras.src.layers.rnn",
        "keras.src.layers.normalization",
        "keras.src.layers.attention",
    ),
    "full": ("keras.src.layers",),
}
# Left out of `ci` (a `-k` that arguments after `--` may replace): the quantization tests, 180
# of the ci modules' 600 tests and 46% of their time, measured; they quantize a built layer's
# weights, where traceguard adds nothing the other tests of the same layers do not cover.
CI_LEFT_OUT = "not (quantiz or int4 or int8 or float8)"

# (mode, test id) -> why the outcome differs from the plain run's. Empty: every test of
# the full selection had the plain outcome in every mode when last measured.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    keras_root = _keras_root()
    out = Path(args.out or tempfile.mkdtemp(prefix="keras-suite-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.tf_keras_tests:
        modules, keras_root = (str(Path(args.tf_keras_tests).resolve()),), Path(args.tf_keras_tests).resolve()
        args.pytest_args = ["--traceguard-keras=tf_keras", *args.pytest_args]
        args.selection = "tf_keras"
    else:
        modules = SELECTIONS[args.selection]
        if args.selection == "ci":
            args.pytest_args = ["-k", CI_LEFT_OUT, *args.pytest_args]
    print(f"Keras's own tests ({args.selection}: {' '.join(modules)}) in modes {', '.join(args.modes)};"
          f" outcomes and logs in {out}", flush=True)
    results, failed = {}, False
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        runs = {mode: pool.submit(_run_pytest, mode, modules, keras_root, out, args.pytest_args)
                for mode in args.modes}
        for mode, run in runs.items():
            code, seconds = run.result()
            outcomes = out / f"{mode}.json"
            results[mode] = json.loads(outcomes.read_text()) if outcomes.exists() else {}
            print(f"{mode}: {_counts(results[mode])} in {seconds:.0f}s (pytest exit code {code})",
                  flush=True)
            if code not in (0, 1):  # 1: some test failed, which the comparison judges.
                print(f"  pytest did not run the tests; see {out / f'{mode}.log'}")
                failed = True
    print(f"{len(args.modes)} runs in {time.monotonic() - started:.0f}s, {args.jobs} at a time")
    plain = results.get("plain")
    if plain is None or not plain:
        print("No plain run to compare with: include the plain mode.")
        return 1
    failed |= _report_plain(plain, strict=args.selection == "ci")
    for mode in args.modes:
        if mode != "plain":
            failed |= _compare(mode, plain, results[mode])
    print("FAILED" if failed else "OK: every outcome equals the plain run's, or is a known difference")
    return int(failed)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selection", choices=sorted(SELECTIONS), default="ci",
                        help="Which of Keras's layer tests to run. Defaults to ci.")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"Comma-separated modes, plain first. Defaults to {','.join(MODES)}.")
    parser.add_argument("--out", help="Directory for outcomes (MODE.json) and logs (MODE.log). "
                                      "Defaults to a new temporary directory.")
    parser.add_argument("--tf-keras-tests", metavar="DIR",
                        help="Run these tf_keras tests (exported from its repository, see "
                             "docs/keras-test-suite.md) instead of a selection of Keras 3's.")
    parser.add_argument("--jobs", type=int, default=1,
                        help="How many modes run at once, each in its own process. Defaults to 1.")
    parser.add_argument("pytest_args", nargs="*", help="After `--`: more pytest arguments (-k, -x).")
    args = parser.parse_args(argv)
    args.modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = [mode for mode in args.modes if mode not in MODES]
    if args.jobs < 1:
        parser.error(f"--jobs expects a positive integer. Received: --jobs={args.jobs}")
    if unknown or not args.modes or args.modes[0] != "plain":
        parser.error(f"--modes expects plain first, then any of {', '.join(MODES[1:])}. "
                     f"Received: --modes={','.join(args.modes)}")
    return args


def _keras_root() -> Path:
    """The directory holding the installed `keras` package, found without importing it."""
    spec = importlib.util.find_spec("keras")
    if spec is None or spec.origin is None:
        sys.exit("keras is not installed: this script runs the tests its wheel ships.")
    return Path(spec.origin).parent.parent


def _run_pytest(mode: str, modules: tuple[str, ...], keras_root: Path, out: Path,
                extra: list[str]) -> tuple[int, float]:
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    command = [
        sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"),
        # Test ids relative to site-packages: "keras/src/layers/.../x_test.py::Class::test".
        "--rootdir", str(keras_root), "-p", "keras_suite_plugin", "-q",
        "--continue-on-collection-errors", f"--traceguard-mode={mode}",
        f"--traceguard-outcomes={out / f'{mode}.json'}", *extra, "--pyargs", *modules,
    ]
    for stale in (out / f"{mode}.json", out / f"{mode}.json.partial"):
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    with open(out / f"{mode}.log", "w") as log:
        code = subprocess.run(command, cwd=out, env=environment, stdout=log,
                              stderr=subprocess.STDOUT, check=False).returncode
    return code, time.monotonic() - started


def _counts(outcomes: dict[str, dict]) -> str:
    counts: dict[str, int] = {}
    for entry in outcomes.values():
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no tests"


def _report_plain(plain: dict[str, dict], strict: bool) -> bool:
    """Lists what fails without traceguard; True if modules failed to import and `strict`."""
    not_collected = {test: entry for test, entry in plain.items() if entry["outcome"] == "collection error"}
    failing = {test: entry for test, entry in plain.items() if entry["outcome"] in ("failed", "error")}
    if failing:
        print(f"Failing without traceguard ({len(failing)}), compared all the same:")
        for test, entry in sorted(failing.items()):
            print(f"  {test}: {entry['message'].splitlines()[0] if entry['message'] else ''}")
    if not_collected:
        print(f"Modules that failed to import ({len(not_collected)}):")
        for test, entry in sorted(not_collected.items()):
            print(f"  {test}: {entry['message'].strip().splitlines()[-1]}")
    return strict and bool(not_collected)


def _compare(mode: str, plain: dict[str, dict], outcomes: dict[str, dict]) -> bool:
    """Prints how `mode`'s outcomes differ from the plain run's; True if any is unexpected."""
    differences, known = [], []
    for test in sorted(set(plain) | set(outcomes)):
        before = plain.get(test, {"outcome": "not run", "message": ""})
        after = outcomes.get(test, {"outcome": "not run", "message": ""})
        if before["outcome"] == after["outcome"]:
            continue
        line = f"  {test}: plain {before['outcome']}, {mode} {after['outcome']}"
        if (mode, test) in KNOWN_DIFFERENCES:
            known.append(f"{line} (known: {KNOWN_DIFFERENCES[mode, test]})")
        else:
            message = after["message"].strip().splitlines()
            differences.append(f"{line}" + (f": {message[0]}" if message else ""))
    stale = [test for listed_mode, test in KNOWN_DIFFERENCES
             if listed_mode == mode and (test in plain or test in outcomes)
             and plain.get(test, {}).get("outcome") == outcomes.get(test, {}).get("outcome")]
    print(f"{mode} vs plain: {len(outcomes)} tests, {len(differences)} differences, "
          f"{len(known)} known, {len(stale)} listed but no longer different")
    for line in known + differences:
        print(line)
    for test in stale:
        print(f"  {test}: listed in KNOWN_DIFFERENCES but the outcome equals plain's; remove it")
    return bool(differences or stale)


if __name__ == "__main__":
    sys.exit(main())
