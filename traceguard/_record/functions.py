"""Records of whole-function traces, and what differs from the closest earlier signature.

One `FunctionTrace` per trace of a `tf.function`, a `tf.data` function or a
`jax.jit` cache miss, made by `FunctionRecords.on_trace` from the hook's
`_compat._function_tracing.FunctionTracing`. A function is known two ways: by its
object (this `tf.function`), and by its code (the same `def`, with the same
functions and constants in its closure), so that a `tf.function` made anew in a
loop, or a Keras step of a model rebuilt per iteration, is recognised as the same
function in a new object. A trace's `changes` are what differs from the closest
earlier signature: the one with the fewest differing arguments, the most recent
on a tie, among the object's own earlier traces, or for a new object among every
earlier trace of its code (as JAX's cache-miss explanations pick the closest
previous key, jax/_src/pjit.py). Pure Python: no TensorFlow, no JAX, and no
reference to a tensor, graph or function is kept.

Each trace is diagnosed once (a `Diagnosis`: while it runs if a layer run asks, kept for when
it ends); `compared` holds the signatures as compared and picks the closest earlier one.
"""

from __future__ import annotations

import threading
import time
import types
import weakref
from collections import OrderedDict, deque
from typing import Any, NamedTuple

from traceguard._core.changes import Aspect, Change
from traceguard._core.functions import BODY_ORIGIN, Diagnosis, FunctionCost, FunctionTrace, MissCost
from traceguard._core.signature import (
    add_context,
    diff_contexts,
    diff_passing,
    diff_placements,
    diff_signatures,
)
from traceguard._core.specs import ArgumentPath, Spec
from traceguard._core.verdicts import EnclosingTrace, Reason
from traceguard._record.compared import Compared, argument_spec, closest_signature
from traceguard._record.function_identity import trace_facts
from traceguard._record.function_record import function_trace

# How many distinct earlier signatures of one code (and of one object) are kept to compare with.
_MAX_COMPARED = 256
# Tracing contexts kept per signature (JAX), to compare a new one with the closest.
_MAX_CONTEXTS = 8


# --- the records ------------------------------------------------------------------------
class _Code:
    """What the records know about one code: its objects and its distinct signatures."""

    __slots__ = ("objects", "signatures")

    def __init__(self) -> None:
        self.objects: dict[Any, int] = {}  # Function object key -> its number (1, 2, ...).
        # Distinct signatures, latest last (an OrderedDict drops its oldest in O(1)).
        self.signatures: OrderedDict[frozenset, Compared] = OrderedDict()


class _Preview(NamedTuple):
    """A running trace's `Diagnosis`, what it was computed from, and what its layer runs read."""

    inputs: tuple
    diagnosis: Diagnosis
    enclosing: EnclosingTrace


class FunctionRecords:
    """Receives the hook's traces (`on_trace`) and keeps a `FunctionTrace` for each.

    Thread-safe. Bounded: past `limit` records the oldest are dropped (`dropped`
    counts them); what is known of each function's earlier traces is kept.
    """

    def __init__(self, limit: int = 10_000) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"`limit` must be a positive integer. Received: limit={limit!r}")
        self.limit = limit
        self.dropped = 0
        self._records: deque[FunctionTrace] = deque()
        self._lock = threading.Lock()
        self._codes: dict[tuple, _Code] = {}
        # Per function object: its last trace's (compared signature, phase, created variables),
        # and its distinct signatures, latest last.
        self._object_traces: dict[Any, list[tuple[Compared, str | None, bool]]] = {}
        # `def` site -> object key -> its number among the site's objects (`_numbered_by_site`).
        self._site_objects: dict[tuple[str, str, int], dict[Any, int]] = {}
        self._object_signatures: dict[Any, OrderedDict[frozenset, Compared]] = {}
        self._next_index = 0
        self._code_of: dict[int, tuple] = {}  # Record index -> its code key.
        self._owner_of: dict[int, Any] = {}  # Record index -> its function object key.
        self._function_texts: dict[str, tuple] = {}  # TF's repr of a function -> its code key.
        self._models: dict[Any, int] = {}  # A Keras step's function object key -> its model's id.
        # Trace serial -> its `Diagnosis` while it runs, with what it was computed from.
        self._previews: dict[int, _Preview] = {}
        self._registered: dict[tuple, int] = {}  # Code key -> how many of its traces were registered.
        # Per function object: the signatures compiled (XLA, JAX), latest last; and the
        # records made but not yet completed (`on_complete`), by serial.
        self._compiled: dict[Any, OrderedDict[frozenset, Compared]] = {}
        self._pending: dict[int, tuple[int, Any, Compared]] = {}
        self._costs: dict[int, MissCost] = {}  # Record index -> its cost as its call returned (`cost_of`).
        # Per JAX body object (`BODY_ORIGIN`): the serial of the trace its last trace ran inside.
        self._body_parents: dict[Any, int | None] = {}

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Any:
        with self._lock:
            return iter(list(self._records))

    def records(self, code: tuple | None = None) -> list[FunctionTrace]:
        """Every record kept, oldest first; only those of `code` (a `code_key`) if given."""
        with self._lock:
            if code is None:
                return list(self._records)
            return [r for r in self._records if self._code_of.get(r.index) == code]

    def preview(self, tracing: Any) -> EnclosingTrace:
        """While `tracing` runs: its kind and reason, its changes and how many objects its code has.

        The layer runs made during the trace ask: the first one computes the `Diagnosis`, the
        others read it, and `on_trace` records it when the trace ends unless a trace of
        its code was recorded in between or what it was computed from changed.
        """
        kept = self._previews.get(tracing.serial)
        if kept is None:
            with self._lock:
                self._diagnosis(tracing, *trace_facts(tracing))
                kept = self._previews[tracing.serial]
        return kept.enclosing

    def on_trace(self, tracing: Any) -> FunctionTrace:
        """The listener: makes the record of one ended trace (a `FunctionTracing`), or of an
        XLA compilation without a trace (its `compilation` is true)."""
        facts = trace_facts(tracing)
        key, site, signature, object_key = facts
        with self._lock:
            index = self._next_index
            if getattr(tracing, "compilation", False):
                placements = getattr(tracing, "placements", None)
                diagnosis = self._compilation(key, signature, object_key, placements)
            else:
                diagnosis = self._diagnosis(tracing, key, site, signature, object_key)
                self._register(key, signature, object_key, tracing, diagnosis)
            self._previews.pop(tracing.serial, None)
            # A frame after a graph break (torch) is numbered as the function it is part of.
            number, objects = self._numbered_by_site(site, getattr(tracing, "part_of", None) or object_key,
                                                     diagnosis.object_number, diagnosis.objects)
            closest = self._record_at(diagnosis.closest)
            record = function_trace(index, tracing, facts, diagnosis, number, objects,
                                    None if closest is None else closest.signature)
            self._records.append(record)
            self._pending[tracing.serial] = (index, object_key, Compared(
                index, signature, placements=getattr(tracing, "placements", None)))
            if len(self._pending) > self.limit:
                self._pending.pop(next(iter(self._pending)))
            self._code_of[index] = key
            self._owner_of[index] = object_key
            if tracing.function_text:
                self._function_texts[tracing.function_text] = key
            if len(self._records) > self.limit:
                old = self._records.popleft()
                self._code_of.pop(old.index, None)
                self._owner_of.pop(old.index, None)
                self._costs.pop(old.index, None)
                self.dropped += 1
        return record

    def on_complete(self, tracing: Any) -> tuple[FunctionTrace, MissCost] | None:
        """The record of `tracing` and what its miss cost: its phases and whole miss (see
        `_compat._function_calls`), kept beside the record (`cost_of`); None when it was not
        recorded. The signature it compiled is kept, to compare later compilations with."""
        compiled = getattr(tracing, "compiled_arguments", None)
        specs = None if compiled is None else {name: argument_spec(value) for name, value in compiled.items()}
        with self._lock:
            pending = self._pending.pop(tracing.serial, None)
            if pending is None:
                return None
            index, object_key, compared = pending
            if specs is not None:
                compared = Compared(index, specs)
            if not tracing.raised:
                signatures = self._compiled.setdefault(object_key, OrderedDict())
                signatures[compared.pairs] = compared
                signatures.move_to_end(compared.pairs)
                if len(signatures) > _MAX_COMPARED:
                    signatures.popitem(last=False)
            offset = time.time() - time.perf_counter()  # One reading for both times: they nest.
            position = self._position(index)
            if position < 0:  # Dropped already.
                return None
            cost = self._costs[index] = MissCost(
                types.MappingProxyType(dict(tracing.phases)), miss=tracing.miss,
                persistent_cache=tracing.persistent_cache, cache_saved=tracing.cache_saved,
                started=offset + tracing.start,
                call_started=None if tracing.call_start is None else offset + tracing.call_start)
            return self._records[position], cost

    def cost_of(self, record: FunctionTrace) -> MissCost:
        """What the miss of `record` cost: as its call returned (`on_complete`), else as it ended."""
        return self._costs.get(record.index, record.miss_cost)  # One read of a dict: no lock.

    def _position(self, index: int | None) -> int:
        """Where the record of `index` is in `_records`, or -1. Called with the lock held."""
        if index is None or not self._records:
            return -1
        position = index - self._records[0].index
        if 0 <= position < len(self._records) and self._records[position].index == index:
            return position
        return next((place for place in range(len(self._records) - 1, -1, -1)
                     if self._records[place].index == index), -1)

    def _record_at(self, index: int | None) -> FunctionTrace | None:
        position = self._position(index)
        return None if position < 0 else self._records[position]

    def _compilation(self, key: tuple, signature: dict[str, Spec], object_key: Any,
                     placements: dict[Any, str] | None = None) -> Diagnosis:
        """The `Diagnosis` of a compilation: what differs from the closest signature compiled
        (then, on JAX, where its arrays are placed). Called with the lock held."""
        index = self._next_index
        self._next_index += 1
        compared = Compared(index, signature, placements=placements)
        code = self._codes.get(key) or _Code()
        number = code.objects.get(object_key, len(code.objects) + 1)
        closest = closest_signature(self._compiled.get(object_key, OrderedDict()), compared)
        changes = diff_signatures(closest.signature, signature) if closest is not None else []
        reason = Reason.XLA_COMPILE if changes else Reason.RECOMPILE
        if closest is not None:
            changes += diff_placements(closest.placements, placements)
        return Diagnosis(reason, tuple(changes), None if closest is None else closest.index, number,
                         max(len(code.objects), number))

    def _diagnosis(self, tracing: Any, key: tuple, site: tuple[str, str, int] | None,
                   signature: dict[str, Spec], object_key: Any) -> Diagnosis:
        """The trace's `Diagnosis`, computed once: kept from `preview` while no trace of its code was
        recorded since and what it was computed from is unchanged. Called with the lock held."""
        # What it reads of the records changes only when its code registers a trace, or a record drops.
        # The Keras call by identity: a kept preview holds no model.
        inputs = (self._registered.get(key, 0), self.dropped, signature, tracing.context,
                  getattr(tracing, "keywords", None), tracing.phase,
                  getattr(tracing, "backend_changes", None), id(tracing.keras_call))
        kept = self._previews.get(tracing.serial)
        if kept is not None and kept.inputs == inputs:
            return kept.diagnosis
        diagnosis = self._diagnose(key, site, signature, object_key, tracing)
        if kept is None:
            enclosing = EnclosingTrace(diagnosis.kind, diagnosis.reason, diagnosis.changes, diagnosis.objects,
                                       diagnosis.same_model)
            self._previews[tracing.serial] = _Preview(inputs, diagnosis, enclosing)
        return diagnosis

    def _diagnose(self, key: tuple, site: tuple[str, str, int] | None, signature: dict[str, Spec],
                  object_key: Any, tracing: Any) -> Diagnosis:
        """What the trace is against the earlier traces of its object and code. Called with the lock held."""
        index = self._next_index
        context = tracing.context
        keywords = getattr(tracing, "keywords", None)
        compared = Compared(index, signature, () if context is None else (context,), keywords)
        code = self._codes.get(key) or _Code()
        own = self._object_traces.get(object_key) if object_key in code.objects else None
        number = code.objects.get(object_key, len(code.objects) + 1)
        objects = max(len(code.objects), number)
        own_signatures = self._object_signatures.get(object_key, OrderedDict()) if own else OrderedDict()
        # A concrete function serves every value its unknown dimensions hold: TensorFlow's
        # lookup is by subtype, so the closest earlier trace is compared the same way.
        candidates = own_signatures if own else code.signatures
        closest = closest_signature(candidates, compared, accepts_unknown=True)
        changes: list[Change] = []
        backend_changes = getattr(tracing, "backend_changes", None)
        if backend_changes is not None and own:  # torch said why (its guards), in the user's terms.
            changes = list(backend_changes)
        elif closest is not None:
            # The context first: JAX keys (context, arguments) and names a context difference first.
            changes = diff_contexts(closest.contexts, context)
            changes += diff_signatures(closest.signature, signature, accepts_unknown=True)
            changes += diff_passing(closest.keywords, keywords, closest.signature, signature)
        reason = self._reason(own or [], objects, compared, tracing.phase, bool(changes))
        # A variable retrace: the variables the object's earlier, creating trace made.
        lifted = own[-1][2] if reason is Reason.VARIABLE_RETRACE and own else ()
        if reason is Reason.NEW_FUNCTION_OBJECT:
            earlier = max((n for k, n in code.objects.items() if k != object_key), default=1)
            if closest is not None:
                owner = self._owner_of.get(closest.index)
                earlier = code.objects.get(owner, earlier) if owner is not None else earlier
            changes.insert(0, Change(ArgumentPath(tracing.name), Aspect.FUNCTION_OBJECT, earlier, number))
        if tracing.origin == BODY_ORIGIN and tracing.parent is not None and reason is not Reason.FIRST_TRACE \
                and not (own and self._body_parents.get(object_key) == tracing.parent):
            # Traced as part of the enclosing trace (its first, or its retrace), not again inside it.
            reason = Reason.PART_OF_TRACE
        if reason is Reason.FIRST_TRACE and getattr(tracing, "resumed_after", None) is not None:
            reason = Reason.PART_OF_TRACE  # torch: the first compile of the code after a graph break.
        return Diagnosis(reason, tuple(changes), None if closest is None else closest.index, number, objects,
                         lifted, self._same_model(key, object_key, tracing))

    def _register(self, key: tuple, signature: dict[str, Spec], object_key: Any, tracing: Any,
                  diagnosis: Diagnosis) -> None:
        """Keeps the trace as an earlier trace of its object and code. Called with the lock held."""
        index = self._next_index
        context = tracing.context
        keywords = getattr(tracing, "keywords", None)
        compared = Compared(index, signature, () if context is None else (context,), keywords)
        if tracing.origin == BODY_ORIGIN:
            self._body_parents[object_key] = tracing.parent
        if tracing.keras_call is not None and tracing.keras_call.model is not None:
            self._models[object_key] = tracing.keras_call.model
        self._next_index += 1
        self._registered[key] = self._registered.get(key, 0) + 1
        code = self._codes.setdefault(key, _Code())
        code.objects[object_key] = diagnosis.object_number
        own = self._object_traces.setdefault(object_key, [])
        own[:] = [(compared, tracing.phase, tuple(tracing.created_variables))]
        own_signatures = self._object_signatures.setdefault(object_key, OrderedDict())
        # What the backend keyed: with `reduce_retracing`, TensorFlow keeps the relaxed
        # signature (`float32[None]`), which later calls are looked up against.
        relaxed = tracing.relaxed_signature
        kept = compared if relaxed is None else Compared(index, dict(relaxed), compared.contexts, keywords)
        earlier = own_signatures.get(kept.pairs) or code.signatures.get(kept.pairs)
        if earlier is not None and context is not None:  # The backend keys (context, signature).
            kept.contexts = add_context(earlier.contexts, context, _MAX_CONTEXTS)
        for signatures in (own_signatures, code.signatures):
            signatures[kept.pairs] = kept
            signatures.move_to_end(kept.pairs)  # Latest last.
            if len(signatures) > _MAX_COMPARED:
                signatures.popitem(last=False)

    def _same_model(self, key: tuple, object_key: Any, tracing: Any) -> bool | None:
        """For a Keras step's trace: whether its model is the model of the last other function object
        of its code (the step function was made again for the same model); None when not known.
        Called with the lock held."""
        model = tracing.keras_call.model if tracing.keras_call is not None else None
        if model is None:
            return None
        code = self._codes.get(key)
        earlier = None
        if code is not None:
            others = [(number, known) for known, number in code.objects.items() if known != object_key]
            if others:
                earlier = self._models.get(max(others, key=lambda pair: pair[0])[1])
        return None if earlier is None else earlier == model

    def _numbered_by_site(self, site: tuple[str, str, int] | None, object_key: Any, number: int,
                          objects: int) -> tuple[int, int]:
        """An object's number among the objects of its `def` site, as reports group functions.

        Keras makes its train and test steps from one `def` (two codes: their closures hold
        `train_step` and `test_step`): numbered per code, both would be "object 1", and a guard
        counting per object would add the test step's trace to the train step's (measured:
        `fit` with `validation_data`, two `tf.function` objects each traced once).
        Called with the lock held."""
        if site is None:
            return number, objects
        known = self._site_objects.setdefault(site, {})
        site_number = known.setdefault(object_key, len(known) + 1)
        return site_number, max(objects, len(known))

    @staticmethod
    def _reason(own: list, objects: int, compared: Compared, phase: str | None, changed: bool) -> Reason:
        if own:
            last, last_phase, created = own[-1]
            if phase == "no_variable_creation" and last_phase == "variable_creation" and created \
                    and last.pairs == compared.pairs:
                return Reason.VARIABLE_RETRACE
            return Reason.SIGNATURE_CHANGED if changed else Reason.SAME_ARGUMENTS
        return Reason.NEW_FUNCTION_OBJECT if objects > 1 else Reason.FIRST_TRACE

    def costs(self) -> list[FunctionCost]:
        """Tracing time and what the misses cost per function (per code), the most expensive first."""
        groups: dict[tuple, list[FunctionTrace]] = {}
        with self._lock:
            for record in self._records:
                groups.setdefault(self._code_of[record.index], []).append(record)
            seconds = {r.index: self.cost_of(r).seconds(r.duration) for r in self._records}
        costs = [FunctionCost(
            name=records[-1].name, qualname=records[-1].qualname, definition=records[-1].definition,
            traces=len(records), retraces=sum(r.is_retrace for r in records),
            objects=records[-1].objects, seconds=sum(r.duration for r in records),
            cost_seconds=sum(seconds[r.index] for r in records))
            for records in groups.values()]
        return sorted(costs, key=lambda cost: (cost.cost_seconds, cost.seconds), reverse=True)

    def function_reference(self, record: FunctionTrace) -> Any:
        """A weak reference to the function object `record` traced (None once dropped, or on JAX)."""
        owner = self._owner_of.get(record.index)
        return owner if isinstance(owner, weakref.ref) else None

    def code_of(self, record: FunctionTrace) -> tuple | None:
        """The `code_key` of the function `record` traced (None once dropped)."""
        return self._code_of.get(record.index)

    def records_for_function_text(self, text: str) -> list[FunctionTrace]:
        """The records of the function TensorFlow's retracing warning names as `text`."""
        key = self._function_texts.get(text)
        return [] if key is None else self.records(key)
