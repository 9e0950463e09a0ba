"""MirroredStrategy on two logical CPUs, in a subprocess (tests/scripts/distributed_keys.py): a
library's functions built through `get_concrete_function` are no retraces, and a replica's device
in a retrace's key reads as a device, not an object's address."""

import json
import os
import subprocess
import sys

import pytest

from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts", "distributed_keys.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def observed():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_iterating_a_distributed_dataset_reports_no_retrace(observed):
    dataset = observed["dataset"]
    assert dataset["batches"] == 16
    # tf.data's multi-device iterator traces its functions anew for every iteration of the
    # dataset (6 per device; 5 on TF 2.12, measured), each asked for by `get_concrete_function`:
    # TensorFlow does not count them towards its retracing warning, and neither is reported.
    per_device = 5 if _compat.TF_VERSION <= (2, 12) else 6
    assert dataset["traced"] == 4 * 2 * per_device and dataset["requested"] == dataset["traced"]
    assert dataset["reported"] == {}


def test_a_replica_s_device_in_the_key_reads_as_a_device(observed):
    replicas = observed["replicas"]
    assert replicas["kinds"] == ["trace", "retrace"] and replicas["tracing_count"] == 2
    assert replicas["changes"][1] == ["device_functions: /job:localhost/replica:0/task:0/device:CPU:0 -> "
                                      "/job:localhost/replica:0/task:0/device:CPU:1 (tracing context)"]
    assert "object at" not in json.dumps(replicas)
    assert "traces a function once per replica device by design" in replicas["hints"][1]
