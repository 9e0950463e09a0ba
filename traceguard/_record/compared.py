"""A trace's signature as compared, and the closest earlier signature to a new one.

`argument_spec` is the spec an argument keys a trace by (a `tf.data` dataset by its
elements, a `tf.TensorSpec` as the tensor it describes); `Compared` holds a signature as
the sets that are compared (computed once per signature); `closest_signature` picks, among earlier
signatures, the one a new trace's `changes` are computed from. `functions` keeps the records
and asks these; nothing here keeps a record.
"""

from __future__ import annotations

from typing import Any

from traceguard import _compat
from traceguard._core.signature import diff_signatures
from traceguard._core.specs import MappingSpec, SequenceSpec, Spec, TensorSpec

# Candidates differing in one argument compared change by change (`closest_signature`).
_TIES_COMPARED = 8
# The pair that keys a call's keyword arguments, beside its signature's (JAX).
_KEYWORDS = ("(passed by keyword)",)


class Compared:
    """A signature as compared: its (name, spec) pairs and names, as sets; the tracing
    contexts it was traced in (JAX; latest last), or none when not read; and the arguments
    passed by keyword (JAX keys them apart: one more pair), or None when not read."""

    __slots__ = ("index", "signature", "pairs", "names", "contexts", "keywords", "placements")

    def __init__(self, index: int, signature: dict[str, Spec],
                 contexts: tuple[tuple[tuple[str, Any], ...], ...] = (),
                 keywords: tuple[str, ...] | None = None, placements: dict[Any, str] | None = None) -> None:
        self.index, self.signature, self.contexts, self.keywords = index, signature, contexts, keywords
        self.placements = placements  # JAX: what the executable compiled for it is keyed by besides.
        pairs = signature.items() if keywords is None else (*signature.items(), (_KEYWORDS, keywords))
        self.pairs = frozenset(pairs)
        self.names = frozenset(signature)

    def differing_arguments(self, new: Compared) -> int:
        # Set differences run in C on hashes computed once per signature.
        return len(new.pairs - self.pairs) + len(self.names - new.names)


def closest_signature(candidates: dict[frozenset, Compared], new: Compared,
             accepts_unknown: bool = False) -> Compared | None:
    """The candidate with the fewest differing arguments; among those, the fewest changes
    (`diff_signatures`, with `accepts_unknown`); the most recent on a tie.

    `candidates` are distinct signatures, latest last. The same signature is the
    closest if present; else at least one argument differs, and the search ends at
    the `_TIES_COMPARED`th candidate with one differing argument: one argument's
    `float32[2,2]` is closer to its relaxed `float32[None]` (rank) than to a newer
    `int32[5]` (dtype and rank).
    """
    exact = candidates.get(new.pairs)
    if exact is not None:
        return exact
    best: Compared | None = None
    best_count = -1
    ties: list[Compared] = []
    for candidate in reversed(candidates.values()):
        count = candidate.differing_arguments(new)
        if count <= 1:
            ties.append(candidate)
            if len(ties) == _TIES_COMPARED:
                break
        elif best is None or count < best_count:
            best, best_count = candidate, count
    if len(ties) == 1:
        return ties[0]
    if ties:  # min keeps the first (newest) of equals.
        return min(ties, key=lambda tie: len(diff_signatures(tie.signature, new.signature, accepts_unknown)))
    return best


def argument_spec(value: Any) -> Spec:
    # A `tf.data` iterator or dataset traces by its elements' specs (its public
    # `element_spec`), not by its identity.
    element_spec = getattr(value, "element_spec", None) if not hasattr(value, "shape") else None
    return _as_dense(_compat.spec_of(value if element_spec is None else element_spec))


def _as_dense(spec: Spec) -> Spec:
    # A `tf.TensorSpec` (an `input_signature`, a `tf.data` element) stands for the
    # tensor it describes: `float32[None,3]`, as a tensor's spec reads.
    if isinstance(spec, TensorSpec):
        return spec._replace(type_name="") if spec.type_name == "TensorSpec" else spec
    if isinstance(spec, SequenceSpec):
        return spec._replace(items=tuple(_as_dense(item) for item in spec.items))
    if isinstance(spec, MappingSpec):
        return spec._replace(items=tuple((key, _as_dense(item)) for key, item in spec.items))
    return spec
