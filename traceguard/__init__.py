"""traceguard: see, explain and control when Keras and TensorFlow run your layer's `call`.

The public names load on first use (PEP 562): `import traceguard` imports
neither TensorFlow nor JAX, so `python -m traceguard --help` answers at once.
The first public name used imports the backend, and raises the `ImportError`
of an unsupported setup (a missing tf_keras, an unknown `KERAS_BACKEND`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceguard import callbacks, testing
    from traceguard._errors import RetraceError
    from traceguard._events import TraceEvent, TraceKind
    from traceguard._explanation import Explanation, LayerRuns
    from traceguard._html import write_html
    from traceguard._layer import TraceAwareLayer, TraceAwareMixin
    from traceguard._log import TraceLog
    from traceguard._side_effects import PRINT_MODES, side_effects
    from traceguard._tf_print import print
    from traceguard._trace_once import trace_once
    from traceguard._watch import explain, watch

__version__ = "0.1.0"

__all__ = [
    "Explanation",
    "LayerRuns",
    "PRINT_MODES",
    "RetraceError",
    "TraceAwareLayer",
    "TraceAwareMixin",
    "TraceEvent",
    "TraceKind",
    "TraceLog",
    "__version__",
    "callbacks",
    "explain",
    "print",
    "side_effects",
    "testing",
    "trace_once",
    "watch",
    "write_html",
]

# The module of each public name, as imported above for type checkers. A public
# submodule maps to itself.
_MODULES = {
    "Explanation": "traceguard._explanation",
    "LayerRuns": "traceguard._explanation",
    "PRINT_MODES": "traceguard._side_effects",
    "RetraceError": "traceguard._errors",
    "TraceAwareLayer": "traceguard._layer",
    "TraceAwareMixin": "traceguard._layer",
    "TraceEvent": "traceguard._events",
    "TraceKind": "traceguard._events",
    "TraceLog": "traceguard._log",
    "callbacks": "traceguard.callbacks",
    "explain": "traceguard._watch",
    "print": "traceguard._tf_print",
    "side_effects": "traceguard._side_effects",
    "testing": "traceguard.testing",
    "trace_once": "traceguard._trace_once",
    "watch": "traceguard._watch",
    "write_html": "traceguard._html",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'traceguard' has no attribute {name!r}")
    module = importlib.import_module(_MODULES[name])
    value = module if module.__name__ == f"traceguard.{name}" else getattr(module, name)
    globals()[name] = value  # Later lookups skip this function.
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
