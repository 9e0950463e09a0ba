"""Checking a fix-it by replaying: `explanation.verify_fixes()` and `run --verify-fixes`.

Only on request, because it runs the user's code: each recorded signature of
the function is replayed, as zero tensors of its specs (Python values as
recorded, a number to pass as a tensor as `tf.constant` of it), against two
fresh `tf.function` copies of the Python function: one as written, one with the
fix applied. The user's function object is never called. The trace counts of
the two copies are the check ("3 traces -> 1 with this input_signature").

The Python function is reached through a weak reference kept while watching
(`observers.traced_function`): when the program no longer holds the function,
it cannot be replayed, and the check says so. So does it when the replay
cannot stand for the recorded calls: an argument that cannot be rebuilt from
its spec (an object, a ragged tensor, a shortened value), a function that
raises on zeros, or a copy that traces differently from what was recorded
(Python state the function reads, which the replay does not reproduce).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from typing import Any

from traceguard import _compat
from traceguard._core import fixes
from traceguard._core.specs import ArgumentPath, MappingSpec, SequenceSpec, Spec, TensorSpec, ValueSpec
from traceguard._diagnosis.fixes import FixIt, number_of
from traceguard._record.observers import unrecorded
from traceguard._reports.fixes import format_fix_check


class FixCheck(fixes.FixCheck):
    """The outcome of replaying a fix-it (`_core.fixes.FixCheck`'s fields), whose `str()` is the
    check as reports show it: the signatures replayed and the traces before -> after."""

    def __str__(self) -> str:
        return format_fix_check(self)


class FixChecks(list[FixCheck]):
    """The `FixCheck`s of `explanation.verify_fixes()`: a list whose `str()` is the report's.

    `print(explanation.verify_fixes())` shows each fix-it with its check, as
    `python -m traceguard run --verify-fixes` does, instead of their reprs.
    """

    def __str__(self) -> str:
        from traceguard._reports.fixes import format_fix_checks

        return format_fix_checks(self)


class _CannotRebuild(Exception):
    pass


def wrapped_object(function: Any) -> str | None:
    """What a live `tf.function` wraps when it is a callable object (a layer): `"Dense 'dense'"`."""
    if function is None or _compat.IS_JAX:
        return None
    from traceguard._compat.tensorflow import replay as _replay

    wrapped = _replay.python_function(function)
    if wrapped is None or inspect.isfunction(wrapped) or inspect.ismethod(wrapped):
        return None
    name = getattr(wrapped, "name", None)
    return type(wrapped).__name__ + (f" {name!r}" if isinstance(name, str) else "")


def verify_fix(fix: FixIt, function: Any) -> FixCheck:
    """Replays `fix.signatures` against copies of `function` (the live `tf.function`, or None)."""
    if _compat.IS_JAX:
        return FixCheck(fix, 0, None, None, "verification replays `tf.function`s; not available on JAX")
    from traceguard._compat.tensorflow import replay as _replay

    python_function = None if function is None else _replay.python_function(function)
    if python_function is None:
        return FixCheck(fix, 0, None, None, "the function is gone: traceguard keeps only a weak "
                        "reference to it, and the program no longer holds it; keep it alive to verify")
    check = _replay_fix(fix, python_function, _replay)
    if check.before is None and fix.to_tensors and fix.tensor_dtype == "int32":
        # A Python int the graph mixes with floats (`x * n`) was converted to float32 by
        # TensorFlow; an int32 tensor is not. Try the numbers as float32 tensors.
        floats = _replay_fix(fix.with_float_tensors(), python_function, _replay)
        if floats.before is not None:
            return floats
    return check


def _replay_fix(fix: FixIt, python_function: Any, replay: Any) -> FixCheck:
    try:
        calls = [_call(python_function, signature, fix, replay) for signature in fix.signatures]
    except _CannotRebuild as error:
        return FixCheck(fix, 0, None, None, str(error))
    replayed = len(calls)
    options: dict[str, Any] = {"reduce_retracing": True} if fix.reduce_retracing else {}
    if fix.kind == "input_signature":
        options["input_signature"] = [replay.tensor_spec(a.dtype, a.dims) for a in fix.arguments]
    try:
        with unrecorded():  # The copies' traces are traceguard's, not the user's run.
            before = replay.count_traces(python_function, [_as_recorded(c) for c in calls])
            after = replay.count_traces(python_function, [(args, kwargs) for args, kwargs, _ in calls],
                                        **options)
    except Exception as error:  # The user's function on zeros; reported, never raised.
        last = (str(error).strip().splitlines() or [""])[-1].strip()
        return FixCheck(fix, replayed, None, None,
                        f"the function raised {type(error).__name__} on the replayed zeros: {last}")
    problem = None
    recorded = len(fix.signatures)
    if before < recorded:
        problem = (f"the copy as written traced {before} times for {recorded} recorded signatures: its "
                   "traces depend on more than its arguments (Python state it reads), which the replay "
                   "does not reproduce, so the check is not conclusive")
    return FixCheck(fix, replayed, before, after, problem)


def _as_recorded(call: tuple[tuple, dict, tuple[tuple, dict]]) -> tuple[tuple, dict]:
    return call[2]


def _call(python_function: Any, signature: Any, fix: FixIt, replay: Any) -> tuple[tuple, dict, tuple]:
    """The call (args, kwargs) with the fix's tensors, and the call as recorded."""
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(python_function).parameters
    except (TypeError, ValueError):
        parameters = {}
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    recorded_args: list[Any] = []
    recorded_kwargs: dict[str, Any] = {}
    for name, spec in signature.items():
        recorded = _value(name, spec, replay)
        value = replay.constant(number_of(spec), fix.tensor_dtype) if name in fix.to_tensors else recorded
        variadic = isinstance(name, ArgumentPath)  # An item of `*args`: given by position.
        parameter = parameters.get(name.parameter if variadic else name)
        positional = variadic or (parameter is not None and parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD))
        if positional:
            args.append(value)
            recorded_args.append(recorded)
        else:
            kwargs[name] = value
            recorded_kwargs[name] = recorded
    return tuple(args), kwargs, (tuple(recorded_args), recorded_kwargs)


def _value(name: str, spec: Spec, replay: Any) -> Any:
    """A value with the spec: zeros for a tensor, the Python value itself, nested alike."""
    if isinstance(spec, TensorSpec):
        if spec.type_name:
            raise _CannotRebuild(
                f"`{name}` was a {spec.type_name}, which the replay cannot rebuild from its spec")
        return replay.zeros(spec.dtype, spec.dims)
    if isinstance(spec, SequenceSpec):
        if spec.length > len(spec.items):
            raise _CannotRebuild(f"`{name}` had {spec.length} items, more than its record keeps")
        items = [_value(f"{name}[{i}]", item, replay) for i, item in enumerate(spec.items)]
        return items if spec.kind == "list" else tuple(items)
    if isinstance(spec, MappingSpec):
        if spec.length > len(spec.items):
            raise _CannotRebuild(f"`{name}` had {spec.length} items, more than its record keeps")
        try:
            return {ast.literal_eval(key): _value(f"{name}[{key}]", item, replay) for key, item in spec.items}
        except (ValueError, SyntaxError) as error:
            raise _CannotRebuild(f"`{name}` has a key the replay cannot rebuild") from error
    try:
        if not isinstance(spec, ValueSpec) or spec.rest is not None:
            raise ValueError
        return ast.literal_eval(spec.text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _CannotRebuild(f"`{name}` was the Python object {spec}, which the replay "
                             "cannot rebuild from its record") from None
