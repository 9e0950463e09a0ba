"""A real `tf.distribute.MultiWorkerMirroredStrategy` job: two worker processes on localhost, each with
its TF_CONFIG and the same command (tests/scripts/multi_worker.py), each writing trace files named and
labelled by its worker; `compare` says whether they traced alike and names the one that did not.

Every worker has a deadline and is killed past it, so a hang fails the test instead of stalling CI.
"""

import io
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from traceguard import _compat
from traceguard._diagnosis.compare_files import compare_files
from traceguard._diagnosis.trace_file_reader import read_trace_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "scripts" / "multi_worker.py"
DEADLINE_S = 120

pytestmark = [
    pytest.mark.backend("tensorflow"),
    pytest.mark.slow, pytest.mark.multi_process,
    # Two TensorFlow processes and their collectives take 10-40 s of a two-core machine: run on the
    # newest TensorFlow only (in CI, the tf2.21-keras3 job: the one TF 2.21 job with -m ""), for time.
    pytest.mark.skipif(_compat.TF_VERSION < (2, 21),
                       reason="multi-worker jobs run on TensorFlow >= 2.21 only"),
]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("localhost", 0))
    ports = [each.getsockname()[1] for each in sockets]
    for each in sockets:
        each.close()
    return ports


def run_job(directory, arguments_per_worker):
    """Starts one process per worker (TF_CONFIG for each) and waits for all; kills all past the deadline.

    Output goes to files: a worker blocked on a full pipe would block the others in their collectives.
    """
    addresses = [f"localhost:{port}" for port in free_ports(len(arguments_per_worker))]
    processes, logs = [], []
    for index, arguments in enumerate(arguments_per_worker):
        config = json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}})
        env = {**os.environ, "TF_CONFIG": config, "TF_CPP_MIN_LOG_LEVEL": "3",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        log = open(directory / f"worker-{index}.log", "w+")  # noqa: SIM115 (closed below)
        logs.append(log)
        command = [sys.executable, str(SCRIPT), str(directory), *map(str, arguments)]
        processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
    started = time.monotonic()
    try:
        for process in processes:
            process.wait(timeout=max(0.0, started + DEADLINE_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        hung = [index for index, process in enumerate(processes) if process.poll() is None]
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        outputs = []
        for log in logs:
            log.seek(0)
            outputs.append(log.read())
            log.close()
    tails = "\n".join(output[-3000:] for output in outputs)
    assert not hung, f"workers {hung} did not finish in {DEADLINE_S} s:\n{tails}"
    for index, (process, output) in enumerate(zip(processes, outputs)):
        assert process.returncode == 0, f"worker {index} failed:\n{output[-3000:]}"
    return time.monotonic() - started, [line for output in outputs for line in output.splitlines()
                                        if line.startswith("seconds:")]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One job: worker 0's last batch has 8 rows, worker 1's 6."""
    directory = tmp_path_factory.mktemp("job")
    seconds, timings = run_job(directory, [[8], [6]])
    print(f"two-worker job: {seconds:.1f} s;", "; ".join(timings))
    return directory


def run_compare(*paths):
    out, err = io.StringIO(), io.StringIO()
    code = compare_files([str(path) for path in paths], out, err)
    return code, out.getvalue(), err.getvalue()


def test_each_worker_writes_files_named_and_labelled_by_its_worker(job):
    assert sorted(path.name for path in job.glob("*.jsonl")) == sorted(
        [f"{part}-worker-{index}.jsonl" for part in ("agree", "differ") for index in (0, 1)]
        + ([] if _compat.IS_KERAS_3 else ["fit-worker-0.jsonl", "fit-worker-1.jsonl"]))
    trace_file = read_trace_file(str(job / "agree-worker-1.jsonl"))
    assert (trace_file.label, trace_file.worker.source, trace_file.worker.count) == \
        ("worker-1", "TF_CONFIG", 2)


def test_workers_given_the_same_work_agree(job):
    code, out, err = run_compare(job / "agree-worker-0.jsonl", job / "agree-worker-1.jsonl")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "traceguard compare: 2 workers of one job (worker-0, worker-1; their trace files name them)",
        "All 2 workers made the same traces: 1 function, 1 trace each."]


def test_the_worker_given_a_batch_of_another_shape_is_named_with_the_function_and_the_change(job):
    code, out, err = run_compare(job / "differ-worker-0.jsonl", job / "differ-worker-1.jsonl")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[1] == "worker-1 traced differently from the others (worker-0) in 1 of 1 function: `step`."
    assert lines[3].startswith("worker-1, `step` (multi_worker.py:") and \
        lines[3].endswith("), trace #2: a trace the others did not make")
    assert lines[4].startswith("  worker-1: #2 retrace x: float32[6,3]")
    assert lines[6:8] == ["  closest: worker-0's #1 trace x: float32[8,3]", "  differs: x: dim 0 8 -> 6"]


def test_a_killed_workers_file_still_compares(job):
    # worker-1's file as a kill while it wrote the line after its retrace's leaves it.
    lines = (job / "differ-worker-1.jsonl").read_text().splitlines()
    retrace = max(number for number, line in enumerate(lines) if '"kind": "retrace"' in line)
    killed = job / "killed-worker-1.jsonl"
    killed.write_text("\n".join([*lines[:retrace + 1], lines[retrace + 1][:50]]))
    code, out, err = run_compare(job / "differ-worker-0.jsonl", killed)
    assert code == 1
    assert err.startswith(f"traceguard compare: warning: {killed}:{retrace + 2}: the last line is cut short")
    assert "  worker-1: #2 retrace x: float32[6,3]" in out
    assert "worker-1's file has no end line: its process was killed or is still running;" in out


@pytest.mark.skipif(_compat.IS_KERAS_3, reason="Keras 3's fit fails under MultiWorkerMirroredStrategy: "
                    "`ValueError: Attempt to convert a value (PerReplica...)` (docs/multi-worker.md)")
def test_keras_2_fit_with_trace_monitor_files_agree(job):
    code, out, _ = run_compare(job / "fit-worker-0.jsonl", job / "fit-worker-1.jsonl")
    assert code == 0
    assert out.splitlines()[1] == "All 2 workers made the same traces: 1 function, 2 traces each."
    # train_function, then again for the optimizer's slots, on each worker.
    assert "    worker-1  trace, variable_retrace" in out
