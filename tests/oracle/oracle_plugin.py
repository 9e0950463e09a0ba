"""A pytest plugin that runs each of Keras's own tests under the oracle (`oracle.observe`).

Loaded by `run.py` next to `tests/keras_suite/keras_suite_plugin.py` (in its `plain` mode,
for Keras's markers and `conftest` helpers) into `pytest --pyargs keras.src...`. Each test
runs inside `observe()`: the backend's own record and `traceguard.watch(trace_file=...)`;
one JSON line per test goes to `--oracle-results`: the test's id and outcome, its function
objects (all, and those traceguard's reports cover), the backend's traces of those, and
the disagreements found.

`--oracle-jit-compile` makes a model's `jit_compile="auto"` resolve to True, as it does on JAX:
on torch it resolves to False (Keras runs the step eagerly, nothing compiles), so Keras's own
tests, unchanged otherwise, compile their steps with `torch.compile` only with it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle import in_scope, observe  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("traceguard oracle").addoption(
        "--oracle-results", metavar="PATH", help="Append one JSON line per test to this file.")
    parser.getgroup("traceguard oracle").addoption(
        "--oracle-jit-compile", action="store_true",
        help="Resolve a model's `jit_compile=\"auto\"` to True (on torch, Keras resolves it to False).")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--oracle-results")
    if path:
        config.pluginmanager.register(_Oracle(path), "traceguard_oracle")
    if config.getoption("--oracle-jit-compile"):
        from keras.src.trainers.trainer import Trainer

        # keras/src/trainers/trainer.py: `compile(jit_compile="auto")` and a model never compiled
        # ask `_resolve_auto_jit_compile()`; a model that cannot compile still falls back (its setter).
        Trainer._resolve_auto_jit_compile = lambda self: True


class _Oracle:
    def __init__(self, path: str) -> None:
        self.path = path
        from keras.src.backend import backend

        self.backend = backend()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        result: dict[str, Any] = {}
        outcome = "passed"
        with tempfile.TemporaryDirectory(prefix="traceguard-oracle-") as directory:
            try:
                with observe(self.backend, result, directory):
                    return (yield)
            except BaseException:
                outcome = "failed"
                raise
            finally:
                self._write(item.nodeid, outcome, result)

    def _write(self, test: str, outcome: str, result: dict[str, Any]) -> None:
        objects = result.get("objects", [])
        covered = [entry for entry in objects if in_scope(entry)]
        line = {"source": test, "outcome": outcome, "objects": len(objects), "covered": len(covered),
                "backend_traces": sum(entry["traces"] for entry in covered),
                "recorded_traces": sum(n for function in result.get("live", {}).get("functions", {}).values()
                                       for kind, n in function["kind_counts"].items() if kind != "compile"),
                "seconds": result.get("seconds"),
                "disagreements": result.get("disagreements", [])}
        with open(self.path, "a") as file:
            file.write(json.dumps(line) + "\n")
