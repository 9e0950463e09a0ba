"""A pytest plugin that runs Keras's own layer tests plain, mixed, or watched.

`run.py` loads it into pytest runs of the tests the keras wheel ships
(`pytest --pyargs keras.src.layers...`), once per mode:

- `plain`: Keras's tests as they are, the reference.
- `mixin`: every `layer_cls` given to `keras.src.testing.TestCase.run_layer_test`
  is replaced by `type(name, (traceguard.TraceAwareMixin, layer_cls), {})`,
  registered with `keras.saving.register_keras_serializable` as a user would.
  `run_layer_test` checks construction, `get_config` and serialization round
  trips, symbolic and eager calls, masking, training and mixed precision.
- `watch`: each test runs inside `traceguard.watch()`, and afterwards every Keras
  layer class must have its own `call` back.

Each run writes every test's outcome to a JSON file that `run.py` compares with
the plain run's, test by test. The plugin also stands in for Keras's repository
`conftest.py`, which the wheel does not ship: its markers, and the
`skip_if_backend` helper some test modules import from `conftest`.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest

MODES = ("plain", "mixin", "watch")
KERASES = ("keras", "tf_keras")
# The package the mixed classes are registered under: "traceguard_suite>Dense".
PACKAGE = "traceguard_suite"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("traceguard keras suite")
    group.addoption("--traceguard-mode", choices=MODES, default="plain",
                    help="How Keras's tests run: as they are, with every run_layer_test class "
                         "mixed with TraceAwareMixin, or inside traceguard.watch().")
    group.addoption("--traceguard-outcomes", metavar="PATH",
                    help="Write each test's outcome to this JSON file.")
    group.addoption("--traceguard-keras", choices=KERASES, default="keras",
                    help="Whose tests run: the keras wheel's, or tf_keras's from its repository "
                         "(mixin mode then mixes the classes given to test_utils.layer_test).")


def skip_if_backend(given_backend: str, reason: str) -> pytest.MarkDecorator:
    """The helper Keras's test modules import from Keras's repository `conftest.py`."""
    from keras.src.backend import backend

    return pytest.mark.skipif(backend() == given_backend, reason=reason)


def pytest_configure(config: pytest.Config) -> None:
    # Markers that Keras's repository conftest.py registers; on the TensorFlow
    # backend neither skips a test on one CPU device except `multi_device`.
    config.addinivalue_line("markers", "requires_trainable_backend: needs a backend with a trainer")
    config.addinivalue_line("markers", "multi_device: needs several devices")
    # `reshaping/flatten_test.py` and others do `from conftest import skip_if_backend`.
    shim = types.ModuleType("conftest", "Keras's repository conftest.py helpers (keras_suite).")
    shim.skip_if_backend = skip_if_backend  # type: ignore[attr-defined]
    sys.modules.setdefault("conftest", shim)
    mode = config.getoption("--traceguard-mode")
    if mode == "mixin":
        if config.getoption("--traceguard-keras") == "tf_keras":
            _mix_tf_keras_layer_test()
        else:
            _mix_run_layer_test()
    elif mode == "watch":
        config.pluginmanager.register(_Watcher(), "traceguard_watcher")
    config.pluginmanager.register(_Outcomes(config.getoption("--traceguard-outcomes")),
                                  "traceguard_outcomes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # As Keras's conftest.py: `multi_device` tests run on JAX with several devices only.
    from keras.src.backend import backend

    if backend() == "jax":
        import jax

        if jax.device_count() > 1:
            return
    for item in items:
        if "multi_device" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="Requires multiple devices"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    import traceguard
    from traceguard import _compat

    return [f"traceguard keras suite: mode {config.getoption('--traceguard-mode')}, "
            f"{config.getoption('--traceguard-keras')}'s tests, traceguard {traceguard.__file__}, "
            f"{_compat.describe_versions()}"]


# --- mixin mode -------------------------------------------------------------------------
_mixed: dict[type, type] = {}


def mixed_class(layer_cls: Any, keras: Any = None) -> Any:
    """`layer_cls` with `TraceAwareMixin` mixed in and registered, once per class.

    `keras` is the namespace `layer_cls` belongs to: `keras` (the default) or `tf_keras`.
    """
    import traceguard

    if keras is None:
        import keras
    if not (isinstance(layer_cls, type) and issubclass(layer_cls, keras.layers.Layer)) \
            or issubclass(layer_cls, traceguard.TraceAwareMixin):
        return layer_cls
    if layer_cls not in _mixed:
        mixed = type(layer_cls.__name__, (traceguard.TraceAwareMixin, layer_cls), {})
        # Tests define classes of one name more than once (in each test, or per
        # parameter): each mixed class gets a registered name of its own.
        name, number = layer_cls.__name__, 1
        while f"{PACKAGE}>{name}" in keras.saving.get_custom_objects():
            number += 1
            name = f"{layer_cls.__name__}_{number}"
        _mixed[layer_cls] = keras.saving.register_keras_serializable(PACKAGE, name)(mixed)
    return _mixed[layer_cls]


def _mix_run_layer_test() -> None:
    from keras.src.testing import TestCase

    original = TestCase.run_layer_test

    def run_layer_test(self: Any, layer_cls: Any, *args: Any, **kwargs: Any) -> Any:
        return original(self, mixed_class(layer_cls), *args, **kwargs)

    # The process runs one mode: the patch stays for its lifetime.
    TestCase.run_layer_test = run_layer_test


def _mix_tf_keras_layer_test() -> None:
    # tf_keras's tests call `test_utils.layer_test(layer_cls, kwargs=..., ...)`, its
    # `run_layer_test`: construction, config round trip, functional and Sequential models.
    import tf_keras
    from tf_keras.src.testing_infra import test_utils

    original = test_utils.layer_test

    def layer_test(layer_cls: Any, *args: Any, **kwargs: Any) -> Any:
        return original(mixed_class(layer_cls, tf_keras), *args, **kwargs)

    test_utils.layer_test = layer_test


# --- watch mode -------------------------------------------------------------------------
class _Watcher:
    """Runs each test inside `traceguard.watch()`, then checks every class was restored."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        import traceguard
        from traceguard import _compat
        from traceguard._diagnosis import instrument as _instrument

        def calls() -> dict[type, Any]:
            classes = _instrument.layer_classes(_compat.loaded_layer_bases())
            return {cls: (cls.__dict__.get("call"), cls.__dict__.get("__init_subclass__"))
                    for cls in classes}

        before = calls()
        try:
            with traceguard.watch():
                result = yield
        finally:
            changed = [cls.__qualname__ for cls, methods in before.items()
                       if (cls.__dict__.get("call"), cls.__dict__.get("__init_subclass__")) != methods]
        if changed:
            raise AssertionError(f"traceguard.watch() did not restore: {', '.join(changed)}")
        return result


# --- outcomes ---------------------------------------------------------------------------
class _Outcomes:
    """Each test's outcome, with the failure's one-line message.

    One of `passed`, `failed`, `skipped`, `xfailed`, `xpassed`, `error` (setup or
    teardown failed) or `collection error` (for a module).
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.outcomes.setdefault(report.nodeid, {"outcome": "passed", "message": "",
                                                         "seconds": 0.0})
        entry["seconds"] = round(entry["seconds"] + report.duration, 3)
        if hasattr(report, "wasxfail"):
            entry["outcome"] = "xfailed" if report.skipped else "xpassed"
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
        elif report.failed and entry["outcome"] in ("passed", "skipped"):
            entry["outcome"] = "failed" if report.when == "call" else "error"
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["message"] = (crash.message if crash is not None else str(report.longrepr))[:500]
        if report.when == "teardown" and self.path:
            # Also one line per test as it ends, so an interrupted run still tells.
            with open(f"{self.path}.partial", "a") as file:
                file.write(json.dumps({report.nodeid: entry}) + "\n")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = {"outcome": "collection error",
                                            "message": str(report.longrepr)[-500:], "seconds": 0.0}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.path:
            with open(self.path, "w") as file:
                json.dump(self.outcomes, file, indent=0, sort_keys=True)
