"""Side effects that behave under tracing: print routing, `traceguard.print`, `trace_once`.

They consult the run in progress (`_record.runs`) to know whether the body is being
traced, and route through `_compat` what must run at each graph execution.
"""
