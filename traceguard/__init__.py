"""traceguard: see, explain and control when Keras and TensorFlow run your layer's `call`."""

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
