"""The report read back from a trace file against the live report that wrote it.

`report_differences(live, restored)` lists every way two `Explanation`s differ: per
layer and per function, the same events (every field: kind, changes, verdict,
signature, times, ...), the same counts, eager runs, objects and costs.
`assert_same_report(live, path)` reads a trace file and fails with that list.
`schema_errors(path)` checks each line against the schema docs/trace-files.md documents.

Imported as `trace_file_parity` (pytest puts `tests/` on `sys.path`; a checker run
from elsewhere adds it); nothing here imports TensorFlow, JAX or Keras.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from traceguard._diagnosis.trace_file_reader import merged_explanation, read_trace_file

_LAYER_FIELDS = ("class_name", "trace_aware", "eager_calls", "dropped")
_FUNCTION_FIELDS = ("name", "function", "definition", "keras_step", "objects", "dropped", "kind_counts",
                    "cache_counts")
_SECONDS_FIELDS = ("cost_seconds", "cache_saved_seconds")


def restored_report(path: str | os.PathLike[str]) -> Any:
    """The `Explanation` `traceguard report FILE` renders, read back from one trace file."""
    return merged_explanation([read_trace_file(os.fspath(path))])


def report_differences(live: Any, restored: Any) -> list[str]:
    """Every difference between two `Explanation`s' layers and functions, as lines of text.

    Empty when they hold the same events (compared field by field), kinds, changes,
    counts and costs. Sums of seconds may differ in their last bits (a sum made in
    another order), so they are compared as close; each event's own seconds exactly.
    """
    differences: list[str] = []
    live_layers, restored_layers = live.layers, restored.layers
    _compare_keys("layer", live_layers, restored_layers, differences)
    for name in live_layers.keys() & restored_layers.keys():
        mine, theirs = live_layers[name], restored_layers[name]
        where = f"layer {name!r}"
        differences += _field_differences(where, mine, theirs, _LAYER_FIELDS, operator.eq)
        if mine.counts() != theirs.counts():
            differences.append(f"{where}: counts {mine.counts()} live, {theirs.counts()} read back")
        differences += _event_differences(where, mine.events, theirs.events, "index")
    live_functions, restored_functions = live.functions, restored.functions
    _compare_keys("function", live_functions, restored_functions, differences)
    for key in live_functions.keys() & restored_functions.keys():
        mine, theirs = live_functions[key], restored_functions[key]
        where = f"function {key!r}"
        differences += _field_differences(where, mine, theirs, _FUNCTION_FIELDS, operator.eq)
        differences += _field_differences(where, mine, theirs, _SECONDS_FIELDS, _close)
        phases, read_phases = mine.phase_seconds, theirs.phase_seconds
        if phases.keys() != read_phases.keys() or \
                not all(_close(seconds, read_phases[phase]) for phase, seconds in phases.items()):
            differences.append(f"{where}: phase_seconds {mine.phase_seconds} live, {theirs.phase_seconds} "
                               "read back")
        differences += _event_differences(where, mine.events, theirs.events, "serial")
    return differences


def assert_same_report(live: Any, path: str | os.PathLike[str]) -> Any:
    """Fails, listing the differences, unless the trace file at `path` reads back as `live`.

    Returns the report read back.
    """
    restored = restored_report(path)
    differences = report_differences(live, restored)
    assert not differences, f"the trace file {os.fspath(path)} reads back as another report:\n" + \
        "\n".join(differences)
    return restored


def assert_same_function_events(live: Any, path: str | os.PathLike[str]) -> int:
    """Fails unless every function event read back from the trace file at `path` views the very
    `FunctionTrace` its live event in `live` (an `Explanation`) views, with the same words and each
    documented attribute equal (`started` to the millisecond: see `_EPOCH_FIELDS`); and unless
    each live event's own `to_json()` reads back as itself.

    Returns how many events it compared.
    """
    restored = restored_report(path).functions
    compared = 0
    for key, runs in live.functions.items():
        read = {event.serial: event for event in restored[key].events}
        for event in runs.events:
            theirs = read[event.serial]
            assert theirs.trace == event.trace, (key, event.serial)
            assert (theirs.reason, theirs.hint) == (event.reason, event.hint)
            for name in sys.modules[type(event).__module__].ATTRIBUTES:
                mine, their = getattr(event, name), getattr(theirs, name)
                if name in _EPOCH_FIELDS and None not in (mine, their):
                    assert abs(mine - their) < 1e-3, (key, event.serial, name, mine, their)
                else:
                    assert mine == their, (key, event.serial, name, mine, their)
            assert type(event).from_json(json.loads(json.dumps(event.to_json()))) == event
            compared += 1
    return compared


def documented_schema() -> dict[str, Any]:
    """The JSON Schema of a trace file's lines, as docs/trace-files.md gives it (the JSON block after
    its `<!-- trace-file-schema -->` mark)."""
    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "trace-files.md").read_text()
    block = page.split("<!-- trace-file-schema -->", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    return json.loads(block)


def schema_errors(path: str | os.PathLike[str]) -> list[str]:
    """Each line of the trace file at `path` that the documented schema rejects, with why."""
    import jsonschema

    schema = documented_schema()
    whole = jsonschema.Draft202012Validator(schema)
    errors = []
    for number, line in enumerate(pathlib.Path(path).read_text().splitlines(), start=1):
        record = json.loads(line)
        kind = record.get("type", "header")
        if kind not in schema["$defs"]:
            errors.append(f"line {number}: a record of type {kind!r}, which the schema does not document")
            continue
        # Checked against its own type's schema, whose errors say why; then against the whole.
        own = {key: value for key, value in schema.items() if key != "oneOf"}
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator({**own, "$ref": f"#/$defs/{kind}"}).iter_errors(record))
        if error is not None:
            errors.append(f"line {number} ({kind}): {error.message} at {list(error.absolute_path)}")
        elif not whole.is_valid(record):
            errors.append(f"line {number} ({kind}): matches more than one record type")
    return errors


def _field_differences(where: str, mine: Any, theirs: Any, fields: tuple[str, ...],
                       same: Callable[[Any, Any], bool]) -> list[str]:
    return [f"{where}: {field} {getattr(mine, field)!r} live, {getattr(theirs, field)!r} read back"
            for field in fields if not same(getattr(mine, field), getattr(theirs, field))]


def _compare_keys(what: str, live: dict[str, Any], restored: dict[str, Any], differences: list[str]) -> None:
    for key in live.keys() - restored.keys():
        differences.append(f"{what} {key!r}: live only ({_size(live[key])}), missing from the file")
    for key in restored.keys() - live.keys():
        differences.append(f"{what} {key!r}: read back only ({_size(restored[key])}), not in the live report")


def _size(runs: Any) -> str:
    return f"{len(runs.events)} events"


def _event_differences(where: str, live: list[Any], restored: list[Any], number: str) -> list[str]:
    """The events missing on either side (by `number`, their `index` or `serial`), and each field of
    an event present on both that differs."""
    mine = {getattr(event, number): event for event in live}
    theirs = {getattr(event, number): event for event in restored}
    differences = []
    if mine.keys() != theirs.keys():
        differences.append(f"{where}: events {sorted(mine.keys() - theirs.keys())} live only, "
                           f"{sorted(theirs.keys() - mine.keys())} read back only "
                           f"({len(live)} live, {len(restored)} read back)")
    if [getattr(event, number) for event in live] != [getattr(event, number) for event in restored] \
            and mine.keys() == theirs.keys():
        differences.append(f"{where}: events in another order")
    for key in sorted(mine.keys() & theirs.keys()):
        for name in _compared(mine[key]):
            old, new = getattr(mine[key], name), getattr(theirs[key], name)
            if name in _EPOCH_FIELDS and None not in (old, new) and abs(old - new) < 1e-3:
                continue  # An epoch time converted from the monotonic clock apart: within a millisecond.
            if old != new:
                differences.append(f"{where} event {number} {key}: {name} {old!r} live, "
                                   f"{new!r} read back")
    return differences


def _compared(event: Any) -> list[str]:
    """What is compared of an event: a layer's `TraceEvent`, its fields; a `FunctionEvent`, each
    attribute it documents and the whole `FunctionTrace` it views (its cost is compared through
    its attributes, `started` to the millisecond)."""
    names = [field.name for field in dataclasses.fields(event) if field.name != "cost"]
    return names + [name for name in getattr(sys.modules[type(event).__module__], "ATTRIBUTES", ())
                    if name not in names]


# Times since the epoch, which the live event and the file's line each convert from the monotonic
# clock at their own moment: equal to a millisecond, not to the last bit.
_EPOCH_FIELDS = ("started",)


def _close(first: float, second: float) -> bool:
    return math.isclose(first, second, rel_tol=1e-9, abs_tol=1e-12)


__all__ = ["assert_same_function_events", "assert_same_report", "documented_schema", "report_differences",
           "restored_report", "schema_errors"]
