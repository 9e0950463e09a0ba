"""The pytest plugin of the core tier: `tests/core/`, `_core`'s values and rules and `_reports`'
words, without any backend.

`tests/stories/test_core_tier.py` runs the tier alone in a subprocess with this plugin
(`-p core_tier_plugin`, and `--confcutdir tests/core` so that the suite's conftest, which
imports the backend, is not loaded): it refuses to import TensorFlow, JAX or Keras, so a
test that needs one fails with an `ImportError` naming it, and the session fails if one
was imported all the same. Run with the rest of the suite, the tier runs as any tests do.
"""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # `helpers`, shared with the suite.

BACKENDS = ("tensorflow", "jax", "keras", "tf_keras")
ALONE = not any(name in sys.modules for name in BACKENDS)


class _NoBackend:
    """A meta path finder that refuses the backends' modules."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] in BACKENDS:
            raise ImportError(f"The core tier imports no backend; a test imported {name!r}.")
        return None


if ALONE:
    sys.meta_path.insert(0, _NoBackend())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    imported = sorted(name for name in BACKENDS if name in sys.modules)
    if ALONE and imported:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nThe core tier imported {', '.join(imported)}.")
