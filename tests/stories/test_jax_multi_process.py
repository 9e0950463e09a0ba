"""A real `jax.distributed` job: two processes on the CPU, on localhost, a batch sharded across both and
each step's gradient reduced across them (tests/scripts/jax_multi_process.py). Each process writes a
trace file named and labelled by its process index; `compare` says whether they traced alike.

One process given an extra batch of another shape hangs in that step's all-reduce, waiting for a peer
that never comes, as a real job does: the test kills both processes and compares what they wrote.
Every process has a deadline and is killed past it, so a hang fails the test instead of stalling CI.
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

from traceguard._diagnosis.compare_files import compare_files
from traceguard._diagnosis.trace_file_reader import read_trace_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "scripts" / "jax_multi_process.py"
DEADLINE_S = 120

pytestmark = [pytest.mark.backend("jax"), pytest.mark.slow, pytest.mark.multi_process]


def free_port():
    with socket.socket() as each:
        each.bind(("localhost", 0))
        return each.getsockname()[1]


def start_job(pattern, batches_per_process):
    port = free_port()
    env = {**os.environ, "KERAS_BACKEND": "jax",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    logs = [open(str(pattern).replace("{worker}", f"process-{index}") + ".log", "w+")  # noqa: SIM115
            for index in range(len(batches_per_process))]
    processes = [subprocess.Popen([sys.executable, str(SCRIPT), str(pattern), str(port), str(index),
                                   *map(str, batches)], env=env, stdout=log, stderr=subprocess.STDOUT)
                 for index, (batches, log) in enumerate(zip(batches_per_process, logs))]
    return processes, logs


def stop_job(processes, logs):
    """Kills what is still running; returns which were, and each one's output."""
    running = [index for index, process in enumerate(processes) if process.poll() is None]
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    return running, outputs


def traces_in(path):
    """The function traces a (maybe growing) trace file holds so far, by serial."""
    if not path.exists():
        return set()
    serials = set()
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # The line being written.
        if record.get("type") == "function_trace":
            serials.add(record["event"]["serial"])
    return serials


def run_compare(*paths):
    out, err = io.StringIO(), io.StringIO()
    code = compare_files([str(path) for path in paths], out, err)
    return code, out.getvalue(), err.getvalue()


def test_processes_given_the_same_batches_agree(tmp_path):
    processes, logs = start_job(tmp_path / "agree-{worker}.jsonl", [[8, 8, 8], [8, 8, 8]])
    started = time.monotonic()
    try:
        for process in processes:
            process.wait(timeout=max(0.0, started + DEADLINE_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    running, outputs = stop_job(processes, logs)
    assert not running, f"processes {running} did not finish in {DEADLINE_S} s:\n" + "\n".join(outputs)
    assert [process.returncode for process in processes] == [0, 0], "\n".join(outputs)
    paths = [tmp_path / f"agree-process-{index}.jsonl" for index in (0, 1)]
    assert [read_trace_file(str(path)).worker.name for path in paths] == ["process-0", "process-1"]
    code, out, err = run_compare(*paths)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "traceguard compare: 2 workers of one job (process-0, process-1; their trace files name them)",
        "All 2 workers made the same traces: 1 function, 1 trace each."]


def test_the_process_given_a_batch_of_another_shape_hangs_and_is_named(tmp_path):
    # Process 1 gets a fourth batch, of 6 rows: a new global shape (2 x 6), traced and compiled, whose
    # all-reduce waits for process 0, which has finished its three and waits to shut down.
    processes, logs = start_job(tmp_path / "hang-{worker}.jsonl", [[8, 8, 8], [8, 8, 8, 6]])
    first, second = (tmp_path / f"hang-process-{index}.jsonl" for index in (0, 1))
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not ('"type": "end"' in (first.read_text() if first.exists() else "")
                   and len(traces_in(second)) == 2):
            assert all(process.poll() is None for process in processes), "a process ended instead of hanging"
            assert time.monotonic() < deadline, f"no hang within {DEADLINE_S} s"
            time.sleep(0.2)
        time.sleep(2)  # Both are stuck: process 1 in the all-reduce, process 0 at the shutdown barrier.
    finally:
        running, outputs = stop_job(processes, logs)
    assert running == [0, 1], "\n".join(outputs)
    assert "done" in outputs[0] and "done" not in outputs[1]
    code, out, err = run_compare(first, second)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[1] == "process-1 traced differently from the others (process-0) in 1 of 1 function: " \
                       "`train_step`."
    # The arrays carry the mesh's sharding in their abstract values, which JAX keys on: shown.
    assert lines[4].startswith("  process-1: #2 retrace weights: float32[3,2]")
    assert "batch: float32[12,3]" in lines[4] and "over batch=2" in lines[4]
    assert lines[6].startswith("  closest: process-0's #1 trace weights: float32[3,2]")
    assert "batch: float32[16,3]" in lines[6]
    assert lines[7] == "  differs: batch: dim 0 16 -> 12"
    assert "process-1's file has no end line: its process was killed or is still running;" in out
