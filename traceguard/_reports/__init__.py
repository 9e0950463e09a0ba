"""Every text a person reads: summaries, reasons, hints, failures, HTML, TensorBoard.

Pure functions of `_core` values (events, signatures, changes): reports know
nothing of how runs are recorded, so wording changes in this package alone.
"""
