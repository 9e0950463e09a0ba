"""Diagnosis of code the user did not change: `explain()`, `watch()` and `traceguard run`.

Instruments plain Keras layer classes while open, collects what the recorder
reports into an `Explanation`, and restores every class afterwards.
"""
