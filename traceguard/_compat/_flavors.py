"""The Kerases traceguard records, called flavors, and what it asks of any of them.

Three Kerases can be recorded, even side by side in one process:

- `"keras3"`: Keras 3 (on TensorFlow >= 2.16, or on JAX).
- `"tf_keras"`: the `tf_keras` package, Keras 2 for TF >= 2.15.
- `"keras2"`: the Keras 2 that TF 2.12-2.15 ships (`tf.keras`, the `keras` 2.x package).

Each is imported when a layer class of it is first seen (`flavor_of_class`), and its
internals are checked then. Which one `traceguard.TraceAwareLayer` subclasses, the
default flavor, is the backend's decision (`tensorflow.backend`, `jax.backend`), recorded here once.
This module holds every flavor's state and never imports TensorFlow itself.

Upstream, the files whose internals this module follows:

- https://github.com/keras-team/keras/blob/v3.15.0/keras/src/backend/common/global_state.py
- https://github.com/keras-team/keras/blob/v3.15.0/keras/src/backend/common/stateless_scope.py
- https://github.com/keras-team/keras/blob/v3.15.0/keras/src/backend/common/symbolic_scope.py
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from traceguard._compat._backend import IS_JAX, describe_engine, parse_version


@dataclasses.dataclass(frozen=True, eq=False)
class KerasFlavor:
    """One Keras that traceguard records: its namespace, `Layer` class and internals."""

    name: str  # "keras3", "tf_keras" or "keras2".
    keras: types.ModuleType  # What users import: `keras`, `tf_keras` or `tf.keras`.
    layer_base: type
    version: str
    symbolic_scope: Callable[[], bool] | None = None  # Keras 3 only.
    stateless_scope: Callable[[], bool] | None = None  # Keras 3 only.
    global_state: Any = None  # Keras 3 only: its per-thread global state.
    base_layer_utils: types.ModuleType | None = None  # Keras 2 only.

    @property
    def is_keras_3(self) -> bool:
        return self.name == "keras3"

    def describe(self) -> str:
        """`"Keras 3.15.1"`, `"tf_keras 2.21.0"` or `"Keras 2.15.0"`."""
        return f"{'tf_keras' if self.name == 'tf_keras' else 'Keras'} {self.version}"


# The state below exists here only; other modules read it as `_flavors.<name>`, since
# `_KERAS_EXPORT_DIRS`, `_keras2_layer_bases` and `DEFAULT_FLAVOR` are rebound as Kerases load.
_flavors: dict[str, KerasFlavor] = {}
_KERAS_DEFAULT_MARK = "_is_default"
_KERAS_EXPORT_DIRS: tuple[str, ...] = ()  # Each Keras adds its export package when it loads.
_keras2_layer_bases: tuple[type, ...] = ()
# The flavor `traceguard.TraceAwareLayer` follows: set once, at import, by the backend.
DEFAULT_FLAVOR: KerasFlavor | None = None


def internal_missing(what: str) -> RuntimeError:
    """The error for an internal this installation does not have: it names the versions."""
    return RuntimeError(
        f"traceguard relies on {what}, which this installation does not have "
        f"({describe_versions()}). Please report this with the versions above."
    )


def describe_versions() -> str:
    """The installed stack, for error messages and reports."""
    default = DEFAULT_FLAVOR  # None while the default flavor loads.
    flavors = ([default] if default else []) + [f for f in _flavors.values() if f is not default]
    return f"{describe_engine()}, " + (", ".join(
        f"{flavor.describe()} ({flavor.name})" for flavor in flavors) or "no Keras")


def _check_default_mark(layer_base: type, name: str) -> None:
    # Keras generates `get_config` for subclasses that do not define one only while the
    # method it finds carries `_is_default` (keras/src/utils/python_utils.py in Keras 3,
    # `generic_utils.default` in Keras 2.12+ and tf_keras).
    if not getattr(layer_base.get_config, _KERAS_DEFAULT_MARK, False):
        raise internal_missing(f"{name} `Layer.get_config._is_default`")


def _load_keras3() -> KerasFlavor:
    global _KERAS_EXPORT_DIRS
    import keras
    from keras.src.backend.common import global_state
    from keras.src.backend.common.stateless_scope import in_stateless_scope
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope

    _check_default_mark(keras.layers.Layer, "Keras 3")
    # Keras 3 `model.export` traces `__call__` and `serving_default` before it
    # enters TF's save context (measured on Keras 3.15): its frames tell.
    _KERAS_EXPORT_DIRS += (os.path.dirname(keras.src.export.__file__) + os.sep,)
    return KerasFlavor("keras3", keras, keras.layers.Layer, keras.__version__,
                       symbolic_scope=in_symbolic_scope, stateless_scope=in_stateless_scope,
                       global_state=global_state.GLOBAL_STATE_TRACKER)


def _load_keras2(name: str) -> KerasFlavor:
    global _keras2_layer_bases
    # tf_keras is itself the namespace; TF 2.12-2.15 ship their Keras 2 as `tf.keras`
    # (Keras 2 runs on TensorFlow only: the TensorFlow backend has imported it already).
    if name == "tf_keras":
        namespace = importlib.import_module("tf_keras")
    else:
        namespace = importlib.import_module("tensorflow").keras
    layer_base = namespace.layers.Layer
    root = layer_base.__module__.split(".")[0]
    # `base_layer_utils` sits beside `base_layer` in every Keras 2: keras/engine (2.12),
    # keras/src/engine (2.13-2.15), tf_keras/src/engine.
    utils = importlib.import_module(layer_base.__module__.rsplit(".", 1)[0] + ".base_layer_utils")
    for function in ("is_subclassed", "from_saved_model"):
        if not callable(getattr(utils, function, None)):
            raise internal_missing(f"{utils.__name__}.{function}")
    _check_default_mark(layer_base, name)
    _keras2_layer_bases += (layer_base,)
    _add_keras2_export_dir(layer_base)
    return KerasFlavor(name, namespace, layer_base, sys.modules[root].__version__,
                       base_layer_utils=utils)


# --- Keras 2's `model.export`, and every Keras in the process ------------------------
# Keras 2 `model.export` (keras/export in Keras 2.12, keras/src/export in 2.13-2.15,
# tf_keras/src/export) traces `__call__` through `ExportArchive.add_endpoint` outside
# TF's save context, as Keras 3's does: its frames tell (measured on tf_keras 2.21,
# Keras 2.12 and 2.15).
def _add_keras2_export_dir(layer_base: type) -> None:
    global _KERAS_EXPORT_DIRS
    package = layer_base.__module__.rsplit(".", 2)[0] + ".export"  # Beside `engine`.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise internal_missing(f"{package} (Keras 2's `model.export`)")
    _KERAS_EXPORT_DIRS += (os.path.join(list(spec.submodule_search_locations)[0], ""),)


def loaded_layer_bases() -> tuple[type, ...]:
    """The `Layer` class of the default Keras, then of each other Keras imported so far.

    Imports no Keras: a Keras the user has not imported has no layers to record.
    """
    names = [DEFAULT_FLAVOR.name] if DEFAULT_FLAVOR else []
    if not IS_JAX:  # Keras 2 runs on TensorFlow only.
        if "tf_keras" in sys.modules:
            names.append("tf_keras")
        if parse_version(getattr(sys.modules.get("keras"), "__version__", "0"))[0] >= 3:
            names.append("keras3")
    bases: dict[type, None] = {}
    for name in names:
        bases[load_flavor(name).layer_base] = None
    return tuple(bases)


def load_flavor(name: str) -> KerasFlavor:
    """The `KerasFlavor` named `name`, imported on first use."""
    if name not in _flavors:
        _flavors[name] = _load_keras3() if name == "keras3" else _load_keras2(name)
    return _flavors[name]


def loaded_flavor(name: str) -> KerasFlavor | None:
    """The `KerasFlavor` named `name` if it is loaded already, else None."""
    return _flavors.get(name)


def set_default_flavor(flavor: KerasFlavor) -> KerasFlavor:
    """Records `flavor` as the one `traceguard.TraceAwareLayer` follows, and returns it.

    Called once, by the backend module as it is imported.
    """
    global DEFAULT_FLAVOR
    DEFAULT_FLAVOR = flavor
    return flavor


def flavor_of_class(cls: type) -> KerasFlavor | None:
    """The Keras that `cls` is a layer of, from the first Keras class in its MRO."""
    for klass in cls.__mro__:
        root = klass.__module__.split(".")[0]
        if root == "tf_keras":
            return load_flavor("tf_keras")
        if root == "keras":
            major = parse_version(sys.modules["keras"].__version__)[0]
            return load_flavor("keras3" if major >= 3 else "keras2")
    return None


def layer_base_of(cls: type) -> type | None:
    """The `Layer` class of the Keras `cls` belongs to, if `cls` is a layer class."""
    flavor = flavor_of_class(cls)
    return flavor.layer_base if flavor is not None and issubclass(cls, flavor.layer_base) else None


def is_base_layer_method(cls: type, name: str) -> bool:
    """Whether `cls.<name>` is still the Keras `Layer`'s own method."""
    flavor = flavor_of_class(cls)
    return flavor is not None and getattr(cls, name, None) is getattr(flavor.layer_base, name, None)


def wrap_build(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """Makes `wrapper` stand in for `original` as a layer class's `build`.

    Keras 3 reads `build`'s parameter names (`update_shapes_dict_for_target_fn`)
    through the `build_wrapper` it sets on every instance with
    `functools.wraps(layer.build)` (keras/src/layers/layer.py, `Layer.__new__`),
    which copies the bound method's `__dict__`. A `__signature__` there (TF's
    `make_decorator` sets one) would hide the instance's `__wrapped__`, and Keras
    would see `self`; `__wrapped__` alone is read through the bound method, which
    drops `self`.
    """
    return functools.update_wrapper(wrapper, original)


def present_signature(function: Callable[..., Any], signature: inspect.Signature) -> None:
    """Makes every Keras read `signature` as the parameters of `function`, a layer's `__init__`.

    Keras reads a layer class's constructor arguments to generate its config: Keras 3
    with `inspect.signature(cls.__init__)` and `inspect.getfullargspec` (`Operation.__new__`
    in keras/src/ops/operation.py), Keras 2 with `tf_inspect.getfullargspec(cls.__init__)`
    (`Layer.__new__` in tf_keras/src/engine/base_layer.py and keras 2.12-2.15). Both end
    in Python's `inspect`, which answers with a function's `__signature__`.
    """
    function.__signature__ = signature  # type: ignore[attr-defined]


def is_keras_default_method(method: Any) -> bool:
    return bool(getattr(method, _KERAS_DEFAULT_MARK, False))


def mark_keras_default_method(method: Any) -> None:
    setattr(method, _KERAS_DEFAULT_MARK, True)


# --- a layer's variables -------------------------------------------------------------
def layer_variables(layer: Any) -> list[Any]:
    return list(layer.variables)


def variable_path(variable: Any) -> str:
    path = getattr(variable, "path", None) or getattr(variable, "name", "?")
    return path[:-2] if path.endswith(":0") else path


def variable_paths(variables: list[Any]) -> list[str]:
    """`variable_path` of each of `variables`, written out: a call less per variable."""
    paths = []
    for variable in variables:
        path = getattr(variable, "path", None) or getattr(variable, "name", "?")
        paths.append(path[:-2] if path.endswith(":0") else path)
    return paths


def keras_tensor_spec_reader(type_: type) -> Callable[[Any], tuple[str, Any]] | None:
    """The reader of Keras 3's `KerasTensor` (its symbolic pass's tensors), else None.

    It holds its shape, a tuple of ints and None, and its dtype's name in `_shape` and
    `_dtype`, which the public properties return (keras/src/backend/common/keras_tensor.py).
    """
    keras3 = _flavors.get("keras3")
    if keras3 is None or type_ is not keras3.keras.KerasTensor:
        return None
    return _keras_tensor_spec


def _keras_tensor_spec(tensor: Any) -> tuple[str, Any]:
    return tensor._dtype, tensor._shape


def backing_variable(variable: Any) -> Any:
    """The TF variable behind a Keras variable, without forcing initialisation.

    Keras 3's public `.value` would run a deferred initializer; `_value` is the
    backing `tf.Variable` (None until created). Keras 2 variables are TF variables.
    """
    keras3 = _flavors.get("keras3")
    if keras3 is not None and isinstance(variable, keras3.keras.Variable):
        return variable._value
    return variable
