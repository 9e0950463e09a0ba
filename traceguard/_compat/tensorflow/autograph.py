"""AutoGraph: kept out of traceguard's code, and applied to the user's `call` where Keras would.

Part of the TensorFlow backend (see `tensorflow.backend`); imported only when Keras runs
on TensorFlow. JAX has no AutoGraph.

Upstream, the files whose internals this module follows:

- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/autograph/core/ag_ctx.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/autograph/core/config.py
- https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/autograph/impl/api.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python.autograph.core import ag_ctx as _autograph_context
from tensorflow.python.autograph.core import config as _autograph_config
from tensorflow.python.autograph.impl import api as _autograph_api

from traceguard._compat import _flavors
from traceguard._compat._flavors import flavor_of_class

# AutoGraph converts the Python functions a `tf.function` calls unless their module is
# listed in its conversion rules (TensorFlow, Keras and tf_keras are). traceguard is
# library code as they are: converting it would turn its bookkeeping into graph
# control flow. Listing the top-level package keeps AutoGraph out of every traceguard
# function, in every subpackage too (a rule matches a module named as its prefix or
# starting with it and a dot: `Rule.matches` in tensorflow/python/autograph/core/config_lib.py).
_PACKAGE = __name__.split(".")[0]
if not any(getattr(rule, "_prefix", None) == _PACKAGE for rule in _autograph_config.CONVERSION_RULES):
    _autograph_config.CONVERSION_RULES = (
        (_autograph_config.DoNotConvert(_PACKAGE),) + tuple(_autograph_config.CONVERSION_RULES))

# An object carrying `autograph_info__` is run as it is by AutoGraph, even when a
# `tf.function` wraps it directly (tensorflow/python/autograph/impl/api.py).
_autograph_artifact: Callable[[Any], Any] = _autograph_api.autograph_artifact
_CALL_UNCONVERTED_CODE = _autograph_api._call_unconverted.__code__
_AUTOGRAPH_DISABLED = _autograph_context.Status.DISABLED

# AutoGraph (tf_keras's `call`, `tf.function(autograph=True)`) converts every
# function it calls that is not TensorFlow's own: it would turn the builtin
# `print` inside traceguard's routing into a `py_function`. Functions wrapped by
# this public decorator are called as they are (`is_autograph_artifact` in
# tensorflow/python/autograph/impl/api.py).
run_unconverted: Callable[[Callable[..., Any]], Callable[..., Any]] = \
    tf.autograph.experimental.do_not_convert


def keep_autograph_out(obj: Any) -> Any:
    """Makes AutoGraph run `obj` (a function, or instances of a class) unconverted."""
    return _autograph_artifact(obj)


def graph_body(layer: Any, wrapper: Callable[..., Any], original: Callable[..., Any],
               caller: Any) -> Callable[..., Any]:
    """The function to run for a graph-mode run of `original`, `layer`'s `call`.

    traceguard's wrapped `call` (`wrapper`) is never converted by AutoGraph itself,
    so it converts the user's body wherever Keras or AutoGraph would have converted
    the plain `call`:

    - `tf.function(layer.call)` converts the function under TensorFlow's decorator
      protocol: it puts the converted `original` in `wrapper.__wrapped__`
      (`tf_decorator.rewrap`) just before calling `wrapper`, which takes it, once.
    - Keras 2 runs a subclassed layer's `call` through `tf_convert`
      (`_autographed_call`, `_infer_output_signature`), so `if tensor:` works in its
      body, unless the context disables AutoGraph (`tf.function(autograph=False)`).
      Keras 2 runs `call` unconverted in its SavedModel traces; this converts it there too.
    - Converted code calling `layer.call(x)` or `super().call(x)` converts it; such a
      call reaches `wrapper` through AutoGraph's `_call_unconverted`.

    Keras 3 never converts `call` itself.
    """
    rewrapped = wrapper.__wrapped__
    if rewrapped is not original:
        wrapper.__wrapped__ = original
        wrapper._tf_decorator.decorated_target = original
        return rewrapped
    keras2 = isinstance(layer, _flavors._keras2_layer_bases)
    from_converted_code = getattr(caller, "f_code", None) is _CALL_UNCONVERTED_CODE
    if not keras2 and not from_converted_code:
        return original  # Keras 3's own call: no AutoGraph context to read.
    context = _autograph_context.control_status_ctx()
    if context.status == _AUTOGRAPH_DISABLED:
        return original
    if from_converted_code or _keras2_autographs(layer):
        return tf.__internal__.autograph.tf_convert(original, context)
    return original


def _keras2_autographs(layer: Any) -> bool:
    utils = flavor_of_class(type(layer)).base_layer_utils
    return utils.is_subclassed(layer) and not utils.from_saved_model(layer)


def wrap_call(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """Makes `wrapper` stand in for `original` as a layer's `call`.

    Keras 3 reads `call`'s parameters with `inspect.signature`, which follows
    `__wrapped__`; Keras 2 with `tf_inspect.getfullargspec`, which follows only
    TensorFlow's decorator protocol (`make_decorator`). AutoGraph is kept out of
    the wrapper: `graph_body` converts the user's body where it should be.
    """
    wrapped = tf.__internal__.decorator.make_decorator(original, wrapper)
    return keep_autograph_out(wrapped)
