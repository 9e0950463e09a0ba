"""Which stack frames are the user's, and what a walk up the stack reports.

traceguard's own frames, in every module of the package, count as library code
together with TensorFlow's, Keras's and JAX's: warnings point past them at the
user's line (`user_stacklevel`), and Keras hides them from the tracebacks of
errors raised by `call` (`hide_traceguard_frames_from_keras`, and `..._keras2`).

Upstream, the files whose internals this module follows:

- https://github.com/keras-team/keras/blob/v3.15.0/keras/src/utils/traceback_utils.py
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import sys
from typing import Any

from traceguard._compat._flavors import flavor_of_class, internal_missing

# The top-level package: every subpackage of traceguard is its own code too.
_PACKAGE = __name__.split(".")[0]
# traceguard/, the directory of every traceguard module.
_TRACEGUARD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclasses.dataclass(frozen=True)
class TfFunctionFrame:
    """The innermost `tf.function` (on JAX, `jax.jit`) whose trace is running on this thread."""

    key: Any  # A weak reference to the Function, or its name when none was found.
    name: str
    creates_variables: bool | None  # None when the phase could not be seen.
    # What the Function wraps (see `tensorflow.function.function_origin`), or None.
    origin: Any = None
    trace: Any = None  # A weak reference to the FuncGraph being built: one per trace.


def _package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)  # Finds the package without importing it.
    location = spec.submodule_search_locations if spec else None
    return os.path.join(list(location)[0], "") if location else None


_LIBRARY_DIRS = tuple(
    directory for directory in (
        *(_package_dir(name) for name in ("tensorflow", "keras", "tf_keras", "jax", "jaxlib", "torch",
                                          _PACKAGE)),
        os.path.dirname(contextlib.__file__) + os.sep + "contextlib.py",
    ) if directory
)


def user_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn` that points at the user's code."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_LIBRARY_DIRS)
        # AutoGraph's converted copies of functions, written to temporary files.
        or "__autograph_generated_file" in frame.f_code.co_filename
    ):
        frame, level = frame.f_back, level + 1
    return level


def calling_frame() -> Any:
    """The innermost caller's frame outside TF, Keras and traceguard.

    AutoGraph's converted copies of user functions count as the user's code:
    each converted function has its own code object and generated file.
    """
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame = frame.f_back
    return frame


# --- errors raised through the recorded `call` read as from a plain layer -----------------
def hide_traceguard_frames_from_keras() -> None:
    """Adds traceguard's directory to Keras 3's traceback filter.

    Keras 3 wraps `Layer.__call__` in `filter_traceback`, which drops the frames of
    files under `_EXCLUDED_PATHS` from the traceback of an error raised by `call`
    (keras/src/utils/traceback_utils.py; off after
    `keras.config.disable_traceback_filtering()`). traceguard's directory joins that
    list so an error from a trace-aware layer reads exactly as from a plain layer.
    Asked by the backend when `traceguard.TraceAwareLayer` is a Keras 3 layer.
    """
    from keras.src.utils import traceback_utils

    if not isinstance(getattr(traceback_utils, "_EXCLUDED_PATHS", None), tuple) \
            or not callable(getattr(traceback_utils, "filter_traceback", None)):
        raise internal_missing("keras.src.utils.traceback_utils._EXCLUDED_PATHS and filter_traceback")
    if _TRACEGUARD_DIR not in traceback_utils._EXCLUDED_PATHS:
        traceback_utils._EXCLUDED_PATHS += (_TRACEGUARD_DIR,)


def hide_traceguard_frames_from_keras2(layer_base: type) -> Any:
    """Adds traceguard's directory to Keras 2's traceback filter; returns its module.

    Keras 2 (tf_keras; the Keras 2 of TF 2.12-2.15) wraps `Layer.__call__` in its
    own `filter_traceback`, which drops the frames whose file path contains an
    entry of `_EXCLUDED_PATHS` (tf_keras/src/utils/traceback_utils.py; keras/utils/
    in 2.12, keras/src/utils/ in 2.13-2.15; off after
    `tf.debugging.disable_traceback_filtering()`). Without traceguard's directory
    there, the traceback of an error from `call` shows five traceguard and Keras
    frames a plain layer's does not. Asked by the backend when
    `traceguard.TraceAwareLayer` is a Keras 2 layer, `layer_base`.
    """
    module = importlib.import_module(layer_base.__module__.rsplit(".", 2)[0] + ".utils.traceback_utils")
    if not isinstance(getattr(module, "_EXCLUDED_PATHS", None), tuple) \
            or getattr(layer_base.__call__, "__code__", None) \
            is not module.filter_traceback(lambda: None).__code__:
        raise internal_missing(f"{module.__name__}._EXCLUDED_PATHS and filter_traceback "
                               "around `Layer.__call__`")
    if _TRACEGUARD_DIR not in module._EXCLUDED_PATHS:
        module._EXCLUDED_PATHS += (_TRACEGUARD_DIR,)
    return module


# --- who builds a layer -----------------------------------------------------------------
_KERAS_BUILD_STEP = "_maybe_build"


def built_by_keras_call(layer: Any, caller: Any) -> bool:
    """Whether `layer.build` was called by Keras's `__call__` building the layer.

    `caller` is the frame that called the class's `build`. Keras 3's `_maybe_build`
    calls the instance's `build_wrapper` (set in `Layer.__new__`), which calls the
    class's `build` (keras/src/layers/layer.py); Keras 2's `_maybe_build` calls it
    itself (tf_keras/src/engine/base_layer.py). A direct `layer.build(shape)`, or a
    parent's `build` building a sublayer, is not Keras building the layer.
    """
    frames = (caller, caller.f_back)  # Keras 3's `build_wrapper` sits between.
    return any(frame is not None and frame.f_code.co_name == _KERAS_BUILD_STEP
               and frame.f_locals.get("self") is layer for frame in frames)


# --- which symbolic pass runs a layer's call -------------------------------------------
# Keras 3 runs a layer's `call` on symbolic inputs through its backend's
# `compute_output_spec(fn, ...)` (keras/src/backend/tensorflow/core.py, which calls
# `fn` itself; keras/src/backend/jax/core.py, whose nested `wrapped_fn` calls it under
# `jax.eval_shape`), asked by `Layer._maybe_build` to build a layer without `build()`,
# or by `Operation.compute_output_spec` to infer its output (a functional model).
# A layer called inside another's pass is called by Keras's `__call__` instead.
_KERAS3_OUTPUT_SPEC = "compute_output_spec"
_KERAS3_OUTPUT_SPEC_MODULES = ("keras.src.backend.tensorflow.core", "keras.src.backend.jax.core")
_JAX_CALLER = "wrapped_fn"
_JAX_FRAMES = 200  # How far up `jax.eval_shape`'s frames `compute_output_spec` is looked for.
_keras_3_classes: dict[type, bool] = {}


def output_spec_codes() -> dict[Any, str]:
    """The code objects that call a layer's `call` in Keras 3's symbolic pass, in the
    backend modules imported: `compute_output_spec`'s, and on JAX its `wrapped_fn`'s."""
    codes: dict[Any, str] = {}
    for name in _KERAS3_OUTPUT_SPEC_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        code = getattr(getattr(module, _KERAS3_OUTPUT_SPEC, None), "__code__", None)
        if code is None:
            raise internal_missing(f"{name}.{_KERAS3_OUTPUT_SPEC}")
        codes[code] = "spec"
        if name.endswith(".jax.core"):
            nested = [const for const in code.co_consts if getattr(const, "co_name", None) == _JAX_CALLER]
            if len(nested) != 1:
                raise internal_missing(f"{name}.{_KERAS3_OUTPUT_SPEC}'s nested {_JAX_CALLER}")
            codes[nested[0]] = "jax"
    return codes


_codes: dict[Any, str] = {}


def symbolic_pass(layer_class: type, caller: Any) -> str | None:
    """Why Keras runs a layer's `call` on symbolic inputs, from the frame that called it.

    `"build"`: Keras 3 builds the layer, which has no `build()`, by running `call`;
    `"output"`: Keras 3 infers the layer's output (a functional model, a symbolic
    call); `"enclosing"`: Keras 3 runs it inside another layer's pass; `"keras2"`: a
    Keras 2 layer, whose functional models run every layer once to infer outputs;
    None when not known.
    """
    keras_3 = _keras_3_classes.get(layer_class)
    if keras_3 is None:
        flavor = flavor_of_class(layer_class)
        if flavor is None:
            return None
        keras_3 = flavor.is_keras_3
        if len(_keras_3_classes) < 4096:
            _keras_3_classes[layer_class] = keras_3
    if not keras_3:
        return "keras2"
    if caller is None:
        return None
    if not _codes:  # Once: Keras imports its backend's module before any pass.
        try:
            _codes.update(output_spec_codes())
        except RuntimeError:  # Moved by a Keras release (tests/compat/ says so): not known.
            return None
    kind = _codes.get(caller.f_code)
    if kind is None:
        return "enclosing"
    frame = caller if kind == "spec" else _jax_output_spec_frame(caller)
    if frame is None:
        return None
    outer = frame.f_back
    return "build" if outer is not None and outer.f_code.co_name == _KERAS_BUILD_STEP else "output"


def _jax_output_spec_frame(caller: Any) -> Any:
    """The `compute_output_spec` frame that runs `caller`, its `wrapped_fn`, under `jax.eval_shape`."""
    frame = caller.f_back
    for _ in range(_JAX_FRAMES):
        if frame is None or _codes.get(frame.f_code) == "spec":
            return frame
        frame = frame.f_back
    return None
