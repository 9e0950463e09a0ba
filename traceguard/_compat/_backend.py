"""Which backend runs here, and whether Keras does, decided before anything imports TensorFlow.

The first thing `traceguard._compat` asks, and the only one asked without the
backend's engine: the answer picks the backend module (`tensorflow.backend` or `jax.backend`)
that answers every later question, so the JAX path never imports TensorFlow.

Found, not assumed: traceguard records whatever is installed. Keras 3 decides its
own backend (`KERAS_BACKEND`, then `keras.json`, then `"tensorflow"`); without a
Keras that imports, the engine installed is recorded alone (its `tf.function`s or
`jax.jit` functions), and `KERAS_UNAVAILABLE` says in one line why Keras is not.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os

from traceguard._core.backends import Backend


def parse_version(version: str) -> tuple[int, int]:
    """`"2.15.1"` -> `(2, 15)`: versions are compared as numbers, never as strings."""
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


BACKENDS = ("tensorflow", "jax", "torch")
# How messages name each backend's engine, whose module is named as the backend.
_ENGINE_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "torch"}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # A dotted name whose parent is missing; an empty name.
        return False


def keras_backend_setting() -> tuple[str, str]:
    """The backend Keras 3 will choose, and where that choice was made, without importing Keras.

    Follows keras/src/backend/config.py (Keras 3.0-3.15): `KERAS_BACKEND` when set and
    not empty, else the `"backend"` of `$KERAS_HOME/keras.json` (`~/.keras`, or
    `/tmp/.keras` when the home directory is not writable), else `"tensorflow"`.

    Returns:
        `(backend, source)`, source one of `"KERAS_BACKEND"`, the `keras.json` path,
        or `"Keras's default"`.
    """
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"], "KERAS_BACKEND"
    if "KERAS_HOME" in os.environ:
        keras_dir = os.environ["KERAS_HOME"]
    else:
        home = os.path.expanduser("~")
        keras_dir = os.path.join(home if os.access(home, os.W_OK) else "/tmp", ".keras")
    path = os.path.expanduser(os.path.join(keras_dir, "keras.json"))
    try:
        with open(path) as file:
            backend = json.load(file).get("backend")
    except (OSError, ValueError, AttributeError):  # Keras ignores a file it cannot parse.
        backend = None
    return (backend, path) if backend else ("tensorflow", "Keras's default")


def keras_unavailable_note(backend: str, source: str, version: str, fallback: str | None) -> str:
    """The one line that says why Keras cannot import here, and the fix."""
    where = source if source == "Keras's default" else f"from {source}"
    others = [name for name in BACKENDS if name != backend and _installed(name)]
    fix = (f"set KERAS_BACKEND={others[0]} to run Keras on {_ENGINE_NAMES[others[0]]}"
           if others else f"pip install {backend}")
    recorded = f"; traceguard records plain {_TRACERS[fallback]} meanwhile" if fallback else ""
    return (f"Keras {version} cannot import: its backend is {backend!r} ({where}), "
            f"which is not installed. Fix: {fix}{recorded}.")


_TRACERS = {"tensorflow": "tf.function", "jax": "jax.jit", "torch": "torch.compile"}
KERAS_UNAVAILABLE: str | None = None  # Set by `_decide_backend` when Keras cannot import.


def _engine_without_keras() -> str:
    """The engine recorded without Keras: `KERAS_BACKEND`'s if installed, else TensorFlow, else JAX."""
    wanted = os.environ.get("KERAS_BACKEND")
    if wanted in BACKENDS and _installed(wanted):
        return wanted
    for name in BACKENDS:
        if _installed(name):
            return name
    raise ImportError("traceguard records TensorFlow or JAX, and neither is installed: "
                      "pip install jax, or pip install tensorflow.")


def _decide_backend() -> str:
    """The backend to record: Keras 3's when Keras imports, else the engine installed.

    `TF_USE_LEGACY_KERAS` selects tf_keras, which runs on TensorFlow only (TF reads
    it the same way in tensorflow/python/util/lazy_loader.py). Otherwise Keras 3
    itself says (keras/src/backend/config.py); importing Keras 3 imports only that
    backend. Keras 2 (`import keras` on TF <= 2.15) is TensorFlow's.
    """
    global KERAS_UNAVAILABLE
    if os.environ.get("TF_USE_LEGACY_KERAS") in ("true", "True", "1"):
        return "tensorflow"
    if not _installed("keras"):
        return _engine_without_keras()
    # Read before Keras imports: a first import writes its default into a new keras.json.
    backend, source = keras_backend_setting()
    try:
        import keras
    except ImportError:
        if _installed(backend):
            raise  # Not a missing backend: Keras's own error says what is wrong.
        from importlib import metadata

        try:
            version = metadata.version("keras")
        except metadata.PackageNotFoundError:  # On sys.path without its distribution's metadata.
            version = "3"
        engine = _engine_without_keras()
        KERAS_UNAVAILABLE = keras_unavailable_note(backend, source, version, engine)
        return engine
    if parse_version(keras.__version__)[0] < 3:
        return "tensorflow"
    backend = keras.backend.backend()  # Keras's own answer (`keras.config.set_backend` too).
    if backend not in BACKENDS:
        raise ImportError(f"traceguard records Keras 3 on the backends {', '.join(BACKENDS)}. "
                          f"Received: KERAS_BACKEND={backend!r} (Keras {keras.__version__}).")
    return backend


BACKEND = Backend(_decide_backend())
IS_JAX = BACKEND is Backend.JAX
IS_TORCH = BACKEND is Backend.TORCH


def describe_engine() -> str:
    """`"TensorFlow 2.21.0"` or `"JAX 0.10.2"`: the engine recorded here."""
    return f"{_ENGINE_NAMES[BACKEND]} {importlib.import_module(BACKEND.value).__version__}"
