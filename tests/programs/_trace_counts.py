"""Runs a corpus program and prints how often each traced function's Python body ran (its traces).

Usage: python tests/programs/_trace_counts.py [--backend tensorflow|jax|torch] tests/programs/x.py

Independent of traceguard. TensorFlow: `tf.function` is wrapped, before the
program is imported, so that every execution of a decorated Python function's
body (one per trace) is counted under the last part of the function's
`__qualname__`; so is a `Dataset.map` function's (`tf.data` traces it once per
`map` call, with its own internal `tf.function`). Keras's step functions are created with `tf.function(...)` at
call time, so they are counted too. JAX: wrapping `jax.jit` would change the
function objects JAX keys its cache on, so the count comes from JAX itself:
with `jax_explain_cache_misses` on, JAX logs one "TRACING CACHE MISS"
explanation per trace of a function defined in a user file, when its tracing
cache misses and the Python body runs; each is counted under the function's
name (and stays in the output, JAX's own account of each miss). Not
`jax.monitoring`'s `/jax/core/compile/jaxpr_trace_duration` event: it also
fires when `jit`'s outer cache misses but the jaxpr comes from the inner
tracing cache, without running the body (measured with jax 0.10.2:
`jit_same_function_rewrapped_in_loop.py` gets two events, one body run). Used
torch: `torch._dynamo.utils.get_compilation_metrics()` after the program, one
entry per frame compile, counted under the frame's `co_name` when the compile
made a cache entry (`fail_type` is None), a frame after a graph break
(`torch_dynamo_resume_in_<name>_at_<line>`) under its function's; nothing is wrapped. Used
by `check.py` to confirm each program traces as its `Expected:` block says.
"""
import collections
import functools
import json
import logging
import os
import re
import runpy
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

COUNTS = collections.Counter()
JAX_EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
# "never seen function:\n    NAME id=..." or "  for NAME defined at ..." (jax 0.10's explanation).
JAX_MISS_NAME = re.compile(r"never seen function:\s+(\S+) id=|\n  for (\S+)")


def _counting_function(func=None, *args, **kwargs):
    if func is None:
        return lambda f: _counting_function(f, *args, **kwargs)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)

    @functools.wraps(func)
    def body(*call_args, **call_kwargs):
        COUNTS[name.rsplit(".", 1)[-1]] += 1
        return func(*call_args, **call_kwargs)

    return _ORIGINAL["function"](body, *args, **kwargs)


_ORIGINAL = {}


def _counting_map(self, map_func, *args, **kwargs):
    """`Dataset.map` with its function counted: `tf.data` runs its Python body once per trace."""
    name = getattr(map_func, "__qualname__", None) or getattr(map_func, "__name__", None) or repr(map_func)

    @functools.wraps(map_func)
    def body(*call_args, **call_kwargs):
        COUNTS[name.rsplit(".", 1)[-1]] += 1
        return map_func(*call_args, **call_kwargs)

    return _ORIGINAL["map"](self, body, *args, **kwargs)


class _JaxMissCounter(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        match = JAX_MISS_NAME.search(message) if message.startswith("TRACING CACHE MISS") else None
        if match:
            COUNTS[(match.group(1) or match.group(2)).rsplit(".", 1)[-1]] += 1


# The name torch gives a frame it compiles after a graph break (torch/_dynamo/resume_execution.py).
TORCH_RESUME_NAME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


def _count_torch_compiles():
    """One count per frame compile torch recorded that made a cache entry, under its code's name;
    a frame compiled after a graph break under the function it continues."""
    from torch._dynamo.utils import get_compilation_metrics

    for metrics in get_compilation_metrics():
        name = getattr(metrics, "co_name", None)
        if getattr(metrics, "fail_type", None) is None and name:
            resumed = TORCH_RESUME_NAME.match(name)
            COUNTS[resumed.group(1) if resumed else name] += 1


def main():
    backend = "tensorflow"
    if sys.argv[1] == "--backend":
        backend = sys.argv[2]
        del sys.argv[1:3]
    script = sys.argv[1]
    if backend == "torch":
        pass  # torch keeps its own record of every frame compile: read after the run.
    elif backend == "jax":
        import jax

        jax.config.update("jax_explain_cache_misses", True)
        logging.getLogger(JAX_EXPLAIN_LOGGER).addHandler(_JaxMissCounter())
    else:
        import tensorflow as tf

        _ORIGINAL["function"] = tf.function
        tf.function = _counting_function
        _ORIGINAL["map"] = tf.data.Dataset.map
        tf.data.Dataset.map = _counting_map
    sys.argv = sys.argv[1:]
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as error:  # the program's own failure is part of what is measured
        status = 1
        print(f"[trace_counts] program raised {type(error).__name__}: {error}"[:400], file=sys.stderr)
    finally:
        if "function" in _ORIGINAL:
            import tensorflow as tf

            tf.function = _ORIGINAL.pop("function")
            tf.data.Dataset.map = _ORIGINAL.pop("map")
        if backend == "torch":
            _count_torch_compiles()
    print("TRACE_COUNTS " + json.dumps(dict(COUNTS), sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
