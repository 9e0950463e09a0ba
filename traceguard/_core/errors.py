"""The exceptions traceguard raises at its public boundary."""


class RetraceError(Exception):
    """Raised when a layer traces more often than its `max_traces` budget.

    A direct `Exception` subclass on purpose: TensorFlow re-raises those through
    `tf.function` as they are, while it wraps some other classes (such as
    `RuntimeError` subclasses) in a `StagingError`.
    """


RetraceError.__module__ = "traceguard"
