"""The signatures of a trace file as specs, and what differs between two of them.

A trace file of schema version 1 keeps each argument's spec as the text
`_core.signature.format_spec` made of it (`float32[32,8]`, `(float32[32,8], float32[32,4])`,
`{'ids': int32[4]}`, `True`). Comparing the traces of two files names what differs
argument by argument (`data[0]: dim 0 32 -> 6`), as `_core.signature.diff_signatures`
does within one process: this module reads the text back into the same spec tuples
and compares them with the same rules, giving `Change` values. It imports neither
TensorFlow nor JAX, so `python -m traceguard compare` runs anywhere.

A spec read back loses what the text does not show: the fingerprint of items past
the first 16 of a long sequence, and the end of a long repr (both shown as `...`);
two such specs that differ only there read as equal. A text that is not one of
these forms (an object whose repr looks like a tensor's, cut inside its quotes) is
read as one value, so its argument's change is named as a whole.

TODO(#30): once `_core` imports no `_compat`, compare with `_core.signature.diff_signatures`
itself; tests/test_signature_texts.py checks the two give the same `Change`s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from traceguard._core.changes import Aspect, Change

Spec = tuple

_TENSOR = re.compile(r"(?:([A-Za-z_]\w*) )?([a-z][a-z0-9_]*)\[(\?|(?:-?\d+|None)(?:,(?:-?\d+|None))*|)\]")
_MORE_ITEMS = re.compile(r"\.\.\. (\d+) items")
# A repr longer than this is kept as its first characters and "..." (`_core.signature._MAX_REPR`).
_MAX_REPR = 40
_CLOSERS = {"[": "]", "(": ")", "{": "}", "<": ">"}


class _Unreadable(Exception):
    """The text is not a spec as `format_spec` writes it."""


def read_spec(text: str) -> Spec:
    """The spec `format_spec` wrote as `text`; a text of no spec form reads as one value."""
    try:
        spec, end = _spec(text, 0, top=True)
    except _Unreadable:
        return ("value", text, None)
    return spec if end == len(text) else ("value", text, None)


def read_signature(signature: Mapping[str, Any]) -> dict[str, Spec]:
    """Each argument's spec, from its text (`str()` of a value that is not a text)."""
    return {name: read_spec(str(value)) for name, value in signature.items()}


def _spec(text: str, start: int, top: bool = False) -> tuple[Spec, int]:
    if top:  # An argument's whole text: a tensor, a container, or else one value.
        tensor = _TENSOR.fullmatch(text)
        if tensor is not None:
            return _tensor_spec(tensor), len(text)
    tensor = _TENSOR.match(text, start)
    if tensor is not None and (tensor.end() == len(text) or text[tensor.end()] in ",)]}"):
        return _tensor_spec(tensor), tensor.end()
    opener = text[start:start + 1]
    if opener in ("[", "("):
        try:
            return _sequence(text, start)
        except _Unreadable:
            if top:
                raise
    elif opener == "{":
        try:
            return _mapping(text, start)
        except _Unreadable:
            if top:
                raise
    if top:
        return ("value", text, None), len(text)
    end = _value_end(text, start)
    return ("value", text[start:end], None), end


def _tensor_spec(match: re.Match[str]) -> Spec:
    label, dtype, dims = match.group(1) or "", match.group(2), match.group(3)
    if dims == "?":
        return ("tensor", label, dtype, None)
    return ("tensor", label, dtype,
            tuple(None if dim == "None" else int(dim) for dim in dims.split(",")) if dims else ())


def _sequence(text: str, start: int) -> tuple[Spec, int]:
    kind, closer = ("list", "]") if text[start] == "[" else ("tuple", ")")
    children: list[Spec] = []
    position, length, one_tuple = start + 1, None, False
    while position < len(text) and text[position] != closer:
        if children:
            if kind == "tuple" and len(children) == 1 and text.startswith(",)", position):
                position, one_tuple = position + 1, True  # `(x,)`, the text of a 1-tuple.
                break
            position = _expect(text, position, ", ")
        more = _MORE_ITEMS.match(text, position)
        if more is not None and children:
            length, position = int(more.group(1)), more.end()
            break
        child, position = _spec(text, position)
        children.append(child)
    if kind == "tuple" and len(children) == 1 and length is None and not one_tuple:
        raise _Unreadable  # `(x)` is no tuple's text.
    position = _expect(text, position, closer)
    return ("seq", kind, tuple(children), len(children) if length is None else length, None), position


def _mapping(text: str, start: int) -> tuple[Spec, int]:
    items: list[tuple[str, Spec]] = []
    position, length = start + 1, None
    while position < len(text) and text[position] != "}":
        if items:
            position = _expect(text, position, ", ")
        more = _MORE_ITEMS.match(text, position)
        if more is not None and items:
            length, position = int(more.group(1)), more.end()
            break
        key_end = _value_end(text, position, stop=":")
        key = text[position:key_end]
        position = _expect(text, key_end, ": ")
        child, position = _spec(text, position)
        items.append((key, child))
    position = _expect(text, position, "}")
    return ("map", tuple(items), len(items) if length is None else length, None), position


def _expect(text: str, position: int, expected: str) -> int:
    if not text.startswith(expected, position):
        raise _Unreadable
    return position + len(expected)


def _value_end(text: str, start: int, stop: str = ",)]}") -> int:
    """Where the repr of a value (or a mapping's key) that starts at `start` ends."""
    # A repr cut short is its first characters and "...", `_MAX_REPR` in all, maybe inside quotes.
    cut = start + _MAX_REPR
    if text.startswith("...", cut - 3) and (cut == len(text) or text[cut] in stop or text[cut] == ","):
        closing = _scan(text, start, stop)
        if closing is None or closing > cut:
            return cut
    end = _scan(text, start, stop)
    if end is None or end == start:
        raise _Unreadable
    return end


def _scan(text: str, start: int, stop: str) -> int | None:
    """The first `stop` character outside quotes and brackets from `start`; None if a quote or bracket
    is left open."""
    closers: list[str] = []
    position = start
    while position < len(text):
        char = text[position]
        if char in "'\"":
            end = _string_end(text, position)
            if end is None:
                return None
            position = end
            continue
        if closers and char == closers[-1]:
            closers.pop()
        elif char in _CLOSERS and not (char == "<" and position > start and text[position - 1] != " "):
            closers.append(_CLOSERS[char])
        elif not closers and char in stop:
            return position
        position += 1
    return None if closers else position


def _string_end(text: str, start: int) -> int | None:
    """Just past the quoted string that starts at `start` (Python's repr escapes with a backslash)."""
    quote, position = text[start], start + 1
    while position < len(text):
        if text[position] == "\\":
            position += 2
        elif text[position] == quote:
            return position + 1
        else:
            position += 1
    return None


# --- what differs: `_core.signature.diff_specs`'s rules, on specs read back ---------------
def diff_spec_texts(name: str, old: Spec, new: Spec) -> list[Change]:
    """The differences between two specs of the argument `name`, as `Change`s."""
    if old == new:
        return []
    if old[0] == new[0] == "tensor" and old[1] == new[1]:
        changes = []
        if old[2] != new[2]:
            changes.append(_change(name, Aspect.DTYPE, old[2], new[2]))
        old_dims, new_dims = old[3], new[3]
        if old_dims is None or new_dims is None or len(old_dims) != len(new_dims):
            if old_dims != new_dims:
                old_rank = "?" if old_dims is None else len(old_dims)
                new_rank = "?" if new_dims is None else len(new_dims)
                changes.append(_change(name, Aspect.RANK, old_rank, new_rank, text=(
                    f"{name}: rank {old_rank} -> {new_rank} ({format_spec(old)} -> {format_spec(new)})")))
        else:
            changes.extend(_change(name, Aspect.DIM, a, b, axis=axis)
                           for axis, (a, b) in enumerate(zip(old_dims, new_dims)) if a != b)
        return changes
    if old[0] == new[0] == "seq" and old[1] == new[1] and old[3] == new[3]:
        return [change for index, (a, b) in enumerate(zip(old[2], new[2]))
                for change in diff_spec_texts(f"{name}[{index}]", a, b)]
    if old[0] == new[0] == "map" and old[2] == new[2] and [k for k, _ in old[1]] == [k for k, _ in new[1]]:
        return [change for (key, a), (_, b) in zip(old[1], new[1])
                for change in diff_spec_texts(f"{name}[{key}]", a, b)]
    old_text, new_text = format_spec(old), format_spec(new)
    aspect = Aspect.VALUE if old[0] == new[0] == "value" else Aspect.STRUCTURE
    return [_change(name, aspect, old_text, new_text, text=f"{name}: {old_text} -> {new_text}")]


def _change(argument: str, aspect: Aspect, old: Any, new: Any, axis: int | None = None,
              text: str | None = None) -> Change:
    """The one place a `Change` is made here, as `_core.signature` makes it for the same difference."""
    return Change(argument, aspect, old, new, axis, text=text)


def diff_signature_texts(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """What changed from the signature `old` to `new` (argument name to spec text), in argument order."""
    old_specs, new_specs = read_signature(old), read_signature(new)
    changes = []
    for name, spec in new_specs.items():
        if name not in old_specs:
            changes.append(_change(name, Aspect.ADDED, None, format_spec(spec)))
        else:
            changes.extend(diff_spec_texts(name, old_specs[name], spec))
    changes.extend(_change(name, Aspect.REMOVED, format_spec(spec), None)
                   for name, spec in old_specs.items() if name not in new_specs)
    return changes


def format_spec(spec: Spec) -> str:
    """The text of a spec read back: the text it was read from."""
    tag = spec[0]
    if tag == "tensor":
        _, label, dtype, dims = spec
        shape = "[?]" if dims is None else "[" + ",".join("None" if d is None else str(d) for d in dims) + "]"
        return f"{label + ' ' if label else ''}{dtype}{shape}"
    if tag == "seq":
        _, kind, children, length, _ = spec
        inner = ", ".join(format_spec(child) for child in children)
        if length > len(children):
            inner += f", ... {length} items"
        return f"[{inner}]" if kind == "list" else f"({inner}{',' if length == 1 else ''})"
    if tag == "map":
        _, items, length, _ = spec
        more = f", ... {length} items" if length > len(items) else ""
        return "{" + ", ".join(f"{key}: {format_spec(child)}" for key, child in items) + more + "}"
    return str(spec[1])
