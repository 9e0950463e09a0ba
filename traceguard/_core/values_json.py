"""The `_core` values as JSON data, and back: what trace files (schema versions 2 and 3) hold.

Each value becomes a dict tagged by its type, so that a reader without the backend
rebuilds the very values the recorder made (`spec_from_json(spec_json(s)) == s`), and
reports read from a file word them as in the process that wrote it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.keras_names import KerasCall, OptimizerBuild
from traceguard._core.kinds import TraceKind
from traceguard._core.specs import (
    ArgumentPath,
    MappingSpec,
    NodeSpec,
    ObjectSpec,
    SequenceSpec,
    Site,
    Spec,
    TensorSpec,
    ValueSpec,
)
from traceguard._core.verdicts import Hint, Reason, Verdict

_SPEC_TAGS: dict[type, str] = {TensorSpec: "tensor", ValueSpec: "value", ObjectSpec: "object",
                               SequenceSpec: "sequence", MappingSpec: "mapping", NodeSpec: "node"}
_SPEC_TYPES = {tag: type_ for type_, tag in _SPEC_TAGS.items()}


def spec_json(spec: Spec) -> dict[str, Any]:
    """A spec as a JSON dict: `{"spec": "tensor", "dtype": "float32", "dims": [2, null], ...}`."""
    result: dict[str, Any] = {"spec": _SPEC_TAGS[type(spec)]}
    if isinstance(spec, SequenceSpec):
        result.update(kind=spec.kind, items=[spec_json(item) for item in spec.items], length=spec.length,
                      rest=spec.rest)
    elif isinstance(spec, MappingSpec):
        result.update(items=[[key, spec_json(item)] for key, item in spec.items], length=spec.length,
                      rest=spec.rest)
    elif isinstance(spec, NodeSpec):
        result.update(type_name=spec.type_name,
                      children=[[key, spec_json(item)] for key, item in spec.children],
                      static=[[key, spec_json(item)] for key, item in spec.static], rest=spec.rest)
    elif isinstance(spec, ObjectSpec):
        result.update(spec._asdict(), site=None if spec.site is None else site_json(spec.site))
    else:
        result.update(spec._asdict())
        if isinstance(spec, TensorSpec) and not spec.sharding:  # JAX's sharded arrays only.
            del result["sharding"]
    return result


def spec_from_json(data: Mapping[str, Any]) -> Spec:
    """The spec `spec_json` wrote."""
    fields = {name: value for name, value in data.items() if name != "spec"}
    type_ = _SPEC_TYPES[data["spec"]]
    if type_ is SequenceSpec:
        fields["items"] = tuple(spec_from_json(item) for item in fields["items"])
    elif type_ is MappingSpec:
        fields["items"] = tuple((str(key), spec_from_json(item)) for key, item in fields["items"])
    elif type_ is NodeSpec:
        fields["children"] = tuple((key, spec_from_json(item)) for key, item in fields["children"])
        fields["static"] = tuple((str(key), spec_from_json(item)) for key, item in fields["static"])
    elif type_ is TensorSpec and fields.get("dims") is not None:
        fields["dims"] = tuple(fields["dims"])
    elif type_ is ObjectSpec:
        fields["site"] = site_from_json(fields.get("site"))
    return type_(**fields)


def site_json(site: Site | None) -> dict[str, Any] | None:
    return None if site is None else {"path": site.path, "line": site.line}


def site_from_json(data: Any) -> Site | None:
    return None if data is None else Site(str(data["path"]), int(data["line"]))


def argument_json(argument: str | ArgumentPath) -> Any:
    """A signature's key: a parameter's name as itself, an argument path as a dict."""
    if isinstance(argument, ArgumentPath):
        return {"parameter": argument.parameter, "keys": list(argument.keys)}
    return argument


def argument_from_json(data: Any) -> str | ArgumentPath:
    if isinstance(data, dict):
        return ArgumentPath(str(data["parameter"]), tuple(data["keys"]))
    return str(data)


def signature_json(signature: Mapping[Any, Spec]) -> list[list[Any]]:
    """A signature as `[[argument, spec], ...]`, in argument order."""
    return [[argument_json(name), spec_json(spec)] for name, spec in signature.items()]


def signature_from_json(data: Any) -> dict[Any, Spec]:
    return {argument_from_json(name): spec_from_json(spec) for name, spec in data}


def _part_json(value: Any) -> Any:
    # A change's old or new value: a spec (a Python value, a structure), or a plain number or name.
    return spec_json(value) if type(value) in _SPEC_TAGS else value


def _part_from_json(value: Any) -> Any:
    return spec_from_json(value) if isinstance(value, dict) and "spec" in value else value


def change_json(change: Change) -> dict[str, Any]:
    """A change as a JSON dict, with its report text as `text` for readers that only show it."""
    path = change.argument
    return {"argument": {"parameter": path.parameter, "keys": list(path.keys)}, "aspect": change.aspect.value,
            "old": _part_json(change.old), "new": _part_json(change.new), "axis": change.axis,
            "text": str(change)}


def change_from_json(data: Mapping[str, Any]) -> Change:
    argument = data["argument"]
    path = ArgumentPath(str(argument["parameter"]), tuple(argument["keys"]))
    return Change(path, Aspect(data["aspect"]), _part_from_json(data["old"]), _part_from_json(data["new"]),
                  data["axis"])


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """A verdict's codes and what their words name (its changes are the event's)."""
    return {"kind": verdict.kind.value, "reason": verdict.reason.value,
            "hint": None if verdict.hint is None else verdict.hint.value, "function": verdict.function,
            "backend": verdict.backend, "argument": verdict.argument,
            "keras_call": None if verdict.keras_call is None else dataclasses.asdict(verdict.keras_call),
            "control_flow": verdict.control_flow, "objects": verdict.objects,
            "created": list(verdict.created), "data": verdict.data,
            "relaxed_to": None if verdict.relaxed_to is None else spec_json(verdict.relaxed_to),
            "of_function": verdict.of_function, "xla_functions": list(verdict.xla_functions),
            "body_of": verdict.body_of,
            "optimizers": [[build.optimizer, build.variables] for build in verdict.optimizers],
            "resumed_after": None if verdict.resumed_after is None else site_json(verdict.resumed_after),
            "graph_breaks": [[what, site_json(site)] for what, site in verdict.graph_breaks]}


def verdict_from_json(data: Mapping[str, Any], changes: tuple[Change, ...]) -> Verdict:
    keras_call = data.get("keras_call")
    return Verdict(TraceKind(data["kind"]), changes, Reason(data["reason"]),
                   None if data.get("hint") is None else Hint(data["hint"]), data.get("function"),
                   Backend(data.get("backend", "tensorflow")), data.get("argument"),
                   None if keras_call is None else KerasCall(**keras_call), data.get("control_flow"),
                   data.get("objects"), tuple(data.get("created", ())), data.get("data"),
                   None if data.get("relaxed_to") is None else spec_from_json(data["relaxed_to"]),
                   bool(data.get("of_function", False)), tuple(data.get("xla_functions", ())),
                   data.get("body_of"),
                   tuple(OptimizerBuild(*build) for build in data.get("optimizers", ())),
                   None if data.get("resumed_after") is None else site_from_json(data["resumed_after"]),
                   tuple((str(what), Site(str(site["path"]), int(site["line"])))
                         for what, site in data.get("graph_breaks", ())))


__all__ = ["argument_from_json", "argument_json", "change_from_json", "change_json", "signature_from_json",
           "signature_json", "site_from_json", "site_json", "spec_from_json", "spec_json",
           "verdict_from_json", "verdict_json"]
