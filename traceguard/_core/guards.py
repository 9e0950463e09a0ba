"""The guard vocabulary: what a budget counts, what fails after warm-up, what a failing guard does.

Two guards, each spelled one way in every form:

- "At most N traces", a budget: the layer argument `max_traces=`,
  `traceguard.testing.assert_max_traces()` and `@pytest.mark.max_traces(n)`.
  They count one unit, a *graph trace*: one run of a function's Python body by
  its backend to build a graph (a `tf.function`, a Keras step, a `jax.jit`
  function), of the kinds in `BUDGET_KINDS`. A function counts its own traces,
  as TensorFlow's `experimental_get_tracing_count()` does (the variable-creation
  trace included); a layer counts the traces that ran its body, once per trace
  however many times the body ran in it (a layer called twice, replicas).
- "Nothing traces after warm-up": `traceguard.no_retrace()`,
  `@pytest.mark.no_retrace` and `TraceMonitor(no_retrace_after=...)`. Each
  function's first trace (with the variable retrace that may follow it) is its
  warm-up unless the guard is told otherwise; what fails after it is a layer's
  run of a kind in `GUARDED_KINDS`, or a function's trace for a reason in
  `GUARDED_REASONS`.

Both take `on_retrace`, one of `ON_RETRACE_MODES`.
"""

from __future__ import annotations

from traceguard._core.kinds import GRAPH_TRACE_KINDS, TraceKind
from traceguard._core.verdicts import Reason

# What a guard does when its limit is passed: raise (`traceguard.RetraceError`, or the test's
# failure), or issue a `UserWarning` and go on.
ON_RETRACE_MODES = ("raise", "warn")

# The unit of every budget: the kinds of a graph trace.
BUDGET_KINDS = GRAPH_TRACE_KINDS

# What fails after each function's warm-up: a layer's retrace (a tuple, so that a `TraceKind` and
# its name both match), and a function's trace for a new signature, for the same one (something
# outside its arguments changed), by a new function object whose code traced before, and its
# compilations without a retrace (XLA, for new input shapes: a miss the user pays for as well).
GUARDED_KINDS = (TraceKind.RETRACE,)
GUARDED_REASONS = frozenset({Reason.SIGNATURE_CHANGED, Reason.SAME_ARGUMENTS, Reason.NEW_FUNCTION_OBJECT,
                             Reason.XLA_COMPILE, Reason.RECOMPILE})
