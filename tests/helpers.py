"""Helpers shared by test modules: specs built without a backend, classifying a run, events and
function records made by hand, and scripts written for a run.

Imported as `helpers` (pytest puts `tests/` on `sys.path`); nothing here imports TensorFlow,
JAX or Keras, so the core tier can use it.
"""

from __future__ import annotations

import textwrap
from typing import Any

from traceguard._core.classify import Observation, classify_run
from traceguard._core.events import TraceEvent, TraceKind
from traceguard._core.specs import MappingSpec, SequenceSpec, Spec, TensorSpec, ValueSpec


def tensor(*dims: int | None, dtype: str = "float32", weak_type: bool = False) -> TensorSpec:
    """The spec of a dense tensor of these dimensions."""
    return TensorSpec(dtype, tuple(dims), "", weak_type)


def python_spec(value: Any) -> Spec:
    """The spec `_compat.spec_of` gives a plain Python value (numbers, strings, lists, dicts)."""
    if isinstance(value, (list, tuple)):
        items = tuple(python_spec(item) for item in value)
        return SequenceSpec("list" if isinstance(value, list) else "tuple", items, len(items))
    if isinstance(value, dict):
        pairs = tuple((repr(key), python_spec(item)) for key, item in sorted(value.items(), key=repr))
        return MappingSpec(pairs, len(pairs))
    return ValueSpec(repr(value))


def classify(*args: Any, **kwargs: Any) -> Any:
    """`classify_run` of an `Observation` made of these arguments (in its fields' order)."""
    return classify_run(Observation(*args, **kwargs))


def changes(record: Any) -> list[str]:
    """The report text of each change of a function record."""
    return [str(change) for change in record.changes]


def texts(changes: Any) -> tuple[str, ...]:
    """The report text of each change."""
    return tuple(str(change) for change in changes)


# A function trace's reason as the names its kind had before kinds and reasons were split.
_RECORD_LABELS = {"first_trace": "first", "new_function_object": "new_function",
                  "variable_retrace": "variable_retrace", "xla_compile": "compile", "recompile": "compile"}


def record_kind(record: Any) -> str:
    """`"first"`, `"retrace"`, `"new_function"`, `"variable_retrace"` or `"compile"`: a
    `FunctionTrace`'s kind, told apart by its reason."""
    return _RECORD_LABELS.get(record.reason.value, "retrace")


# --- events made by hand (tests/record/test_log.py, tests/diagnosis/test_explanation.py, ...) ---
def make_event(index, kind=TraceKind.TRACE, function="step"):
    return TraceEvent(index=index, kind=kind, layer="layer", function=function,
                      signature={"inputs": tensor(2)}, changes=(), created_variables=(),
                      reason="why", hint=None, timestamp=0.0, duration_s=0.0, thread="MainThread")


class FakeLayer:
    def __init__(self, name):
        self.name = name


def event(index, kind=TraceKind.TRACE, timestamp=0.0, layer="layer", hint=None):
    base = make_event(index, kind)
    return type(base)(**{**base.__dict__, "timestamp": timestamp, "layer": layer, "hint": hint})


# --- scripts for `python -m traceguard run` (tests/stories/test_run.py, tests/reports/...) ------
def script(tmp_path, body, name="script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


RETRACING = textwrap.dedent("""
    import tensorflow as tf
    from tensorflow import keras

    step = tf.function(keras.layers.Dense(2, name="scripted"))
    step(tf.ones((3, 2)))
    step(tf.ones((5, 2)))
""")
