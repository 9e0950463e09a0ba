"""The core tier runs without any backend: `_core` and `_reports` import none."""

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.backend("tensorflow", "jax"), pytest.mark.without_keras]

TESTS = pathlib.Path(__file__).parent.parent


def test_the_core_tier_passes_with_no_backend_imported():
    # Alone, with the tier's plugin: it refuses TensorFlow, JAX and Keras.
    path = os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "core_tier_plugin",
         "--confcutdir", str(TESTS / "core"),
         "-W", "error", str(TESTS / "core")],
        capture_output=True, text=True, timeout=300, cwd=TESTS.parent,
        env={**os.environ, "PYTHONPATH": path})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert " passed" in completed.stdout and "imported" not in completed.stdout
