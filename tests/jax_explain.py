"""JAX's own explanation of each tracing-cache miss, read into values and held against a trace file.

With `jax_explain_cache_misses` on, `partial_eval.trace_to_jaxpr`'s cache calls
`partial_eval.explain` on every miss of a function defined in a file JAX calls the
user's (`source_info_util.is_user_filename`: outside JAX and the standard library,
so Keras's files count), which logs one "TRACING CACHE MISS" warning on the
`jax._src.interpreters.partial_eval` logger: "never seen function" (and, when its
call site missed before, "maybe the function is being re-defined repeatedly"), or
the differences from the closest earlier key (jax/_src/interpreters/partial_eval.py,
jax 0.10: `explain`, `diff_tracing_cache_keys`, `diff_trees`, `diff_types`).
JAX's "closest" is the earlier key of the lowest severity (a tracing-context
difference, then a pytree one, then debug info, then types), not the one with the
fewest differences.

`RUNNER` runs a program under `traceguard.watch(trace_file=...)` with the
explanations on, and writes each one as a JSON line with the jitted function's
parameters as JAX bound them (`PjitInfo.fun_signature`; none for a body JAX
traced below `jax.jit`, whose arguments JAX names by the body's parameters). `parity_gaps` then checks
that the trace file's `function_trace` records name every difference JAX names.
Nothing here imports JAX.
"""

from __future__ import annotations

import json
import os
import re
import sysconfig
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from traceguard._core.keras_names import is_keras_step_function

RUNNER = """
import json, logging, runpy, sys, traceback
script, trace_file, misses_file = sys.argv[1:4]
import jax
jax.config.update("jax_explain_cache_misses", True)


class MissLog(logging.Handler):
    # Called inside `partial_eval.explain`: the frame below it called `trace_to_jaxpr`. From
    # `pjit._trace_for_jit` (a `jax.jit` miss), its `ji.fun_signature` named the arguments.
    def __init__(self, path):
        super().__init__()
        self.file = open(path, "w")

    def emit(self, record):
        frame = sys._getframe()
        while frame is not None and not (frame.f_code.co_name == "explain"
                                         and frame.f_code.co_filename.endswith("partial_eval.py")):
            frame = frame.f_back
        caller = frame.f_back if frame is not None else None
        while caller is not None and "/traceguard/" in caller.f_code.co_filename:  # Its hooks call JAX's.
            caller = caller.f_back
        # With traceguard's hook on the tracing cache, JAX's cache wrapper and traceguard's
        # `trace_to_jaxpr` wrapper stand between: look a few frames further for a jit miss.
        jit_frame, depth = caller, 0
        while jit_frame is not None and depth < 8 and jit_frame.f_code.co_name != "_trace_for_jit":
            jit_frame, depth = jit_frame.f_back, depth + 1
        if jit_frame is not None and jit_frame.f_code.co_name == "_trace_for_jit":
            caller = jit_frame
        via = caller.f_code.co_name if caller is not None else None
        jit_info = caller.f_locals.get("ji") if via == "_trace_for_jit" else None
        signature = getattr(jit_info, "fun_signature", None)
        parameters = None if signature is None else [[name, parameter.kind.name]
                                                     for name, parameter in signature.parameters.items()]
        line = {"message": record.getMessage(), "via": via, "parameters": parameters}
        self.file.write(json.dumps(line) + "\\n")
        self.file.flush()


logging.getLogger("jax._src.interpreters.partial_eval").addHandler(MissLog(misses_file))
import traceguard
sys.argv = [script]
status = 0
with traceguard.watch(trace_file=trace_file):
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException:
        status = 1
        traceback.print_exc()
sys.exit(status)
"""

JIT_CALLER = "_trace_for_jit"  # The caller of `trace_to_jaxpr` on a `jax.jit` miss.
# `_equality_errors`' reasons (jax/_src/tree_util.py).
_TREE_REASONS = ("their Python types differ", "the lengths do not match",
                 "the numbers of children do not match", "the pytree node metadata does not match")
_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


class Difference(NamedTuple):
    """One difference JAX names between a call's key and its closest earlier key.

    `kind` is `"types"` (an argument's abstract value; `path` is JAX's argument name, e.g.
    `x`, `x['ids']`, `args[0]`), `"pytree"` (`path` is a key path into `(args, kwargs)`,
    e.g. `[0][2]`; `because` is JAX's reason), `"context"` (a tracing-context value, e.g. a
    config; `path` is its name), or `"other"` (debug info, or no explanation).
    """

    kind: str
    path: str
    now: str
    before: str
    because: str = ""
    words: str = ""


class Miss(NamedTuple):
    """One "TRACING CACHE MISS" message."""

    function: str
    definition: str | None  # "path:line" as JAX wrote it, or None.
    call_site: str
    never_seen: bool
    redefined: bool  # "maybe the function is being re-defined repeatedly".
    differences: tuple[Difference, ...]
    text: str


class AbstractValue(NamedTuple):
    """`ShapedArray.str_short(short_dtypes=True)`, read back: `f32[2,5]{weak_type=True}`."""

    dtype: str  # JAX's short name: f32, i32, bf16, bool.
    dims: tuple[str, ...]
    weak_type: bool | None  # None when JAX did not say (only said when it differs).


class Expectation(NamedTuple):
    """A change a trace's record must hold for one thing JAX named."""

    words: str  # JAX's words it comes from.
    parameters: frozenset[str] | None  # Accepted parameter names; None: any.
    aspects: frozenset[str]  # Accepted aspects; empty: no aspect of traceguard's says it.
    axis: int | None = None
    now: str | None = None  # The new side, in JAX's words (`_new_in_jax_words`).
    first_trace: bool = False  # Also met by a first trace (no earlier trace of the code).


class Gap(NamedTuple):
    """A difference JAX names that the trace file's record does not (or a trace JAX did not explain)."""

    function: str
    miss: int  # The function's n-th miss (or trace), from 1.
    jax_words: str
    expected: str
    recorded: str

    def __str__(self) -> str:
        return (f"{self.function} miss {self.miss}: JAX says {self.jax_words!r}; expected {self.expected}; "
                f"traceguard recorded {self.recorded}")


_HEADER = re.compile(r"^TRACING CACHE MISS at (?P<site>.*):$")
_NEVER_SEEN = re.compile(r"^    (?P<name>.+?) id=\d+(?: defined at (?P<definition>.+))?$")
_SEEN = re.compile(r"^  for (?P<name>.+?)(?: defined at (?P<definition>.+))?$")
_TREE = re.compile(r"^  \* at input path (?P<path>.*?), now (?P<now>.*?) and before (?P<before>.*), "
                   rf"so (?P<because>(?:{'|'.join(map(re.escape, _TREE_REASONS))}).*)$")
_TYPES = re.compile(r"^  \* at (?P<path>.+?), now (?P<now>.*?) and before (?P<before>.*?)(?:https://\S*)?$")
_CONTEXT = re.compile(r"^  \* (?P<path>.+?) differs: now (?P<now>.*) and before (?P<before>.*)$")
_VALUE = re.compile(r"^(?P<dtype>[a-z][a-z0-9_]*)(?:<\w+>)?\[(?P<dims>[^\]]*)\].*?"
                    r"(?:\{weak_type=(?P<weak>True|False)\})?$")


def parse_miss(text: str) -> Miss:
    """One message of `partial_eval.explain`; raises ValueError for any other text."""
    lines = text.splitlines()
    header = _HEADER.match(lines[0]) if lines else None
    if header is None:
        raise ValueError(f"Not a TRACING CACHE MISS message: {text[:80]!r}")
    if len(lines) > 2 and lines[1] == "  never seen function:":
        match = _NEVER_SEEN.match(lines[2])
        if match is None:
            raise ValueError(f"Unreadable never-seen function line: {lines[2]!r}")
        return Miss(match["name"], match["definition"], header["site"], True,
                    "being re-defined repeatedly" in text, (), text)
    match = _SEEN.match(lines[1]) if len(lines) > 1 else None
    if match is None:
        raise ValueError(f"Unreadable miss message: {text[:200]!r}")
    return Miss(match["name"], match["definition"], header["site"], False, False,
                parse_differences(lines[3:]), text)


def parse_differences(lines: Sequence[str]) -> tuple[Difference, ...]:
    """The lines after "For the closest previous key:", one `Difference` per bullet."""
    title = lines[0].strip() if lines else ""
    kind = {"different input pytree:": "pytree", "different input types:": "types"}.get(title)
    if kind is None and title.startswith("Tracing context doesn't match"):
        kind = "context"
    pattern = {"pytree": _TREE, "types": _TYPES, "context": _CONTEXT}.get(kind or "")
    if pattern is None:  # "Debug info doesn't match.", "cache miss explanation unavailable".
        return (Difference("other", "", "", "", words=title),)
    differences = []
    for line in lines[1:]:
        match = pattern.match(line)
        if match is None:
            raise ValueError(f"Unreadable {kind} difference: {line!r}")
        differences.append(Difference(kind, match["path"], match["now"], match["before"],
                                      match.groupdict().get("because") or "", line.strip()))
    if not differences:  # A context difference JAX cannot name (older jaxlib).
        differences.append(Difference(kind or "other", "", "", "", words=title))
    return tuple(differences)


def parse_abstract_value(text: str) -> AbstractValue | None:
    """`f32[2,5]`, `i32[]{weak_type=True}`, `f32[2,5,1]({})`; None for another type (a token)."""
    match = _VALUE.match(text)
    if match is None:
        return None
    dims = tuple(dim.split("@")[0].split(":")[0] for dim in match["dims"].split(",")) if match["dims"] else ()
    weak = match["weak"]
    return AbstractValue(match["dtype"], dims, None if weak is None else weak == "True")


def short_dtype_name(name: str) -> str:
    """JAX's short name of a dtype (`dtypes.short_dtype_name`): float32 -> f32, bfloat16 -> bf16."""
    return name.replace("float", "f").replace("uint", "u").replace("int", "i").replace("complex", "c")


def positional_parameter(index: int, parameters: Sequence[Sequence[str]] | None) -> frozenset[str]:
    """The names traceguard may give the `index`-th positional argument: its parameter's (a
    `*args` parameter's for one past the named ones), and `arg{index}` (unbound arguments)."""
    names = {f"arg{index}"}
    if parameters is not None:
        positional = [name for name, kind in parameters if kind in _POSITIONAL]
        variadic = [name for name, kind in parameters if kind == "VAR_POSITIONAL"]
        if index < len(positional):
            names.add(positional[index])
        elif variadic:
            names.add(variadic[0])
    return frozenset(names)


def parameter_of_argument_name(name: str, parameters: Sequence[Sequence[str]] | None) -> frozenset[str]:
    """The parameter of one of JAX's argument names (`debug_info.arg_names`): `x['ids'][0]` -> x,
    `kwargs['lr']` -> lr (an item of `**kwargs`), `args[2]` -> the third positional argument's
    when the arguments did not bind to the signature."""
    top, _, rest = name.partition("[")
    top = top.split(".")[0]
    key = re.match(r"'([^']*)'\]|(\d+)\]", rest)
    names = {name for name, _ in parameters or ()}
    keywords = [name for name, kind in parameters or () if kind == "VAR_KEYWORD"]
    if key and key[1] is not None and (top in keywords or (top == "kwargs" and top not in names)):
        return frozenset({key[1]})
    if key and key[2] is not None and top == "args" and "args" not in names:
        return positional_parameter(int(key[2]), parameters)
    return frozenset({top})


def parameter_of_input_path(path: str, parameters: Sequence[Sequence[str]] | None) -> frozenset[str] | None:
    """The parameter at a key path into JAX's `(args, kwargs)` pytree: `[0][2]` -> the third
    positional argument's, `[1]['lr']` -> lr; None for `[0]` or `[1]` themselves."""
    match = re.match(r"^\[(0|1)\](?:\[(?:(\d+)|'([^']*)')\])?", path)
    if match is None or (match[2] is None and match[3] is None):
        return None
    if match[2] is not None:
        return positional_parameter(int(match[2]), parameters)
    return frozenset({match[3]})


def expectations(miss: Miss, parameters: Sequence[Sequence[str]] | None) -> list[Expectation]:
    """What traceguard's record of the trace must hold for each thing `miss` names."""
    if miss.never_seen:
        words = "never seen function" + (" (re-defined repeatedly?)" if miss.redefined else "")
        # A new function object: a first trace, or (re-defined) a new object of the same code.
        return [Expectation(words, None, frozenset({"function_object"}), first_trace=not miss.redefined)]
    found = []
    for difference in miss.differences:
        if difference.kind == "types":
            found += _type_expectations(difference, parameter_of_argument_name(difference.path, parameters))
        elif difference.kind == "pytree":
            found.append(_tree_expectation(difference, parameters))
        elif difference.kind == "context" and difference.path:  # A value of the tracing context, by name.
            found.append(Expectation(difference.words, frozenset({difference.path}), frozenset({"context"}),
                                     now=difference.now))
        else:  # Debug info, or a context difference JAX cannot name: nothing of traceguard's holds it.
            found.append(Expectation(difference.words, None, frozenset()))
    return found


def _type_expectations(difference: Difference, parameters: frozenset[str]) -> list[Expectation]:
    now, before = parse_abstract_value(difference.now), parse_abstract_value(difference.before)
    if now is None or before is None:
        return [Expectation(difference.words, parameters, frozenset())]
    found = []
    if now.dtype != before.dtype:
        found.append(Expectation(difference.words, parameters, frozenset({"dtype"}), now=now.dtype))
    elif now.weak_type != before.weak_type:
        found.append(Expectation(difference.words, parameters, frozenset({"weak_type"}),
                                 now=str(now.weak_type)))
    if len(now.dims) != len(before.dims):
        found.append(Expectation(difference.words, parameters, frozenset({"rank"})))
    else:
        found += [Expectation(difference.words, parameters, frozenset({"dim"}), axis, new)
                  for axis, (new, old) in enumerate(zip(now.dims, before.dims)) if new != old]
    both = f"{difference.now} {difference.before}"
    if not found and ("@" in both or re.search(r"\(\{[A-Z]", both)):
        # The sharding an abstract value carries (`f32[4@i]({Explicit: ('i',)})`).
        found.append(Expectation(difference.words, parameters, frozenset({"sharding"})))
    if not found:  # Only the memory space differs: traceguard does not key it.
        found.append(Expectation(difference.words, parameters, frozenset()))
    return found


def _tree_expectation(difference: Difference, parameters: Sequence[Sequence[str]] | None) -> Expectation:
    names = parameter_of_input_path(difference.path, parameters)
    words = difference.words
    if names is None:  # The number of positional or keyword arguments differs.
        lengths = [int(n) for n in re.findall(r"of length (\d+)", f"{difference.now} {difference.before}")]
        if difference.path == "[0]" and len(lengths) == 2:
            names = frozenset().union(*(positional_parameter(index, parameters)
                                        for index in range(min(lengths), max(lengths))))
        else:
            keys = re.search(r"key sets: \{(.*)\}$", difference.because)
            names = frozenset(re.findall(r"'([^']*)'", keys[1])) if keys else None
        # An argument added or removed, or passed by keyword instead of positionally (`passed`).
        return Expectation(words, names, frozenset({"added", "removed", "call_structure"}))
    static = re.search(r"with pytree metadata Static\(val=(.*)\)$", difference.now)
    if static and difference.because.startswith("the pytree node metadata"):
        # A static argument with another hash or `==`: by value, by identity, or of another kind.
        return Expectation(words, names, frozenset({"value", "identity", "structure"}), now=static[1])
    if difference.because.startswith("the pytree node metadata"):  # A node's static field (aux data).
        return Expectation(words, names, frozenset({"static_field", "structure"}))
    if difference.because.startswith("the numbers of children"):  # A dict's keys: each one named.
        return Expectation(words, names, frozenset({"added", "removed", "structure"}))
    return Expectation(words, names, frozenset({"structure"}))


def _new_in_jax_words(change: dict[str, Any]) -> str | None:
    """The new side of a change as JAX words it, where an `Expectation.now` compares it."""
    new, aspect = change.get("new"), change.get("aspect")
    if aspect == "dtype" and isinstance(new, str):
        return short_dtype_name(new)
    if aspect == "dim":
        return str(new)
    if aspect == "weak_type" and isinstance(new, dict):
        return str(new.get("weak_type"))
    if aspect == "value" and isinstance(new, dict) and new.get("static"):
        return new.get("text")
    if aspect == "context":
        return str(new)
    return None


def _now_agrees(expected: str, recorded: str | None) -> bool:
    if recorded is None:
        return True  # An aspect whose new side JAX words otherwise (an identity, a structure).
    if recorded.endswith("..."):  # A repr traceguard cut.
        return expected.startswith(recorded[:-3])
    return expected == recorded


def _parameter(change: dict[str, Any]) -> str | None:
    argument = change.get("argument")
    return argument.get("parameter") if isinstance(argument, dict) else argument


def is_met(expectation: Expectation, record: dict[str, Any]) -> bool:
    """Whether a `function_trace` record holds the change `expectation` asks for."""
    event = record["event"]
    changes = event.get("changes") or []
    if expectation.first_trace and event.get("kind") == "trace" and not changes:
        return True
    # "re-defined repeatedly?" is JAX's guess from a function never seen before (its source site
    # alone); when traceguard's record is the first object of its code, the guess is JAX's to
    # withdraw: the key is a first one, with nothing to name.
    if "re-defined" in expectation.words and event.get("kind") == "trace" and not changes \
            and event.get("object_number") in (None, 1):
        return True
    return any(isinstance(change, dict)
               and change.get("aspect") in expectation.aspects
               and (expectation.parameters is None or _parameter(change) in expectation.parameters)
               and (expectation.axis is None or change.get("axis") == expectation.axis)
               and (expectation.now is None or _now_agrees(expectation.now, _new_in_jax_words(change)))
               for change in changes)


def describe(record: dict[str, Any] | None) -> str:
    """A record as a failure message shows it: its kind and changes."""
    if record is None:
        return "no trace"
    event = record["event"]
    texts = [change.get("text") or str(change) for change in event.get("changes") or []]
    return f"#{event.get('serial')} {event.get('kind')}: " + ("; ".join(texts) or "no changes")


def is_in_scope(miss: Miss, via: str | None, cwd: str) -> bool:
    """Whether traceguard reports the miss: a miss of a function of the user's (defined outside
    installed packages and the standard library), or of a Keras step (`train_step`); a `jax.jit`
    miss (`via` `_trace_for_jit`) or one of a body JAX traced below it (a `lax.scan` body, ...)."""
    return _is_user_or_step(miss.function, miss.definition, cwd)


def _is_user_or_step(function: str | None, definition: str | None, cwd: str) -> bool:
    if is_keras_step_function(function):
        return True
    path = _path(definition, cwd)
    libraries = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")}
    return path is None or not any(path.startswith(os.path.join(os.path.realpath(d), "")) for d in libraries)


def _path(definition: str | None, cwd: str) -> str | None:
    if not definition:
        return None
    path = definition.rpartition(":")[0] if definition.rpartition(":")[2].isdigit() else definition
    return os.path.realpath(os.path.join(cwd, path))


def _definition_of(record: dict[str, Any]) -> str | None:
    definition = record["event"].get("definition")
    if isinstance(definition, dict):
        return f"{definition.get('path')}:{definition.get('line')}"
    return definition


def _same_function(miss: Miss, record: dict[str, Any], cwd: str) -> bool:
    if record["event"].get("function") != miss.function:
        return False
    if miss.definition is None:
        return True
    mine, theirs = miss.definition.rpartition(":"), (_definition_of(record) or "").rpartition(":")
    return mine[2] == theirs[2] and _path(miss.definition, cwd) == _path(_definition_of(record), cwd)


def function_traces(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trace file's `function_trace` records, the later line of each serial, in serial order."""
    latest = {record["event"]["serial"]: record for record in records
              if record.get("type") == "function_trace"}
    return [latest[serial] for serial in sorted(latest)]


def parity_gaps(logged: Iterable[dict[str, Any]], records: Iterable[dict[str, Any]],
                cwd: str) -> tuple[list[Gap], list[Miss]]:
    """What the trace file misses of JAX's explanations, and the misses out of traceguard's scope.

    `logged`: `RUNNER`'s lines (`message`, `via`, `parameters`), in order. The n-th miss
    JAX explains of a function (by name and definition site) is held against the n-th
    trace of it in the file; a trace of a function in scope that JAX did not explain is
    a gap too.
    """
    traces = function_traces(records)
    used: set[int] = set()
    gaps, outside = [], []
    counts: dict[tuple[str, str | None], int] = {}
    for line in logged:
        miss = parse_miss(line["message"])
        if not is_in_scope(miss, line.get("via"), cwd):
            outside.append(miss)
            continue
        number = counts[miss.function, miss.definition] = counts.get((miss.function, miss.definition), 0) + 1
        mine = [record for record in traces if _same_function(miss, record, cwd)]
        record = mine[number - 1] if number <= len(mine) else None
        if record is not None:
            used.add(record["event"]["serial"])
        for expectation in expectations(miss, line.get("parameters")):
            if record is None or not is_met(expectation, record):
                gaps.append(Gap(miss.function, number, expectation.words, _expected_text(expectation),
                                describe(record)))
    for record in traces:  # A compilation without a trace (`compile`) is no miss of this cache.
        if record["event"]["serial"] not in used and record["event"].get("kind") != "compile" \
                and _is_user_or_step(record["event"].get("function"), _definition_of(record), cwd):
            gaps.append(Gap(record["event"].get("function"), 0, "(no miss explained)",
                            "no trace", describe(record)))
    return gaps, outside


def _expected_text(expectation: Expectation) -> str:
    if not expectation.aspects:
        return "a change traceguard has no aspect for"
    names = "any argument" if expectation.parameters is None else " | ".join(sorted(expectation.parameters))
    text = f"{names}: {' | '.join(sorted(expectation.aspects))}"
    if expectation.axis is not None:
        text += f" (axis {expectation.axis})"
    if expectation.now is not None:
        text += f" now {expectation.now}"
    return text + (" (or a first trace)" if expectation.first_trace else "")


def read_json_lines(path: str | os.PathLike) -> list[dict[str, Any]]:
    """A JSON Lines file's records; a cut last line (a killed process's) is skipped."""
    records = []
    try:
        with open(path) as file:
            for line in file:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    break
    except FileNotFoundError:
        pass
    return records
