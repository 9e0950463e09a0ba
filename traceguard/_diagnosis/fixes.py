"""Fix-its: the `tf.function` change that stops a function's retraces, from its recorded signatures.

`propose_fix` reads only the `FunctionTrace` records of one function (specs,
never tensors) and proposes, in this order of preference:

- `"input_signature"`: every argument is a tensor of one dtype (or a Python
  number that changed, to be passed as a tensor): one `tf.TensorSpec` per
  argument, `None` exactly at the dimensions seen changing;
- `"reduce_retracing"`: only shapes changed, but a signature cannot be written
  (a Python value or a nested structure among the arguments);
- `"tensor_argument"`: Python numbers changed and a signature cannot be
  written: pass them as tensors (`tf.constant(n)`), with `reduce_retracing`
  when shapes changed too.

None when nothing can be proposed: a single signature, a dtype that changed,
Python values that are not numbers (a `bool` choosing a branch traces each
branch on purpose), Keras's own step functions, `tf.data` and `jax.jit`
functions. `fix_checks.verify_fix` then checks a proposal by replaying.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from traceguard._core import fixes
from traceguard._core.fixes import ArgumentSpec
from traceguard._core.specs import MappingSpec, SequenceSpec, Spec, TensorSpec, ValueSpec
from traceguard._reports.fixes import format_fix

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace

class FixIt(fixes.FixIt):
    """A proposed fix for one function's retraces (`_core.fixes.FixIt`'s fields), whose `str()` is
    the fix-it as reports show it: a sentence and the code to paste."""

    def __str__(self) -> str:
        return format_fix(self)


def number_of(spec: Spec) -> int | float | None:
    """The Python int or float a value spec records (not a bool); None for anything else."""
    if not isinstance(spec, ValueSpec) or spec.rest is not None:
        return None
    try:
        value = ast.literal_eval(spec.text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if type(value) in (int, float) else None


def propose_fix(records: Sequence[FunctionTrace]) -> FixIt | None:
    """The fix for the retraces among `records` (one function's, oldest first), or None."""
    if not records or any(r.library_function or r.origin != "tf.function" for r in records):
        return None
    signatures = list({tuple(r.signature.items()): r.signature for r in records}.values())
    if len(signatures) < 2:
        return None
    names = list(signatures[0])
    if not all(list(signature) == names for signature in signatures):
        return None  # Arguments given in some calls only: no one signature, nothing to relax.
    found = _arguments(names, signatures)
    if found is None:
        return None
    arguments, examples, writable, shapes_changed, others_changed = found
    to_tensors = tuple(examples)
    if writable:
        kind = "input_signature"
    elif others_changed:
        return None
    elif to_tensors:
        kind = "tensor_argument"
    elif shapes_changed:
        kind = "reduce_retracing"
    else:
        return None
    last = records[-1]
    return FixIt(
        function=last.name, qualname=last.qualname, definition=last.definition, kind=kind,
        arguments=tuple(arguments) if kind == "input_signature" else (), to_tensors=to_tensors,
        reduce_retracing=kind == "reduce_retracing" or (kind == "tensor_argument" and shapes_changed),
        traces=len(records), signatures=tuple(signatures), examples=examples,
        tensor_dtype="float32" if any(a.from_number and a.dtype == "float32" for a in arguments) else "int32")


def _arguments(names: list[str], signatures: list[Mapping[str, Spec]]) -> tuple | None:
    """Each argument's `ArgumentSpec`, the changed numbers (name -> a value), whether every
    argument has a spec, whether shapes changed, whether anything else did; None when a
    dtype changed."""
    arguments: list[ArgumentSpec] = []
    examples: dict[str, Any] = {}
    writable, shapes_changed, others_changed = True, False, False
    for name in names:
        specs = [signature[name] for signature in signatures]
        tensors = [spec for spec in specs if isinstance(spec, TensorSpec) and not spec.type_name]
        if len(tensors) == len(specs):
            if len({spec.dtype for spec in tensors}) > 1:
                return None  # A dtype that changes: no one signature; the user decides which dtype.
            dims = _relaxed_dims([spec.dims for spec in tensors])
            shapes_changed |= dims != tensors[0].dims
            arguments.append(ArgumentSpec(name, tensors[0].dtype, dims))
            continue
        numbers = [number_of(spec) for spec in specs]
        if len(set(specs)) > 1 and all(number is not None for number in numbers):
            examples[name] = numbers[-1]
            is_float = any(type(number) is float for number in numbers)
            arguments.append(ArgumentSpec(name, "float32" if is_float else "int32", (), from_number=True))
            continue
        writable = False
        if len(set(specs)) > 1:
            if all(isinstance(spec, (SequenceSpec, MappingSpec)) for spec in specs) and _only_shapes(specs):
                shapes_changed = True
            else:
                others_changed = True
    return arguments, examples, writable, shapes_changed, others_changed


def _relaxed_dims(all_dims: list[Any]) -> tuple[int | None, ...] | None:
    """The dims of every spec, `None` where they differ; None (unknown rank) if ranks differ."""
    if any(dims is None for dims in all_dims) or len({len(dims) for dims in all_dims}) > 1:
        return None
    return tuple(dims[0] if len(set(dims)) == 1 else None for dims in zip(*all_dims))


def _only_shapes(specs: list[Spec]) -> bool:
    """Whether nested specs differ only in their tensors' dimensions."""
    def skeleton(spec: Spec) -> Any:
        if isinstance(spec, TensorSpec):
            return spec._replace(dims=None if spec.dims is None else (None,) * len(spec.dims))
        if isinstance(spec, SequenceSpec):
            return spec._replace(items=tuple(skeleton(item) for item in spec.items))
        if isinstance(spec, MappingSpec):
            return spec._replace(items=tuple((key, skeleton(item)) for key, item in spec.items))
        return spec
    return len({skeleton(spec) for spec in specs}) == 1
