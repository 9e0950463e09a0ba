"""JAX transformations that keep no cache: a body run under them is no trace.

JAX runs a function under `jax.grad`, `jax.vjp`, `jax.value_and_grad`, `jax.jvp`
and `jax.vmap` called outside any `jax.jit` op by op, as the transformation's
trace (`ad.LinearizeTrace`, `ad.JVPTrace`, `batching.BatchTrace`) hands each
primitive to the one below it, down to `core.EvalTrace`: nothing is staged, no
cache is looked up, and the Python body runs again on every call by design
(jax/_src/interpreters/ad.py, batching.py; measured with jax 0.10.2:
`jax.grad(f)(x)` twice runs `f` twice and logs no "TRACING CACHE MISS"). Keras 3
on JAX with `jit_compile=False` (or `run_eagerly=True`) runs each step so, under
`jax.value_and_grad` (keras/src/backend/jax/trainer.py, `make_train_function`).

A `jax.jit`, `jax.eval_shape` or control-flow body stages into a
`DynamicJaxprTrace`, which a cache keeps: below one of those, or below any trace
this module does not know, a run stays a trace. The linearization's tangents are
staged too, but in its `tangent_trace`, off the `parent_trace` chain walked here.

Upstream, the files whose internals this module follows:

- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/core.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/interpreters/ad.py
- https://github.com/jax-ml/jax/blob/jax-v0.10.2/jax/_src/interpreters/batching.py
"""

from __future__ import annotations

import sys
from typing import Any

from jax._src import core as _core
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching

from traceguard._compat._flavors import internal_missing

# Each uncached trace type, by the transformation that makes it.
_UNCACHED: dict[type, str] = {}
for _owner, _name, _transformation in ((_ad, "LinearizeTrace", "grad"), (_ad, "JVPTrace", "jvp"),
                                        (_batching, "BatchTrace", "vmap")):
    _trace_type = getattr(_owner, _name, None)
    # The class's own `__init__`, read off the class, not an instance.
    _code = getattr(getattr(_trace_type, "__init__", None), "__code__", None)
    _parameters = getattr(_code, "co_varnames", ())
    if not isinstance(_trace_type, type) or "parent_trace" not in _parameters:
        raise internal_missing(f"{_owner.__name__}.{_name}(parent_trace, ...)")
    _UNCACHED[_trace_type] = _transformation
if not isinstance(getattr(_core, "EvalTrace", None), type) \
        or not hasattr(getattr(_core, "trace_ctx", None), "trace"):
    raise internal_missing("jax._src.core.EvalTrace and core.trace_ctx.trace")
_EVAL_TRACE = _core.EvalTrace

# The Keras 3 JAX trainer, whose steps run unjitted with `jit_compile=False` or `run_eagerly=True`.
_KERAS_TRAINER = "/keras/src/backend/jax/trainer.py"
_STEP_NAMES = ("train_step", "test_step", "predict_step")


def uncached_transformation() -> tuple[str, ...] | None:
    """The transformations running now, outermost first (`("grad",)`, `("vmap", "grad")`), when
    none of them keeps a cache and no trace is staged below them; None otherwise (the top
    level, a `jax.jit` or `jax.eval_shape` trace, a control-flow body, a trace unknown here)."""
    trace = _core.trace_ctx.trace
    found: list[str] = []
    while type(trace) is not _EVAL_TRACE:
        transformation = _UNCACHED.get(type(trace))
        if transformation is None:
            return None
        found.append(transformation)
        trace = trace.parent_trace
    return tuple(reversed(found)) or None


def uncached_setting(frame: Any = None) -> tuple[str, str] | None:
    """The Keras step and the setting that run it unjitted (`("train_step", "jit_compile=False")`)
    when a Keras 3 JAX trainer's step is on the stack from `frame`; else None."""
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name in _STEP_NAMES and code.co_filename.replace("\\", "/").endswith(_KERAS_TRAINER):
            model = frame.f_locals.get("self")
            if getattr(model, "run_eagerly", False):
                return code.co_name, "run_eagerly=True"
            if getattr(model, "jit_compile", True) is False:
                return code.co_name, "jit_compile=False"
            return None
        frame = frame.f_back
    return None


__all__ = ["uncached_setting", "uncached_transformation"]
