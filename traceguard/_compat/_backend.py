"""Which backend Keras runs on, decided before anything imports TensorFlow.

The first thing `traceguard._compat` asks, and the only one asked without the
backend's engine: the answer picks the backend module (`_tensorflow` or `_jax`)
that answers every later question, so the JAX path never imports TensorFlow.
"""

from __future__ import annotations

import importlib
import os


def parse_version(version: str) -> tuple[int, int]:
    """`"2.15.1"` -> `(2, 15)`: versions are compared as numbers, never as strings."""
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


BACKENDS = ("tensorflow", "jax")
# How messages name each backend's engine, whose module is named as the backend.
_ENGINE_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX"}


def _decide_backend() -> str:
    """The backend Keras runs on, decided before anything imports TensorFlow.

    `TF_USE_LEGACY_KERAS` selects tf_keras, which runs on TensorFlow only (TF reads
    it the same way in tensorflow/python/util/lazy_loader.py). Otherwise Keras 3
    itself says, from `KERAS_BACKEND` or `~/.keras/keras.json`
    (keras/src/backend/config.py); importing Keras 3 imports only that backend.
    Keras 2 (`import keras` on TF <= 2.15) is TensorFlow's.
    """
    if os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1"):
        return "tensorflow"
    try:
        import keras
    except ImportError:  # TensorFlow without Keras: the import of TF says what is missing.
        return "tensorflow"
    if parse_version(keras.__version__)[0] < 3:
        return "tensorflow"
    backend = keras.backend.backend()
    if backend not in BACKENDS:
        raise ImportError(f"traceguard records Keras 3 on the backends {', '.join(BACKENDS)}. "
                          f"Received: KERAS_BACKEND={backend!r} (Keras {keras.__version__}).")
    return backend


BACKEND = _decide_backend()
IS_JAX = BACKEND == "jax"


def describe_engine() -> str:
    """`"TensorFlow 2.21.0"` or `"JAX 0.10.2"`: the engine Keras runs on here."""
    return f"{_ENGINE_NAMES[BACKEND]} {importlib.import_module(BACKEND).__version__}"
