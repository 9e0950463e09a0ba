"""traceguard: see, explain and control when Keras and TensorFlow run your layer's `call`."""

from traceguard import callbacks, testing
from traceguard._core.errors import RetraceError
from traceguard._core.events import TraceEvent, TraceKind
from traceguard._diagnosis.explanation import Explanation, LayerRuns
from traceguard._diagnosis.watch import explain, watch
from traceguard._record.layer import TraceAwareLayer, TraceAwareMixin
from traceguard._record.log import TraceLog
from traceguard._reports.html import write_html
from traceguard._side_effects.side_effects import PRINT_MODES, side_effects
from traceguard._side_effects.tf_print import print
from traceguard._side_effects.trace_once import trace_once
from traceguard._version import __version__

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
