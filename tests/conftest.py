import ast
import dataclasses
import os
import pathlib
import re
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

import traceguard as tg  # noqa: E402
from traceguard import _compat  # noqa: E402
from traceguard._compat import _function_tracing  # noqa: E402
from traceguard._record import observers as _observers  # noqa: E402
from traceguard._record.functions import FunctionRecords  # noqa: E402

if _compat.BACKEND == "tensorflow":
    import tensorflow as tf

# --- backends ---------------------------------------------------------------------------
# A test module names the backends it runs on with the `backend` marker (setup.cfg):
# `pytestmark = pytest.mark.backend("jax")`, or `backend("tensorflow", "jax")` for either.
# An unmarked module runs on TensorFlow, the default backend; the core tier (`tests/core/`),
# which imports no backend, on any. The marker is read from the module's source, so a module
# for another backend is reported as skipped, never imported (TensorFlow may be absent where
# Keras runs on JAX). A test function or class may narrow its module's backends with the
# same marker.
DEFAULT_BACKENDS = ("tensorflow",)
ANY_BACKEND = None
TESTS = pathlib.Path(__file__).resolve().parent


def _backend_mark(node):
    """The backends named by `pytest.mark.backend(...)` in this expression, or None."""
    marks = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    for mark in marks:
        if (isinstance(mark, ast.Call) and isinstance(mark.func, ast.Attribute)
                and mark.func.attr == "backend"):
            return tuple(ast.literal_eval(argument) for argument in mark.args)
    return None


def backends_of_module(path):
    """The backends a test module runs on, read from its `pytestmark` without importing it,
    or None for any."""
    path = pathlib.Path(path).resolve()
    if path.parent == TESTS / "core":
        return ANY_BACKEND
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id == "pytestmark"
                                                for target in node.targets):
            named = _backend_mark(node.value)
            if named is not None:
                return named
    return DEFAULT_BACKENDS


def _needs(backends):
    names = " or ".join(f"the {name}" for name in backends)
    return names + (" backend" if len(backends) == 1 else " backends")


class _OtherBackendModule(pytest.Module):
    """A test module for another backend: reported as skipped, never imported."""

    def collect(self):
        pytest.skip(f"needs {_needs(backends_of_module(self.path))}; "
                    f"Keras runs on {_compat.BACKEND} here")


# --- Keras ---------------------------------------------------------------------------------
# Where no Keras imports (plain JAX, TensorFlow without Keras), only the modules marked
# `pytestmark = pytest.mark.without_keras` (read from the source, as the backend) and the
# core tier run: the others are reported as skipped, never imported.
HAS_KERAS = _compat.DEFAULT_FLAVOR is not None


def runs_without_keras(path):
    """Whether a test module runs where no Keras imports: the core tier, or marked `without_keras`."""
    path = pathlib.Path(path).resolve()
    if path.parent == TESTS / "core":
        return True
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(isinstance(node, ast.Assign) and "without_keras" in ast.unparse(node.value)
               and any(isinstance(target, ast.Name) and target.id == "pytestmark"
                       for target in node.targets)
               for node in tree.body)


def _why_no_keras():
    return _compat.KERAS_UNAVAILABLE or f"Keras is not installed here ({_compat.describe_versions()})"


class _KerasModule(pytest.Module):
    """A test module that needs Keras, where none imports: reported as skipped, never imported."""

    def collect(self):
        pytest.skip(f"needs Keras: {_why_no_keras()}")


def pytest_pycollect_makemodule(module_path, parent):
    backends = backends_of_module(module_path)
    if backends is not None and _compat.BACKEND not in backends:
        return _OtherBackendModule.from_parent(parent, path=module_path)
    if not HAS_KERAS and not runs_without_keras(module_path):
        return _KerasModule.from_parent(parent, path=module_path)
    return None


def _skip_other_backends(items):
    """Tests whose own `backend` marker (on the function or class) excludes this backend."""
    for item in items:
        marker = item.get_closest_marker("backend")
        if marker is not None and _compat.BACKEND not in marker.args:
            item.add_marker(pytest.mark.skip(
                reason=f"needs {_needs(marker.args)}; Keras runs on {_compat.BACKEND} here"))


# The Keras that `traceguard.TraceAwareLayer` follows (`tf.keras`); None without Keras.
keras = _compat.keras


if HAS_KERAS:
    class SeedLayer(tg.TraceAwareLayer):
        """The layer of the question "why does tf.function trace my layer twice?"."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    class PlainSeedLayer(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)
else:  # Plain JAX or TensorFlow: the modules that import these are skipped.
    SeedLayer = PlainSeedLayer = None


@pytest.fixture
def seed_input():
    return tf.random.uniform([60, 28, 28], seed=1)


def kinds(layer):
    return [event.kind.value for event in layer.trace_log]


# TensorFlow's C++ logging (absl) writes to fd 2 on its own, once per process: on TF 2.15
# XLA's first compilation logs "Compiled cluster using XLA!", after absl's preamble.
_NATIVE_LOG_LINE = re.compile(
    r"[IWEF]\d{4} \d\d:\d\d:[\d.]+ +\d+ [\w./-]+:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$")


def output_lines(capfd):
    """Lines written to stdout since the last read, by Python or by tf.print (fd 1); no stderr.

    Stderr may hold only TensorFlow's own C++ log lines.
    """
    captured = capfd.readouterr()
    assert [line for line in captured.err.splitlines() if not _NATIVE_LOG_LINE.match(line)] == []
    return captured.out.splitlines()


# --- Keras flavors ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Flavor:
    """One Keras the tests run on, with the trace-aware base class and seed layers for it."""

    name: str  # "keras3", "tf_keras" or "keras2" (tf.keras on TF 2.12-2.15).
    version: tuple  # The Keras version, (major, minor).
    keras: types.ModuleType
    TraceAwareLayer: type
    SeedLayer: type
    PlainSeedLayer: type

    @property
    def is_keras_3(self):
        return self.name == "keras3"

    def pick(self, keras3, keras2):
        """The expected value for this flavor: Keras 3's or Keras 2's."""
        return keras3 if self.is_keras_3 else keras2

    def __str__(self):
        return self.name


def _seed_classes(flavor_keras, base):
    class FlavorSeedLayer(base):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = flavor_keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    class FlavorPlainSeedLayer(flavor_keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = flavor_keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    return FlavorSeedLayer, FlavorPlainSeedLayer


def _available_flavors():
    """The default Keras, then any other one importable here (tf_keras, Keras 3)."""
    if not HAS_KERAS:
        return []
    flavors = [(_compat.DEFAULT_FLAVOR, tg.TraceAwareLayer)]
    try:
        import traceguard.keras2

        if traceguard.keras2.keras is not keras:
            flavors.append((_compat.keras2_flavor(), traceguard.keras2.TraceAwareLayer))
    except ImportError:
        pass
    if not _compat.IS_KERAS_3:
        try:
            keras3 = _compat.keras3_flavor()
        except ImportError:
            pass
        else:
            flavors.append((keras3, type("TraceAwareLayer", (tg.TraceAwareMixin, keras3.layer_base), {})))
    return [Flavor(flavor.name, _compat.parse_version(flavor.version), flavor.keras, base,
                   *_seed_classes(flavor.keras, base))
            for flavor, base in flavors]


FLAVORS = _available_flavors()
# The Keras `tf.keras` is, for tests of features that follow it (watch, TraceMonitor, the CLI).
DEFAULT = FLAVORS[0] if FLAVORS else None


@pytest.fixture(params=FLAVORS, ids=str)
def keras_flavor(request):
    """Runs the test once per Keras importable here."""
    return request.param


# Tests written against Keras 3's behaviour whose Keras 2 expectations are not measured
# yet (an explanation's HTML timeline). They skip when tf.keras is Keras 2
# instead of failing on Keras 3 numbers.
KERAS_3_ONLY = {
    "test_report_outputs.py": {"test_explanation_to_html_writes_the_timeline_of_each_layer"},
}


def pytest_collection_modifyitems(config, items):
    _skip_other_backends(items)
    if _compat.IS_KERAS_3 or not HAS_KERAS:
        return
    reason = (f"written against Keras 3; its Keras 2 expectations are not measured yet "
              f"(tf.keras is {_compat.DEFAULT_FLAVOR.describe()} here)")
    for item in items:
        if getattr(item, "originalname", item.name) in KERAS_3_ONLY.get(item.path.name, ()):
            item.add_marker(pytest.mark.skip(reason=reason))


# --- leftovers ----------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_observer_left_installed():
    """Fails a test that leaves an observer or the function-trace hook installed: the next test
    in the same process would be watched by it (a test-order bug that once cost a session)."""
    from traceguard._record import observers

    before = (observers.observers, observers.trace_listeners)
    yield
    after = (observers.observers, observers.trace_listeners)
    if after != before:
        for observer in observers.observers:
            if all(observer is not kept for kept in before[0]):
                observers.remove_observer(observer)
        for listener, _ in observers.trace_listeners:
            if all(listener is not kept for kept, _ in before[1]):
                observers.remove_trace_listener(listener)
        pytest.fail(f"the test left installed: observers {after[0]!r}, trace listeners {after[1]!r}")


# --- function records ---------------------------------------------------------------------
@pytest.fixture
def records():
    """`FunctionRecords` fed by the trace hook while the test runs (compat's trace-hook tests)."""
    records = FunctionRecords()
    with _observers.listening_to_traces(records.on_trace):
        yield records
    assert not _function_tracing.is_installed()


# --- output -------------------------------------------------------------------------------
BROWSER_ARTIFACTS = []  # Files the browser tests keep, listed once after the run.


def pytest_terminal_summary(terminalreporter):
    if BROWSER_ARTIFACTS:
        terminalreporter.write_line(f"browser artifacts ({len(BROWSER_ARTIFACTS)}): "
                                    f"{os.path.dirname(BROWSER_ARTIFACTS[0])}")
