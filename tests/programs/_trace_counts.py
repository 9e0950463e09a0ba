"""Runs a corpus program and prints how often each `tf.function`'s Python body ran (its traces).

Usage: python tests/programs/_trace_counts.py tests/programs/x.py

Independent of traceguard: `tf.function` is wrapped, before the program is
imported, so that every execution of a decorated Python function's body (one
per trace) is counted under the function's `__qualname__`. Keras's step
functions are created with `tf.function(...)` at call time, so they are
counted too. Used by `check.py` to confirm each program retraces as its
`Expected:` block says.
"""
import collections
import functools
import json
import os
import runpy
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

COUNTS = collections.Counter()
_original_function = tf.function


def _counting_function(func=None, *args, **kwargs):
    if func is None:
        return lambda f: _counting_function(f, *args, **kwargs)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)

    @functools.wraps(func)
    def body(*call_args, **call_kwargs):
        COUNTS[name.rsplit(".", 1)[-1]] += 1
        return func(*call_args, **call_kwargs)

    return _original_function(body, *args, **kwargs)


def main():
    script = sys.argv[1]
    tf.function = _counting_function
    sys.argv = sys.argv[1:]
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as error:  # the program's own failure is part of what is measured
        status = 1
        print(f"[trace_counts] program raised {type(error).__name__}: {error}"[:400], file=sys.stderr)
    finally:
        tf.function = _original_function
    print("TRACE_COUNTS " + json.dumps(dict(COUNTS), sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
