"""Which worker of a distributed job this process is, and the trace file names made of it.

A trace file written by one worker of a multi-worker job is labelled with that worker
(`worker-1`) unless given a label, and `trace_file=` may be a pattern with the worker in
it (`traces-{worker}.jsonl`), so that every worker runs the same command. The worker is:

- under `tf.distribute` (`MultiWorkerMirroredStrategy`, ...), the task of the
  `TF_CONFIG` environment variable, TensorFlow's public JSON
  (`{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": 1}}`), read on
  the TensorFlow backend;
- under `jax.distributed`, the process index, once `jax.distributed.initialize()` ran
  (`_compat.distributed_process()`, which never initializes a backend to find out).

Both are asked when a trace file opens, at its first record, so a job set up after
`watch()` began (`python -m traceguard run` starts before the script) is seen.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import string
from collections.abc import Mapping
from typing import Any

from traceguard._core.backends import Backend

# The fields a trace file's path may hold, as `{name}`; docs/trace-files.md describes each.
TRACE_FILE_FIELDS = ("worker", "task_type", "task_index", "process_index", "pid", "host")
# What tf.distribute and JAX call a process of no multi-worker job: TensorFlow runs it as
# the lone worker, index 0, and `jax.process_index()` is 0.
_LONE_TASK_TYPE, _LONE_INDEX = "worker", 0
# The TF_CONFIG tasks that run the training program; `ps` and `evaluator` run others.
_TRAINING_TASKS = ("chief", "master", "worker")
SOURCES = ("TF_CONFIG", "jax.distributed")


@dataclasses.dataclass(frozen=True)
class Worker:
    """One process of a distributed job.

    Attributes:
        source: Where it was read: `"TF_CONFIG"` or `"jax.distributed"`.
        task_type: The TF_CONFIG task type (`"chief"`, `"worker"`, ...), or
            `"process"` for a `jax.distributed` process.
        index: Its index among the tasks of its type (the process index on JAX).
        count: How many processes run the training program: TF_CONFIG's chief
            and workers, or `jax.process_count()`; None if not known.
    """

    source: str
    task_type: str
    index: int
    count: int | None = None

    @property
    def name(self) -> str:
        """How reports and file names call it: `"worker-1"`, `"chief-0"`, `"process-1"`."""
        return f"{self.task_type}-{self.index}"

    def to_dict(self) -> dict[str, Any]:
        """The trace file header's `worker` field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, fields: Any) -> Worker:
        """The worker of a header's `worker` field; ValueError naming what is wrong."""
        values = [fields.get(name) for name in ("source", "task_type", "index", "count")] \
            if isinstance(fields, Mapping) else [None] * 4
        source, task_type, index, count = values
        if source not in SOURCES or not isinstance(task_type, str) or type(index) is not int \
                or not (count is None or type(count) is int):
            raise ValueError(f"a worker is {{'source': one of {', '.join(SOURCES)}, 'task_type': str, "
                             f"'index': int, 'count': int or null}}. Received: {fields!r}")
        return cls(source, task_type, index, count)


def tf_config_worker(environ: Mapping[str, str] = os.environ) -> Worker | None:
    """The task `TF_CONFIG` names, or None without one (or with one that is not JSON naming a task)."""
    text = environ.get("TF_CONFIG")
    if not text:
        return None
    try:
        config = json.loads(text)
        task = config["task"]
        task_type, index = str(task["type"]), int(task["index"])
        cluster = config.get("cluster") or {}
        count = sum(len(cluster.get(kind) or ()) for kind in _TRAINING_TASKS) or None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # tf.distribute itself reports a malformed TF_CONFIG when the strategy starts.
    return Worker("TF_CONFIG", task_type, index, count)


def current_worker() -> Worker | None:
    """This process's place in a multi-worker job of the backend Keras runs on, or None."""
    from traceguard import _compat

    if _compat.BACKEND is Backend.TENSORFLOW:
        return tf_config_worker()
    process = _compat.distributed_process()
    return None if process is None else Worker("jax.distributed", "process", process[0], process[1])


def trace_file_fields(worker: Worker | None) -> dict[str, Any]:
    """The value of each of `TRACE_FILE_FIELDS` for a process that is `worker` (None: no job)."""
    host, pid = socket.gethostname(), os.getpid()
    tf_task = worker if worker is not None and worker.source == "TF_CONFIG" else None
    jax_process = worker if worker is not None and worker.source == "jax.distributed" else None
    return {
        "worker": worker.name if worker is not None else f"{host}-{pid}",
        "task_type": tf_task.task_type if tf_task is not None else _LONE_TASK_TYPE,
        "task_index": tf_task.index if tf_task is not None else _LONE_INDEX,
        "process_index": jax_process.index if jax_process is not None else _LONE_INDEX,
        "pid": pid,
        "host": host,
    }


def pattern_fields(pattern: str) -> list[str]:
    """The `{field}` names in `pattern`, in order; ValueError for a pattern `str.format` cannot read."""
    return [name for _, name, _, _ in string.Formatter().parse(pattern) if name is not None]


def check_trace_file_pattern(pattern: str, where: str, received: str) -> None:
    """Fails, naming the fields, when `pattern` holds a field other than `TRACE_FILE_FIELDS`.

    `where` names the argument in the message (`"`watch(trace_file=...)`"`, `"--trace-file"`),
    `received` how it was given (`"trace_file="`, `"--trace-file "`).
    """
    accepted = ", ".join("{" + name + "}" for name in TRACE_FILE_FIELDS)
    try:
        names = pattern_fields(pattern)
    except ValueError as error:  # A lone `{` or `}`.
        raise ValueError(f"{where} is a path whose fields are written in braces ({accepted}; a brace "
                         f"itself is doubled: `{{{{`); this one cannot be read: {error}. "
                         f"Received: {received}{pattern!r}") from None
    unknown = [name for name in names if name not in TRACE_FILE_FIELDS]
    if unknown:
        shown = ", ".join("{" + name + "}" for name in dict.fromkeys(unknown))
        raise ValueError(f"{where} names unknown fields {shown}; the fields are {accepted}. "
                         f"Received: {received}{pattern!r}")


def expand_trace_file(pattern: str, worker: Worker | None) -> str:
    """`pattern` (checked by `check_trace_file_pattern`) with its fields filled for a process that
    is `worker`."""
    return pattern.format(**trace_file_fields(worker))
