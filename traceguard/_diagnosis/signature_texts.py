"""The signatures of a trace file of schema version 1, read back from their text into specs.

Version 1 kept each argument's spec as its text (`float32[32,8]`, `(float32[32,8],
float32[32,4])`, `{'ids': int32[4]}`, `True`); version 2 keeps the typed values. Read back
into `_core.specs` values, a version 1 trace's signature compares with any other by
`_core.signature.diff_signatures`, argument by argument (`data[0]: dim 0 32 -> 6`), as
within the process that recorded it. Imports neither TensorFlow nor JAX.

A spec read back loses what the text does not show: the fingerprint of items past
the first 16 of a long sequence, and the end of a long repr (both shown as `...`);
two such specs that differ only there read as equal. A text that is not one of
these forms (an object whose repr looks like a tensor's, cut inside its quotes) is
read as one value, so its argument's change is named as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from traceguard._core.specs import (
    MAX_REPR,
    SPEC_TYPES,
    MappingSpec,
    SequenceSpec,
    Spec,
    TensorSpec,
    ValueSpec,
)

_TENSOR = re.compile(
    r"(weakly typed )?(?:([A-Za-z_]\w*) )?([a-z][a-z0-9_]*)\[(\?|(?:-?\d+|None)(?:,(?:-?\d+|None))*|)\]")
_MORE_ITEMS = re.compile(r"\.\.\. (\d+) items")
_MAX_REPR = MAX_REPR  # A repr longer is kept as its first characters and "...".
_CLOSERS = {"[": "]", "(": ")", "{": "}", "<": ">"}


class _Unreadable(Exception):
    """The text is not a spec as `format_spec` writes it."""


def read_spec(text: str) -> Spec:
    """The spec whose text is `text`; a text of no spec form reads as one value."""
    try:
        spec, end = _spec(text, 0, top=True)
    except _Unreadable:
        return ValueSpec(text)
    return spec if end == len(text) else ValueSpec(text)


def read_signature(signature: Mapping[Any, Any]) -> dict[Any, Spec]:
    """Each argument's spec: as it is, or read from its text."""
    return {name: value if isinstance(value, SPEC_TYPES) else read_spec(str(value))
            for name, value in signature.items()}


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
        return ValueSpec(text), len(text)
    end = _value_end(text, start)
    return ValueSpec(text[start:end]), end


def _tensor_spec(match: re.Match[str]) -> Spec:
    weak, label, dtype, dims = bool(match.group(1)), match.group(2) or "", match.group(3), match.group(4)
    if dims == "?":
        return TensorSpec(dtype, None, label, weak)
    shape = tuple(None if dim == "None" else int(dim) for dim in dims.split(",")) if dims else ()
    return TensorSpec(dtype, shape, label, weak)


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
    return SequenceSpec(kind, tuple(children), len(children) if length is None else length), position


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
    return MappingSpec(tuple(items), len(items) if length is None else length), position


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
