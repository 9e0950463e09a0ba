"""traceguard: see, explain and control when Keras and TensorFlow run your layer's `call`.

The public names load on first use (PEP 562): `import traceguard` imports
neither TensorFlow nor JAX, so `python -m traceguard --help` answers at once.
The first public name used imports the backend, and raises the `ImportError`
of an unsupported setup (a missing tf_keras, an unknown `KERAS_BACKEND`).
`load_ipython_extension`, which `%load_ext traceguard` calls, loads the same way
and imports IPython only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceguard import callbacks, testing
    from traceguard._core.errors import RetraceError
    from traceguard._core.events import TraceEvent, TraceKind
    from traceguard._core.function_event import FunctionEvent
    from traceguard._core.function_runs import FunctionRuns
    from traceguard._core.functions import FunctionId
    from traceguard._core.layer_runs import LayerRuns
    from traceguard._diagnosis.compare import Comparison, compare
    from traceguard._diagnosis.explanation import Explanation
    from traceguard._diagnosis.forecast import Forecast, ForecastCheck, forecast
    from traceguard._diagnosis.html_report import write_html
    from traceguard._diagnosis.no_retrace import no_retrace
    from traceguard._diagnosis.watch import explain, watch
    from traceguard._ipython import load_ipython_extension as load_ipython_extension
    from traceguard._ipython import unload_ipython_extension as unload_ipython_extension
    from traceguard._record.layer import TraceAwareLayer, TraceAwareMixin
    from traceguard._record.log import TraceLog
    from traceguard._side_effects.side_effects import PRINT_MODES, side_effects
    from traceguard._side_effects.tf_print import print
    from traceguard._side_effects.trace_once import trace_once

from traceguard._version import __version__

__all__ = [
    "Comparison",
    "Explanation",
    "Forecast",
    "ForecastCheck",
    "FunctionEvent",
    "FunctionId",
    "FunctionRuns",
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
    "compare",
    "explain",
    "forecast",
    "no_retrace",
    "print",
    "side_effects",
    "testing",
    "trace_once",
    "watch",
    "write_html",
]

# The module of each public name, as imported above for type checkers. A public
# submodule maps to itself. The IPython extension's hooks load here but stay out of
# `__all__`: a star import must not need IPython.
_MODULES = {
    "Comparison": "traceguard._diagnosis.compare",
    "Explanation": "traceguard._diagnosis.explanation",
    "Forecast": "traceguard._diagnosis.forecast",
    "ForecastCheck": "traceguard._diagnosis.forecast",
    "FunctionEvent": "traceguard._core.function_event",
    "FunctionId": "traceguard._core.functions",
    "FunctionRuns": "traceguard._core.function_runs",
    "LayerRuns": "traceguard._core.layer_runs",
    "PRINT_MODES": "traceguard._side_effects.side_effects",
    "RetraceError": "traceguard._core.errors",
    "TraceAwareLayer": "traceguard._record.layer",
    "TraceAwareMixin": "traceguard._record.layer",
    "TraceEvent": "traceguard._core.events",
    "TraceKind": "traceguard._core.events",
    "TraceLog": "traceguard._record.log",
    "callbacks": "traceguard.callbacks",
    "compare": "traceguard._diagnosis.compare",
    "explain": "traceguard._diagnosis.watch",
    "forecast": "traceguard._diagnosis.forecast",
    "load_ipython_extension": "traceguard._ipython",
    "no_retrace": "traceguard._diagnosis.no_retrace",
    "print": "traceguard._side_effects.tf_print",
    "side_effects": "traceguard._side_effects.side_effects",
    "testing": "traceguard.testing",
    "trace_once": "traceguard._side_effects.trace_once",
    "unload_ipython_extension": "traceguard._ipython",
    "watch": "traceguard._diagnosis.watch",
    "write_html": "traceguard._diagnosis.html_report",
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
