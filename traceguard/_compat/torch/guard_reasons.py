"""torch's own guard-failure reasons, read as `_core` changes in the user's terms.

Dynamo tells why a frame recompiles: for each cache entry of the frame's code, most
recent first, the first guard that failed, as `get_guard_fail_reason` words it
(torch/_dynamo/guards.py; the tensor checks' words come from torch/csrc/dynamo/guards.cpp).
The most recent entry's reason is the one read here: it is the compile the new one
is closest to. Each reason is kept verbatim beside the changes; only the forms below
are translated, and a reason in any other form is a `context` change holding torch's
words (never a guess). Measured with torch 2.14.1:

- `tensor 'x' size mismatch at index 0. expected 8, actual 5` -> `x: dim 0 8 -> 5`; a `dtype`,
  `rank` or `stride mismatch at index 1. expected 1, actual 4` likewise;
- `tensor 'x' requires_grad mismatch. expected requires_grad=0` (torch says the old value only)
  -> `x: requires_grad False -> True`;
- `tensor 'x' dispatch key set mismatch. expected DispatchKeySet(CPU, ...), actual
  DispatchKeySet(Meta, ...)` (another device type) and `tensor 'x' Tensor device index mismatch.
  Expected device index to be 0, actual 1` -> `x: device CPU -> Meta`, `x: device 0 -> 1`;
- the same device's key sets, one without autograd keys (`DispatchKeySet(CPU, BackendSelect,
  ADInplaceOrView)` against `..., AutogradCPU)`: a tensor made under `torch.inference_mode()`)
  -> `x: an inference tensor -> a normal tensor`;
- `GLOBAL_STATE changed: grad_mode` (Dynamo's guard on global state, torch/csrc/dynamo/guards.cpp)
  -> `grad_mode: False -> True` (the new compile's grad mode, read from torch); another global
  state (`autocast(cpu)_enabled`, ...) by its name, its values not told;
- `n == 2` (a Python int specialised into the graph) -> `n: 2 -> 3`, the new value read from
  the frame's arguments when the guard names one of them; `flag == True` -> `flag: True -> False`
  (a bool has one other value);
- `Cache line invalidated because X got deallocated` -> `X: a new object (the earlier one was
  deleted)`;
- `list.__getitem__(self._layers, 1)._kernel._value.grad is None` (Keras's first step) ->
  `self._layers[1]._kernel._value.grad: None (before the first backward pass) -> a gradient`.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from traceguard._core.changes import Aspect, Change
from traceguard._core.specs import ArgumentPath, TensorSpec

# "0/1: " before each reason: the frame's id and the cache entry's compile id.
_COMPILE_ID = re.compile(r"^\s*\d+/\d+:\s*")
_TENSOR = re.compile(r"^tensor '(?P<name>.+?)' (?P<aspect>size|stride|dtype|requires_grad|rank|"
                     r"dispatch key set|Tensor device index) mismatch(?: at index (?P<axis>\d+))?\. "
                     r"(?:expected|Expected device index to be) (?:requires_grad=)?(?P<old>.+?)"
                     r"(?:, actual (?P<new>.+?))?$")
# A dispatch key set's first key is the device type's (`DispatchKeySet(CPU, BackendSelect, ...)`).
_FIRST_KEY = re.compile(r"DispatchKeySet\((?P<key>\w+)")
_VALUE = re.compile(r"^(?P<name>[A-Za-z_][\w.\[\]']*) == (?P<old>.+?)$")
_DEALLOCATED = re.compile(r"(?:Cache line invalidated because )?(?P<name>.+?) got deallocated")
_ASPECTS = {"dtype": Aspect.DTYPE, "stride": Aspect.STRIDE, "Tensor device index": Aspect.DEVICE}
NEW_OBJECT = "a new object (the earlier one was deleted)"
# `p.grad is None` (torch/nn/modules/module.py's `zero_grad`, run by Keras's torch `train_step`):
# true in the first step, before any backward pass; false once gradients exist.
_NO_GRADIENT = re.compile(r"^(?P<name>.+)\.grad is None$")
NO_GRADIENT = "None (before the first backward pass)"
_GLOBAL_STATE = re.compile(r"^GLOBAL_STATE changed: (?P<names>.+)$")
# An inference tensor has none of the `Autograd<Device>` keys a normal tensor has (c10/core/TensorImpl).
INFERENCE_TENSOR, NORMAL_TENSOR = "an inference tensor", "a normal tensor"


def reason_lines(reason: str) -> str:
    """A reason's first line without its compile id and torch's `# source` comment."""
    line = _COMPILE_ID.sub("", reason.strip().splitlines()[0] if reason.strip() else "")
    return line.split("  #", 1)[0].strip()


def changes_of(reason: str, arguments: dict[str, Any] | None = None) -> tuple[Change, ...]:
    """The changes torch's guard-failure `reason` names, in the user's terms.

    Args:
        reason: One of the strings Dynamo's `get_and_maybe_log_recompilation_reasons` returns.
        arguments: The recompiled frame's arguments by name: the new value of a guarded int.

    Returns:
        One change; a `context` change with torch's words when the form is not one read here.
    """
    line = reason_lines(reason)
    found = _TENSOR.match(line)
    if found:
        return (_tensor_change(found, arguments or {}),)
    found = _DEALLOCATED.search(line)
    if found:
        return (Change(ArgumentPath(_short(found["name"])), Aspect.IDENTITY, "an object", NEW_OBJECT),)
    found = _NO_GRADIENT.match(line)
    if found:  # Keras's step zeroes gradients that the first step's backward pass creates.
        gradient = ArgumentPath(_short(found["name"]) + ".grad")
        return (Change(gradient, Aspect.CONTEXT, NO_GRADIENT, "a gradient"),)
    found = _GLOBAL_STATE.match(line)
    if found:
        return tuple(_global_state_change(name) for name in found["names"].split())
    found = _VALUE.match(line)
    if found:
        name = found["name"]
        old = _literal(found["old"])
        default = (not old) if isinstance(old, bool) else "another value"  # A bool's one other value.
        new = (arguments or {}).get(name, default)
        if isinstance(old, str) and isinstance(new, str) and name in (arguments or {}):
            new = repr(new)  # Quoted as torch quotes the old string (`text == 'ab'`).
        return (Change(ArgumentPath(name), Aspect.VALUE, old, _text(new)),)
    return (Change(ArgumentPath("torch guard"), Aspect.CONTEXT, line or reason.strip(), "failed"),)


def _tensor_change(found: re.Match[str], arguments: dict[str, Any]) -> Change:
    """One of torch's tensor checks, in the order guards.cpp runs them (the first that fails)."""
    aspect, old, new = found["aspect"], found["old"], found["new"]
    path = ArgumentPath(found["name"])
    axis = int(found["axis"]) if found["axis"] is not None else None
    if aspect == "size":
        return Change(path, Aspect.DIM, _number(old), _number(new), axis)
    if aspect == "rank":  # As specs: the new argument's, and the old rank's (its sizes not told).
        return _rank_change(path, old, new, arguments.get(found["name"]))
    if aspect == "requires_grad":  # torch words the expected value only: the actual one is the other.
        return Change(path, Aspect.REQUIRES_GRAD, old == "1", old != "1")
    if aspect == "dispatch key set":
        keys = [_FIRST_KEY.match(text or "") for text in (old, new)]
        if all(keys) and keys[0]["key"] != keys[1]["key"]:  # type: ignore[index]
            return Change(path, Aspect.DEVICE, keys[0]["key"], keys[1]["key"])  # type: ignore[index]
        autograd = ["Autograd" in (text or "") for text in (old, new)]
        if autograd[0] != autograd[1]:
            kinds = [NORMAL_TENSOR if has else INFERENCE_TENSOR for has in autograd]
            return Change(path, Aspect.INFERENCE, kinds[0], kinds[1])
        return Change(path, Aspect.VALUE, f"dispatch keys {old}", f"dispatch keys {new}")
    return Change(path, _ASPECTS.get(aspect, Aspect.VALUE), _number(old), _number(new), axis)


def _global_state_change(name: str) -> Change:
    """One global state Dynamo guards, changed since the earlier compile; the grad mode as the new
    compile saw it (the recompile runs in the calling code's mode)."""
    if name == "grad_mode":
        now = torch.is_grad_enabled()
        return Change(ArgumentPath(name), Aspect.CONTEXT, not now, now)
    return Change(ArgumentPath(name), Aspect.CONTEXT, "the earlier compile's value", "another value")


def _literal(text: str) -> Any:
    """A guarded Python value as torch printed it: `True`, `2`, `0.5`; else the text."""
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _rank_change(path: ArgumentPath, old: str, new: str, value: Any) -> Change:
    try:  # A tensor's spec as `_specs` reads it (`torch.float32[4,2]`), without the other backends.
        new_spec = TensorSpec(str(value.dtype), tuple(int(size) for size in value.shape))
    except (AttributeError, TypeError, ValueError):  # Not a plain tensor argument.
        return Change(path, Aspect.VALUE, f"rank {old}", f"rank {new}")
    return Change(path, Aspect.RANK, new_spec._replace(dims=(None,) * int(old)), new_spec)


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def _text(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str)) or value is None else repr(value)[:80]


def _short(source: str) -> str:
    """`list.__getitem__(L['self']._layers, 1)` -> `self._layers[1]`: torch's source, as written."""
    text = source
    for _ in range(4):  # Nested item reads, innermost first.
        text = re.sub(r"list\.__getitem__\(([^()]+), (\d+)\)", r"\1[\2]", text)
    return re.sub(r"L\['([^']+)'\]", r"\1", text)
