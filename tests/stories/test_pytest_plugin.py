"""The pytest plugin: `@pytest.mark.max_traces(n)`, the deprecated `trace_budget`, its entry point,
its light import (`@pytest.mark.no_retrace`: tests/diagnosis/test_no_retrace.py)."""

import configparser
import importlib.metadata
import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.backend("tensorflow")

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = "_traceguard_pytest_plugin"

LAYER = textwrap.dedent("""
    import pytest
    import tensorflow as tf

    import traceguard as tg


    class Identity(tg.TraceAwareLayer):
        def call(self, inputs):
            return inputs


    def traced_layer():
        layer = Identity(name="identity")
        layer.build((None,))
        return layer, tf.function(layer)
""")


@pytest.fixture
def run_plugin(pytester, monkeypatch):
    """Runs pytest in-process on the given test module with only our plugin loaded."""
    # When traceguard is installed its entry point loads the plugin already; load it once, by path.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(source):
        pytester.makepyfile(test_module=LAYER + textwrap.dedent(source))
        return pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider")

    return run


def test_trace_budget_fixture_is_deprecated_and_still_assert_max_traces(run_plugin):
    result = run_plugin("""
        def test_within(trace_budget):
            layer, step = traced_layer()
            with trace_budget(layer, 1):
                step(tf.ones((2,)))

        def test_over(trace_budget):
            layer, step = traced_layer()
            with trace_budget(layer, 1):
                step(tf.ones((2,)))
                step(tf.ones((3,)))
    """)
    result.assert_outcomes(passed=1, failed=1, warnings=2)
    result.stdout.fnmatch_lines([
        "*AssertionError: Layer 'identity' traced 2 times inside the block, more than the 1 allowed.",
        "*changed: inputs: dim 0 2 -> 3",
    ])
    result.stdout.fnmatch_lines([
        "*DeprecationWarning: The `trace_budget` fixture is deprecated: use `from traceguard.testing "
        "import assert_max_traces` and `with assert_max_traces(layer_or_function, n): ...` instead.",
    ])


def test_max_traces_marker_fails_a_test_whose_layer_traces_too_often(run_plugin):
    result = run_plugin("""
        @pytest.mark.max_traces(1)
        def test_one_shape():
            layer, step = traced_layer()
            step(tf.ones((2,)))
            step(tf.ones((2,)))

        @pytest.mark.max_traces(1)
        def test_two_shapes():
            layer, step = traced_layer()
            step(tf.ones((2,)))
            step(tf.ones((3,)))

        def test_unmarked_is_not_limited():
            layer, step = traced_layer()
            step(tf.ones((2,)))
            step(tf.ones((3,)))
    """)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*FAILED test_module.py::test_two_shapes*",
    ])
    result.stdout.fnmatch_lines([
        "Layer 'identity' traced 2 times during the test, more than the 1 allowed.",
        "The traces of TraceAwareLayers counted, with their reasons:",
        "  layer 'identity':",
        "    #1 trace in function  (inputs=float32?2?)",
    ])


def test_max_traces_marker_counts_per_layer_and_only_during_the_test(run_plugin):
    result = run_plugin("""
        @pytest.fixture
        def warmed_up():
            layer, step = traced_layer()
            step(tf.ones((5,)))  # Traced in setup: not counted.
            return step

        @pytest.mark.max_traces(1)
        def test_two_layers_one_trace_each(warmed_up):
            warmed_up(tf.ones((6,)))
            _, other = traced_layer()
            other(tf.ones((2,)))
    """)
    result.assert_outcomes(passed=1)


def test_max_traces_marker_rejects_a_bad_budget(run_plugin):
    result = run_plugin("""
        @pytest.mark.max_traces("two")
        def test_bad():
            pass
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*`@pytest.mark.max_traces(n, on_retrace='raise')` expects one "
                                 "non-negative integer n. Received: max_traces('two')"])


def test_max_traces_marker_counts_functions_per_object_and_a_layer_once_per_trace(run_plugin):
    result = run_plugin("""
        @pytest.mark.max_traces(1)
        def test_function_retraces():
            step = tf.function(lambda x: x + 1)
            step(tf.ones((2,)))
            step(tf.ones((3,)))

        @pytest.mark.max_traces(1)
        def test_two_objects_of_one_code_trace_once_each():
            for _ in range(2):
                tf.function(lambda x: x + 1)(tf.ones((2,)))

        @pytest.mark.max_traces(1)
        def test_a_layer_twice_in_one_trace():
            layer, _ = traced_layer()
            tf.function(lambda x: layer(x) + layer(x))(tf.ones((2,)))

        @pytest.mark.max_traces(0, on_retrace="warn")
        @pytest.mark.filterwarnings("default::UserWarning")  # This process makes warnings errors.
        def test_warns():
            tf.function(lambda x: x + 1)(tf.ones((2,)))
    """)
    result.assert_outcomes(passed=3, failed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "test_module.py::test_warns",
        "*UserWarning: `<lambda>` (defined at test_module.py:*) traced 1 times during the test, more than "
        "the 0 allowed.",
    ])
    result.stdout.fnmatch_lines([
        "*FAILED test_module.py::test_function_retraces*",
    ])
    result.stdout.fnmatch_lines([
        "`<lambda>` (defined at test_module.py:*) traced 2 times during the test, more than the 1 allowed.",
    ])


def test_marker_is_registered(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest("-p", PLUGIN, "--markers")
    result.stdout.fnmatch_lines([
        "@pytest.mark.max_traces(n, on_retrace='raise'): fail the test if a traced function (tf.function, "
        "Keras step, jax.jit; per function object) or a traceguard TraceAwareLayer makes more than n graph "
        "traces*",
        "@pytest.mark.no_retrace(on_retrace='raise', allow_first_traces=True): traceguard.no_retrace() "
        "around the test*",
    ])


def test_plugin_imports_nothing_heavy_until_used(pytester, monkeypatch):
    code = (f"import sys, {PLUGIN}; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'traceguard') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT)
    assert result.stdout.strip() == "[]"
    # A whole pytest session with the plugin, whose tests use neither fixture nor marker.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_light="""
        import sys

        def test_nothing_heavy_imported():
            assert [m for m in ("tensorflow", "keras", "traceguard") if m in sys.modules] == []
    """)
    pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_entry_point_registers_the_plugin_module():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["options.entry_points"]["pytest11"].split() == ["traceguard", "=", PLUGIN]
    assert config["options"]["py_modules"].split() == [PLUGIN]
    try:
        installed = importlib.metadata.entry_points(group="pytest11")
    except Exception:  # pragma: no cover - an unusual importlib.metadata.
        installed = ()
    ours = [entry for entry in installed if entry.name == "traceguard"]
    if importlib.util.find_spec(PLUGIN) is not None and ours:  # Installed (pip install -e .).
        assert ours[0].value == PLUGIN
