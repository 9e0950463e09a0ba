"""`Explanation`: the body runs of every layer seen during a span of time, grouped per layer.

One report type for `explain()`, `watch()`, `python -m traceguard run` and
`callbacks.TraceMonitor`. The recorder tells its `Filler` (an observer, see
`_diagnosis.filler`, private to traceguard) of each run; it keeps plain data only
(`TraceEvent`s and counts, never a layer or a tensor), so a report outlives what it
describes and other renderers can read `layers` and `events` as they are.

This module gathers and answers (counts, filters, fixes, renderings); one layer's runs are
a `LayerRuns` (`layer_runs`), one function's a `FunctionRuns` (`function_runs`).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pathlib
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from traceguard._core.events import TraceEvent
from traceguard._core.function_runs import FunctionRuns, count_traces
from traceguard._core.functions import FunctionId
from traceguard._core.kinds import normalize_kinds
from traceguard._core.layer_runs import LayerRuns
from traceguard._diagnosis.fixes import FixIt, propose_fix
from traceguard._diagnosis.function_runs import add_cost, add_record, function_key
from traceguard._diagnosis.reported import LibraryTraces
from traceguard._record.log import event_of
from traceguard._record.settings import STATE_ATTRIBUTE
from traceguard._reports.html import render_html, write_document
from traceguard._reports.html_tables import layers_html
from traceguard._reports.problems import explanation_repr, format_problems
from traceguard._reports.text import format_explanation, format_layer_table

if TYPE_CHECKING:
    from traceguard._core.functions import FunctionTrace, MissCost
    from traceguard._diagnosis.fix_checks import FixChecks
    from traceguard._diagnosis.trace_file import TraceFileWriter

# `fix_checks` (which imports TensorFlow) is imported when fixes are checked, so that
# `python -m traceguard report` rebuilds an `Explanation` without the backend.

EVENTS_PER_LAYER = 1000


class Explanation:
    """The body runs of every layer seen while traceguard watched, per layer.

    Returned by `traceguard.explain()`, yielded by `traceguard.watch()`, kept by
    `traceguard.callbacks.TraceMonitor` as `report`. `str()` gives a readable
    report: a table of counts per layer, then each layer's runs with the
    reason, what changed and the fix. It is filled while it watches and can be
    read at any time; reading gives snapshots.

    Attributes:
        title: What was watched, e.g. `"explain(functional)"`.

    Example:

    ```python
    explanation = traceguard.explain(tf.function(model), x)
    print(explanation)
    explanation.count("retrace")  # The functions' retraces; of="layers": the layers' runs.
    explanation.layers["dense"].events[0].reason
    ```
    """

    def __init__(self, title: str) -> None:
        self.title = title
        self._lock = threading.Lock()
        self._layers: dict[str, LayerRuns] = {}
        self._layer_of: weakref.WeakKeyDictionary[Any, LayerRuns] = weakref.WeakKeyDictionary()
        # The same by `id(layer)`, with a weak reference to check it: every run looks its layer
        # up, and a `WeakKeyDictionary` lookup is Python code.
        self._layer_by_id: dict[int, tuple[weakref.ref[Any], LayerRuns]] = {}
        self._order: dict[int, int] = {}  # id(event) -> arrival number, to break timestamp ties.
        self._unmade = False  # Whether a layer's `events` holds a run whose event is not made yet.
        self._arrivals = itertools.count()
        self._first_run: dict[str, float] = {}  # Layer name -> when its first run started.
        self._functions: dict[FunctionId, FunctionRuns] = {}
        # Per user `tf.function` (its key in `functions`): its records, for fix-its, and a weak
        # reference to its latest function object, to check them (`verify_fixes`).
        self._fix_records: dict[str, list[FunctionTrace]] = {}
        self._fix_functions: dict[str, Any] = {}
        self._trace_file: TraceFileWriter | None = None  # Given each record, when writing one.
        self._library = LibraryTraces()
        # JAX transformations that keep no cache, seen running layers eagerly -> the Keras step
        # and setting that ran them so (`("train_step", "jit_compile=False")`), or None.
        self._uncached: dict[tuple[str, ...], tuple[str, str] | None] = {}

    # --- written by the recorder, from any thread ---
    def _runs_of(self, layer: Any) -> LayerRuns:
        runs = self._layer_of.get(layer)
        if runs is None:
            name = base = str(getattr(layer, "name", type(layer).__name__))
            for number in itertools.count(2):
                if name not in self._layers:
                    break
                name = f"{base}#{number}"
            # A `TraceAwareLayer` keeps its own state (its `trace_log`); a watched plain layer does not.
            runs = LayerRuns(name, type(layer).__name__, STATE_ATTRIBUTE in getattr(layer, "__dict__", ()))
            self._layers[name] = runs
            self._first_run[name] = time.time()
            self._layer_of[layer] = runs
        self._layer_by_id[id(layer)] = (weakref.ref(layer), runs)
        return runs

    def _add_event(self, layer: Any, event: TraceEvent) -> str:
        """Adds the event to the layer's runs; returns the layer's name in this report."""
        return self._add_run(layer, event, event.timestamp)

    def _add_run(self, layer: Any, run: Any, started: float | None = None) -> str:
        """Adds a finished run (`_record.runs.BodyRun`), whose event is made when first read.

        The recorder's fast path: the event's words cost more than the rest of
        the record, and most reports are read once, at the end. `_add_event`
        adds an event made already, which started at `started`.
        """
        entry = run
        with self._lock:
            if started is None:
                started = run.started
            if self._trace_file is not None and type(entry) is not TraceEvent:
                entry = event_of(entry)  # A trace file is written as the runs happen.
            known = self._layer_by_id.get(id(layer))
            runs = known[1] if known is not None and known[0]() is layer else self._runs_of(layer)
            if len(runs.events) >= EVENTS_PER_LAYER:
                self._order.pop(id(runs.events.pop(0)), None)
                runs.dropped += 1
            runs.events.append(entry)
            # Runs are reported when they end; an outer layer starts before its sublayers.
            self._first_run[runs.name] = min(self._first_run[runs.name], started)
            self._order[id(entry)] = next(self._arrivals)
            if self._trace_file is not None:
                self._trace_file.layer_run(runs, entry)
            else:
                self._unmade = True
            return runs.name

    def _make_events(self) -> None:
        """Turns the runs kept by `_add_run` into their events. Called with the lock held."""
        if not self._unmade:
            return
        for runs in self._layers.values():
            entries: list[Any] = runs.events  # TraceEvents, and runs kept by `_add_run`.
            for position, entry in enumerate(entries):
                if type(entry) is not TraceEvent:
                    event = entries[position] = event_of(entry)
                    self._order[id(event)] = self._order.pop(id(entry))
        self._unmade = False

    def _add_uncached(self, transformations: tuple[str, ...], setting: tuple[str, str] | None) -> None:
        with self._lock:
            self._uncached.setdefault(transformations, setting)

    @property
    def uncached(self) -> dict[tuple[str, ...], tuple[str, str] | None]:
        """The JAX transformations that ran layers with no cache to miss (`("grad",)`: autodiff
        outside any `jax.jit`), each with the Keras step and the setting that ran it so
        (`("train_step", "jit_compile=False")`), or None; their runs count as `eager`. On torch, the
        key `()`: a Keras step that ran eagerly (nothing compiled), with its setting."""
        with self._lock:
            return dict(self._uncached)

    def _add_eager(self, layer: Any) -> None:
        with self._lock:
            self._runs_of(layer).eager_calls += 1

    def _add_function_trace(self, record: FunctionTrace, function: Any = None) -> None:
        """Adds a whole-function trace to `functions` if reported (`LibraryTraces`); `function`:
        a weak reference to the function object it traced, for checking fix-its."""
        with self._lock:
            for shown, cost in self._library.reported(record):
                key, runs, event = add_record(self._functions, shown, cost)
                if self._trace_file is not None:
                    # Written now, its costs when the call returns: a call that never returns (a
                    # collective waiting for a diverged worker, a kill) keeps its trace in the file.
                    self._trace_file.function_trace(key, runs, shown, event)
            if record.origin == "tf.function" and not record.library_function:
                key = function_key(record)
                kept = self._fix_records.setdefault(key, [])
                kept.append(record)
                del kept[:-EVENTS_PER_LAYER]
                self._fix_functions[key] = function or self._fix_functions.get(key)

    def _add_function_cost(self, record: FunctionTrace, cost: MissCost) -> None:
        """Completes a function trace's event with `cost`, its phases and whole miss, as the call that
        made it returns; a trace file gets them as a record of their own."""
        with self._lock:
            found = add_cost(self._functions, record, cost) if self._library.completed(record, cost) else None
            if found is not None and self._trace_file is not None:
                self._trace_file.function_cost(cost, found[2])

    def _restore(self, layers: list[LayerRuns], functions: dict[FunctionId, FunctionRuns]) -> None:
        """Fills an empty report with runs read back from trace files, layers in the given order."""
        with self._lock:
            for number, runs in enumerate(layers):
                self._layers[runs.name] = runs
                self._first_run[runs.name] = number
                self._order.update((id(event), next(self._arrivals)) for event in runs.events)
            self._functions.update(functions)

    # --- public ---
    @property
    def functions(self) -> dict[FunctionId, FunctionRuns]:
        """Every traced function (`tf.function`, Keras step, `jax.jit`), by its `FunctionId`: its
        name and `def` site, equal to their text (`"train_step (train.py:12)"`).

        The user's functions and Keras's `fit`/`evaluate`/`predict` steps, each with
        its traces classified; TensorFlow's and Keras's own helper functions are
        left out.
        """
        with self._lock:
            return {key: runs.copy() for key, runs in self._functions.items()}

    def fixes(self) -> list[FixIt]:
        """The fix-its: for each `tf.function` that retraced, the change that stops it.

        An `input_signature` (a `tf.TensorSpec` per argument, `None` at the
        dimensions seen changing), `reduce_retracing=True`, or which Python
        number to pass as a tensor; computed from the recorded signatures
        only, nothing is run. `str()` of a fix is code to paste. Functions
        whose retraces have no such fix (a dtype that changes, a Python
        `bool` choosing a branch) and Keras's own steps are left out.
        """
        with self._lock:
            groups = [(key, list(records)) for key, records in self._fix_records.items()]
        fixes = []
        for key, records in groups:
            fix = propose_fix(records)
            if fix is not None:
                from traceguard._diagnosis.fix_checks import wrapped_object

                described = wrapped_object(self._live_function(key))
                fixes.append(dataclasses.replace(fix, wrapped_object=described) if described else fix)
        return fixes

    def _live_function(self, key: str) -> Any:
        reference = self._fix_functions.get(key)
        return None if reference is None else reference()

    def verify_fixes(self) -> FixChecks:
        """Checks each fix-it by replaying the function's recorded signatures.

        Runs your code: each distinct recorded signature is replayed as zero
        tensors of its specs (Python values as recorded) against two new
        `tf.function` copies of the Python function, one as written and one
        with the fix, and their trace counts are compared. Side effects in the
        function's body run during the replay; your function object is never
        called. Inside a `watch()` block, the copies' traces are left out of
        every report (a layer's runs inside them are not). `str()` of a check says what was replayed and the
        outcome, e.g. "3 traces -> 1 with this input_signature", or why it
        could not be verified.

        Returns:
            A list of `FixCheck`, one per fix-it of `fixes()`, whose `str()` is
            the report of them all, as `python -m traceguard run --verify-fixes`
            prints it.
        """
        from traceguard._diagnosis.fix_checks import FixChecks, verify_fix

        checks = FixChecks()
        for fix in self.fixes():
            key = f"{fix.qualname} ({fix.definition})" if fix.definition else fix.qualname
            checks.append(verify_fix(fix, self._live_function(key)))
        return checks

    @property
    def layers(self) -> dict[str, LayerRuns]:
        """Layer name to its `LayerRuns`, in the order the layers' first runs started."""
        with self._lock:
            self._make_events()
            names = sorted(self._layers, key=self._first_run.__getitem__)
            return {name: dataclasses.replace(self._layers[name], events=list(self._layers[name].events))
                    for name in names}

    @property
    def events(self) -> list[TraceEvent]:
        """Every event, all layers together, in the order the runs started."""
        with self._lock:
            self._make_events()
            events = [event for runs in self._layers.values() for event in runs.events]
            return sorted(events, key=lambda event: (event.timestamp, self._order[id(event)]))

    def filter(self, kind: Any = None, layer: str | None = None,
               function: str | None = None) -> list[TraceEvent]:
        """The events of the given kind(s), layer name and/or enclosing function.

        Args:
            kind: A `TraceKind`, its name, or a collection of them. Defaults to
                `None`, any kind.
            layer: A layer name, as in `layers`. Defaults to `None`, any layer.
            function: Name of the enclosing `tf.function`. Defaults to `None`,
                any function.

        Raises:
            ValueError: If `kind` names no `TraceKind`.
        """
        kinds = normalize_kinds(kind)
        if layer is None:
            events = self.events
        else:
            runs = self.layers.get(layer)
            events = runs.events if runs is not None else []
        return [event for event in events
                if (kinds is None or event.kind in kinds)
                and (function is None or event.function == function)]

    def count(self, kind: Any = None, layer: str | None = None, of: str | None = None) -> int:
        """How many function traces (by default), or layer runs, are of the given kind(s).

        Args:
            kind: A `TraceKind`, its name, or a collection of them. Defaults to `None`, any.
            layer: A layer name, as in `layers`: count its runs. Defaults to `None`.
            of: One of `{"functions", "layers"}`: whole functions' traces (what the backend
                and the report's headline count), or layers' body runs (`filter()`'s events;
                a step's trace runs every layer). Defaults to `"layers"` with `layer`, else
                `"functions"`.
        """
        traces = count_traces(self.functions.values(), kind, layer, of)
        return len(self.filter(kind, layer)) if traces is None else traces

    def to_dicts(self) -> list[dict[str, Any]]:
        """The events, in order, as JSON-serialisable dicts keyed by field name."""
        return [event.to_dict() for event in self.events]

    def table(self) -> str:
        """A table of counts by kind, one row per layer."""
        return format_layer_table(list(self.layers.values()))

    def summary(self, full: bool = False, brief: bool | None = None,
                fix_checks: FixChecks | None = None) -> str:
        """The text report: the problems first, one per cause ranked by cost, then the tables.

        Args:
            full: Boolean, whether to list every trace and layer run instead. Defaults to `False`.
            brief: Deprecated: `True` is the default report. Defaults to `None`.
            fix_checks: `verify_fixes()`'s checks, to say which fixes were proved. Defaults to `None`.
        """
        full = full if brief is None else brief is False
        if not isinstance(full, bool) or brief not in (None, True, False):
            raise ValueError(f"`full` and `brief` expect a bool. Received: full={full!r}, brief={brief!r}")
        texts = (self.title, list(self.layers.values()), list(self.functions.values()))
        return format_explanation(*texts, uncached=self.uncached) if full else \
            format_problems(*texts, fix_checks or (), uncached=self.uncached)

    def to_html(self, path: str | os.PathLike[str], axis: str = "time") -> pathlib.Path:
        """Writes the report as one self-contained HTML file: the functions, a timeline, then tables.

        A timeline row per function (a mark per trace) and per layer (a mark per body run), coloured
        by kind, with the reason, changes and fix as tooltip; then the counts by kind per layer and
        the retraces, one row per cause. Nothing fetched: the file opens offline. `traceguard run
        --html`, `traceguard report --html` and `TraceMonitor(html=...)` write it.

        Args:
            path: File to write (str or path-like); its directory must exist.
            axis: One of `{"time", "order"}`: place runs by seconds since the
                first run, or by their order. Defaults to `"time"`.

        Returns:
            The path written, as a `pathlib.Path`.

        Raises:
            TypeError: If `path` is not a str or path-like.
            ValueError: If `axis` is not one of the choices.
        """
        return write_document(path, render_html(self.layers, title=self.title, axis=axis,
                                                functions=list(self.functions.values())))

    def _repr_html_(self) -> str:
        """The notebook display: counts by kind per layer, then the retraces with their fixes."""
        return layers_html(self.layers, self.title, list(self.functions.values()))

    __str__ = summary

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # IPython's text display: the report.
        printer.text(repr(self) if cycle else self.summary())

    def __repr__(self) -> str:
        return explanation_repr(self.title, list(self.functions.values()), list(self.layers.values()))
