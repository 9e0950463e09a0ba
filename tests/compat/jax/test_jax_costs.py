"""What a `jax.jit` miss costs (`_compat.jax.calls`): phases from `jax.monitoring`, the whole
miss, and the persistent compilation cache, on real calls.

When one of these fails after a JAX upgrade, `pjit._infer_params`, `pjit._run_python_pjit`
or the monitoring events moved: `traceguard/_compat/jax/calls.py` needs a new branch.
"""

import inspect
import json
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest
from helpers import record_kind
from jax._src import dispatch, pjit
from jax._src import monitoring as jax_monitoring

import traceguard as tg
from traceguard._compat import _function_calls, _function_tracing
from traceguard._compat.jax import calls as _jax_calls
from traceguard._record import observers as _observers
from traceguard._record.functions import FunctionRecords

pytestmark = pytest.mark.backend("jax")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # The checkout.


@pytest.fixture
def completed():
    records, done = FunctionRecords(), []

    def on_complete(tracing):  # Each record with its cost, beside it.
        completed = records.on_complete(tracing)
        if completed is not None and not completed[0].library_function:
            done.append(completed)

    with _observers.listening_to_traces(records.on_trace, on_complete):
        yield done
    assert not _function_tracing.is_installed()


def deep(x):
    """A body whose compilation takes several times its trace."""
    for _ in range(40):
        x = jnp.sin(x) @ x + jnp.cos(x)
    return x


def fresh():
    """A jitted function of its own: JAX shares traces between jits of one Python function."""
    def step(x):
        return deep(x)
    return jax.jit(step)


def test_the_hooked_internals_are_where_this_jax_misses():
    assert tuple(inspect.signature(_jax_calls._INFER_PARAMS).parameters) == ("fun", "ji", "args", "kwargs")
    assert tuple(inspect.signature(_jax_calls._RUN_PYTHON_PJIT).parameters) == (
        "p", "args_flat", "fun", "args", "kwargs")
    assert {"_infer_params", "_run_python_pjit"} <= set(_jax_calls._cache_miss_code.co_names)
    assert (dispatch.JAXPR_TO_MLIR_MODULE_EVENT, dispatch.BACKEND_COMPILE_EVENT) == (
        "/jax/core/compile/jaxpr_to_mlir_module_duration", "/jax/core/compile/backend_compile_duration")


def test_listening_patches_in_the_hooks_and_leaving_removes_every_one():
    records = FunctionRecords()
    with _observers.listening_to_traces(records.on_trace, records.on_complete):
        assert pjit._infer_params is not _jax_calls._INFER_PARAMS
        assert _jax_calls._on_duration in jax_monitoring._event_duration_secs_listeners
        fresh()(jnp.ones((3, 3)))
    assert pjit._infer_params is _jax_calls._INFER_PARAMS
    assert pjit._run_python_pjit is _jax_calls._RUN_PYTHON_PJIT
    assert _jax_calls._on_duration not in jax_monitoring._event_duration_secs_listeners
    assert _jax_calls._on_event not in jax_monitoring._event_listeners
    assert not _function_tracing.is_installed()
    assert _function_calls.current_call() is None


def test_phases_come_from_jax_monitoring_with_the_compilations_jax_reports(completed):
    step, inputs = fresh(), [jnp.ones((4, 4)), jnp.ones((4, 4)), jnp.ones((5, 5))]
    reported = []  # What JAX reports of each call's compilation, beside traceguard's listener.

    def on_duration(event, seconds, **_):
        if event == dispatch.BACKEND_COMPILE_EVENT:
            reported.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for x in inputs:  # The second call is a hit: nothing recorded.
            step(x)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    (first, first_cost), (retrace, retrace_cost) = completed
    assert [record_kind(first), record_kind(retrace)] == ["first", "retrace"]
    assert [cost.phases["compile"] for cost in (first_cost, retrace_cost)] == pytest.approx(reported)
    for cost in (first_cost, retrace_cost):
        assert set(cost.phases) == {"trace", "lower", "compile", "first_call"}
        assert cost.miss >= sum(cost.phases.values())
        assert cost.persistent_cache is None


def test_lower_ends_the_call_at_the_trace(completed):
    fresh().lower(jnp.ones((3, 3)))
    ((_, cost),) = completed
    assert set(cost.phases) == {"trace"}
    assert cost.miss is not None and cost.miss >= cost.phases["trace"]


_CACHED_RUN = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import traceguard as tg
    sys.path[:0] = sys.argv[2:]  # This module, and `helpers` beside the suite's conftest.
    from test_jax_costs import deep

    step = jax.jit(deep)
    with tg.watch() as explanation:
        step(jnp.ones((4, 4)))
        step(jnp.ones((5, 5)))
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "deep"]
    print(explanation.summary(full=True).splitlines()[5])
    print(json.dumps([[event.kind.value, event.persistent_cache, event.cache_saved_s,
                       event.phases.get("compile")] for event in runs.events]))
""")


def test_a_second_process_is_served_by_the_persistent_cache(tmp_path):
    def run():
        result = subprocess.run([sys.executable, "-c", _CACHED_RUN, str(tmp_path / "cache"), HERE,
                                 os.path.dirname(os.path.dirname(HERE))],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "KERAS_BACKEND": "jax"})
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1]), result.stdout.splitlines()[-2]

    (cold, cold_line), (warm, warm_line) = run(), run()
    assert cold_line == "Persistent compilation cache: 0 of 2 compilations read from it (saved 0.00 s); " \
        "2 still compiled and written."
    assert re.fullmatch(r"Persistent compilation cache: 2 of 2 compilations read from it \((saved|cost) "
                        r"[\d.]+ s\); 0 still compiled and written\.", warm_line), warm_line
    assert [(kind, cache, saved) for kind, cache, saved, _ in cold] == [("trace", "miss", None),
                                                                      ("retrace", "miss", None)]
    assert [(kind, cache) for kind, cache, _, _ in warm] == [("trace", "hit"), ("retrace", "hit")]
    assert all(isinstance(saved, float) for _, _, saved, _ in warm)
    # The read took less than compiling did in the cold process.
    assert sum(compile_s for *_, compile_s in warm) < sum(compile_s for *_, compile_s in cold)


def test_watch_gives_the_phases_on_function_events():
    step = fresh()
    with tg.watch() as explanation:
        step(jnp.ones((4, 4)))
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "step"]
    (event,) = runs.events
    assert set(event.phases) == {"trace", "lower", "compile", "first_call"}
    assert event.phases["trace"] == event.duration_s
    assert event.miss_s >= sum(event.phases.values())
    # The phase that took longest, whichever it was on this machine (a GC pause can land in the trace).
    assert runs.dominant_phase() == max(event.phases, key=event.phases.__getitem__)
    assert runs.cost_seconds == event.miss_s


def test_a_trace_file_carries_the_phases_and_reports_render_them_without_jax(tmp_path):
    step = fresh()
    path = tmp_path / "jax.jsonl"
    with tg.watch(trace_file=str(path)):
        step(jnp.ones((4, 4)))
        step(jnp.ones((5, 5)))
    code = ("import sys\nfrom traceguard._cli import main\ncode = main(sys.argv[1:])\n"
            "assert not {'tensorflow', 'keras', 'jax'} & set(sys.modules), sorted(sys.modules)\n"
            "sys.exit(code)\n")
    result = subprocess.run([sys.executable, "-c", code, "report", "--full", str(path)],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": ROOT})
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("Function `step`"))
    # Compilation takes the most here, so it comes first.
    assert re.fullmatch(r"Function `step` \(.*\): 2 traces: 1 trace, 1 retrace; [\d.]+ s compiling, .*"
                        r"[\d.]+ s tracing.*; misses took [\d.]+ s, [\d.]+ s of it avoidable", header), header
    assert re.search(r"#2 retrace  \(x=float32\[5,5\]\), called at test_jax_costs.py:\d+  took \d+ ms: "
                     r"\d+ ms compiling", result.stdout)


def test_a_committed_argument_compiles_again_without_a_trace():
    step = fresh()
    with tg.watch() as explanation:
        step(jnp.ones(3))
        step(jax.device_put(jnp.ones(3), jax.devices()[0]))  # Committed: another executable.
    (runs,) = [runs for runs in explanation.functions.values() if runs.function == "step"]
    assert [event.kind.value for event in runs.events] == ["trace", "compile"]
    compiled = runs.events[1]
    device = jax.devices()[0]
    assert ({name: str(spec) for name, spec in compiled.signature.items()},
            tuple(map(str, compiled.changes))) == (
        {"x": "float32[3]"},
        (f"x: sharding uncommitted -> committed to {device.platform}:{device.id}",))  # #38
    assert set(compiled.phases) == {"lower", "compile", "first_call"}
    assert compiled.reason.startswith("`jax.jit` `step` compiled again for a signature it had traced")
    assert (runs.traces, runs.compilations) == (1, 1)
