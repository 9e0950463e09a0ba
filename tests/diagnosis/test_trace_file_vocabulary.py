"""The trace-file schema in docs/trace-files.md names every value traceguard can write: each
backend, each trace origin, each aspect of a change and each kind, on every stack. A new member
that the page does not list fails here, not in a user's validator."""

import pytest
from trace_file_parity import documented_schema

from traceguard._compat._function_tracing import ORIGINS
from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect
from traceguard._core.kinds import TraceKind

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")
DEFINITIONS = documented_schema()["$defs"]


def enum_of(*path):
    node = DEFINITIONS
    for key in path:
        node = node[key]
    return node["enum"]


def test_the_schema_names_every_backend():
    backends = sorted(backend.value for backend in Backend)
    assert sorted(enum_of("header", "properties", "backend")) == backends
    verdict = DEFINITIONS["verdict"]["oneOf"][1]["properties"]["backend"]["enum"]
    assert sorted(verdict) == backends


def test_the_schema_names_every_origin_aspect_and_kind():
    origin = enum_of("function_trace", "properties", "trace", "properties", "origin")
    assert sorted(origin) == sorted(ORIGINS)
    assert sorted(enum_of("change", "properties", "aspect")) == sorted(aspect.value for aspect in Aspect)
    assert sorted(enum_of("kind")) == sorted(kind.value for kind in TraceKind)
