"""Recording: the wrapped `call`, the run in progress, per-layer state and the log.

A hooked `call` opens a run on this thread's stack, asks `_compat` what kind of
run it is, classifies it (`classify`), runs the user's body, and leaves the run in
the layer's `TraceLog`; observers (`watch()`, `TraceMonitor`, ...) are told.
"""
