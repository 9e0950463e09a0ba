"""The TensorFlow backend: every backend question, answered for Keras on TensorFlow.

`__all__` is the backend surface, the same names as `_jax`'s; `traceguard._compat`
takes them from the backend Keras runs on, so no caller asks which one it is.
The answers live in `_tf_context` (eager, graph, XLA, replica), `_tf_function`
(the function being traced, saving) and `_autograph`; this module decides which
Keras `tf.keras` is, and holds the rest: variable creation, printing, `__call__`.

`traceguard.TraceAwareLayer` follows `tf.keras`, decided once at import, the way
TensorFlow itself routes `tf.keras` (`TF_USE_LEGACY_KERAS`, see
tensorflow/python/util/lazy_loader.py).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from traceguard._compat import _flavors, _frames
from traceguard._compat._backend import parse_version
from traceguard._compat._flavors import KerasFlavor, flavor_of_class, load_flavor

__all__ = [
    "DEFAULT_FLAVOR", "TF_VERSION", "TRACER", "as_keras_call", "current_graph_name",
    "current_replica", "enclosing_tf_function", "executing_eagerly", "graph_body", "holds_tensor",
    "in_save_context", "in_symbolic_build", "in_xla_context", "keep_autograph_out",
    "keep_autograph_out_of_layers", "keras2_flavor", "keras3_flavor", "print_at_each_execution",
    "run_unconverted", "variable_creation_watch", "wrap_call",
]

TRACER = "tf.function"  # What traces a function, for messages.
TF_VERSION: tuple[int, int] = parse_version(tf.__version__)


# --- which Keras `tf.keras` is ----------------------------------------------------------
def _flavor_following_tf_keras() -> KerasFlavor:
    try:
        layer_base = tf.keras.layers.Layer
    except (ImportError, AttributeError) as error:
        raise ImportError(
            "traceguard follows `tf.keras`, which could not be imported: with "
            "TF_USE_LEGACY_KERAS set TensorFlow needs the `tf_keras` package "
            "(pip install 'traceguard[keras2]'). Received: TensorFlow "
            f"{tf.__version__}, TF_USE_LEGACY_KERAS={os.environ.get('TF_USE_LEGACY_KERAS')!r}."
        ) from error
    flavor = flavor_of_class(layer_base)
    if flavor is None:
        raise ImportError(f"`tf.keras.layers.Layer` is {layer_base!r}, which traceguard does not "
                          f"know. Installed: TensorFlow {tf.__version__}.")
    return flavor


# Decided before the modules imported below check their internals, so that a missing
# one is reported with the Keras installed (`_flavors.describe_versions()`).
DEFAULT_FLAVOR = _flavors.set_default_flavor(_flavor_following_tf_keras())

from traceguard._compat._autograph import (  # noqa: E402
    graph_body,
    keep_autograph_out,
    run_unconverted,
    wrap_call,
)
from traceguard._compat._tf_context import (  # noqa: E402
    current_graph_name,
    current_replica,
    executing_eagerly,
    in_symbolic_build,
    in_xla_context,
)
from traceguard._compat._tf_function import enclosing_tf_function, in_save_context  # noqa: E402


def keras2_flavor() -> KerasFlavor:
    """The Keras 2 of `traceguard.keras2`: `tf_keras`, else `tf.keras` on TF <= 2.15."""
    if importlib.util.find_spec("tf_keras") is not None:
        return load_flavor("tf_keras")
    if not DEFAULT_FLAVOR.is_keras_3:
        return DEFAULT_FLAVOR
    raise ImportError(
        "traceguard's Keras 2 support needs Keras 2: install `tf_keras` "
        "(pip install 'traceguard[keras2]'), or use TensorFlow 2.12-2.15, whose `tf.keras` "
        f"is Keras 2. Received: TensorFlow {tf.__version__} with "
        f"{DEFAULT_FLAVOR.describe()} and no tf_keras."
    )


def keras3_flavor() -> KerasFlavor:
    """Keras 3, or ImportError naming what is installed instead."""
    # TensorFlow 2.16 is the first to depend on Keras 3 rather than Keras 2.
    if TF_VERSION >= (2, 16) and importlib.util.find_spec("keras") is not None:
        return load_flavor("keras3")
    raise ImportError("Keras 3 needs TensorFlow >= 2.16 and the `keras` 3 package. "
                      f"Received: TensorFlow {tf.__version__} with {DEFAULT_FLAVOR.describe()}.")


# --- variables -------------------------------------------------------------------------
def variable_creation_watch(on_create: Callable[[Any], None]) -> Any:
    """A context manager calling `on_create(variable)` for each TF variable created."""

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        on_create(variable)
        return variable

    return tf.variable_creator_scope(creator)


# --- printing at each execution (the "tf.print" print mode) ---------------------------
def holds_tensor(value: Any) -> bool:
    """Whether `value` (a structure) holds a tensor, whose runtime value prints."""
    return any(tf.is_tensor(item) for item in tf.nest.flatten(value))


def print_at_each_execution(inputs: list[Any], stream: Any, sep: str, end: str) -> None:
    """Adds a print of `inputs` (tensors and strings) to the graph being traced."""
    tf.print(*inputs, output_stream=stream, sep=sep, end=end)


# --- looking like Keras's own `Layer.__call__` ------------------------------------------
def as_keras_call(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a mixin's `__call__` the way Keras 3 wraps `Layer.__call__`.

    The wrapper is Keras's `filter_traceback`, so it is what AutoGraph converts
    when a layer is given to `tf.function`, as for a plain layer. `method` itself
    is marked an AutoGraph artifact (after wrapping, so the wrapper does not copy
    the mark): AutoGraph calls it unconverted, as it calls Keras's own code, whose
    module it allowlists (tensorflow/python/autograph/core/config.py). Converting
    traceguard's bookkeeping would add its frames to the error messages of
    `tf.function` and cost trace time.
    """
    if not DEFAULT_FLAVOR.is_keras_3:
        # Keras 2 as tf.keras: `keep_autograph_out_of_layers` keeps AutoGraph out; the
        # wrapper is Keras 2's own filter, so tracebacks read as from a plain layer.
        return keep_autograph_out(_keras2_traceback_utils.filter_traceback(keep_autograph_out(method)))
    wrapper = _keras_filter_traceback(method)
    keep_autograph_out(method)
    return wrapper


def keep_autograph_out_of_layers(mixin: type) -> None:
    """Makes AutoGraph run every layer with `mixin` as it is, when `tf.keras` is Keras 2.

    `tf.function(layer)` has AutoGraph convert `type(layer).__call__`; with Keras 3,
    that is Keras's `filter_traceback` wrapper (see `as_keras_call`). With Keras 2 it
    would be the mixin's own `__call__`, so the instances are marked instead.
    """
    if not DEFAULT_FLAVOR.is_keras_3:
        keep_autograph_out(mixin)


if DEFAULT_FLAVOR.is_keras_3:
    _keras_filter_traceback = _frames.hide_traceguard_frames_from_keras()
else:
    _keras2_traceback_utils = _frames.hide_traceguard_frames_from_keras2(DEFAULT_FLAVOR.layer_base)
