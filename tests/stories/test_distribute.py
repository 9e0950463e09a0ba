"""tf.distribute: MirroredStrategy replicas on two logical CPUs, in a subprocess.

Logical devices can only be configured before TensorFlow initialises its
runtime, which this test process has already done; tests/scripts/
mirrored_training.py sets them up and prints what it observed as JSON.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend("tensorflow")

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts", "mirrored_training.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def mirrored():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def graph_runs(events):
    return [(e["kind"], e["function"], e["replica"]) for e in events if e["kind"] != "symbolic"]


def test_fit_and_predict_under_two_replicas_equal_the_plain_model(mirrored):
    assert mirrored["replicas"] == 2
    traced, plain = mirrored["traced"], mirrored["plain"]
    assert traced["loss"] == plain["loss"]
    assert traced["weights"] == plain["weights"]
    assert traced["predictions"] == plain["predictions"]


def test_each_replica_run_of_a_fit_trace_is_a_trace_with_its_replica(mirrored):
    events = mirrored["traced"]["events"]
    if mirrored["keras_3"]:  # fit's step, then predict's.
        assert graph_runs(events) == [
            ("trace", "one_step_on_data", 0), ("trace", "one_step_on_data", 1),
            ("trace", "one_step_on_data_distributed", 0), ("trace", "one_step_on_data_distributed", 1),
        ]
    else:  # Keras 2 traces `train_function` again once the optimizer made its slot variables.
        assert graph_runs(events) == [
            ("trace", "train_function", 0), ("trace", "train_function", 1),
            ("variable_retrace", "train_function", 0), ("variable_retrace", "train_function", 1),
            ("trace", "predict_function", 0), ("trace", "predict_function", 1),
        ]
    # Keras splits each global batch of 8 between the two replicas.
    assert {e["signature"]["inputs"] for e in events} == {"float32[4,3]"}
    assert all(e["changes"] == [] and e["error"] is None for e in events)


def test_custom_loop_replicas_share_each_trace_kind(mirrored):
    loop = mirrored["custom_loop"]
    assert [(e["kind"], e["replica"], e["changes"]) for e in loop["events"]] == [
        ("trace", 0, []), ("trace", 1, []),
        ("variable_retrace", 0, []), ("variable_retrace", 1, []),
        ("retrace", 0, ["inputs: dim 0 8 -> 4"]), ("retrace", 1, ["inputs: dim 0 8 -> 4"]),
    ]
    assert {e["function"] for e in loop["events"]} == {"step"}
    assert loop["tracing_count"] == 3
