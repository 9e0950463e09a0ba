"""`import traceguard` loads nothing heavy; each public name loads on first use."""

import os
import pathlib
import subprocess
import sys

import pytest

import traceguard

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_python(code):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_import_traceguard_imports_no_backend_until_a_public_name_is_used():
    code = ("import sys, traceguard\n"
            "print('tensorflow' in sys.modules or 'jax' in sys.modules)\n"
            "traceguard.TraceAwareLayer\n"
            "print('tensorflow' in sys.modules or 'jax' in sys.modules)\n")
    assert run_python(code) == ["False", "True"]


def test_every_public_name_loads_and_is_listed_by_dir():
    for name in traceguard.__all__:
        assert getattr(traceguard, name) is not None
    assert set(traceguard.__all__) <= set(dir(traceguard))
    assert traceguard.testing.__name__ == "traceguard.testing"
    assert traceguard.TraceAwareLayer.__module__.startswith("traceguard.")


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError) as raised:
        getattr(traceguard, "TraceAwareLayers")  # noqa: B009
    assert str(raised.value) == "module 'traceguard' has no attribute 'TraceAwareLayers'"
