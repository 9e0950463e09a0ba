"""Keras 2: `TraceAwareLayer` and `TraceMonitor` on `tf_keras`, next to Keras 3 if need be.

`traceguard.TraceAwareLayer` subclasses `tf.keras.layers.Layer`, whichever Keras
that is. This module's `TraceAwareLayer` subclasses Keras 2's `Layer` in any case:
`tf_keras.layers.Layer` when the `tf_keras` package is installed
(`pip install 'tf_keras==2.X.*'`, naming your TensorFlow's minor version), else
`tf.keras.layers.Layer` on TensorFlow 2.12-2.15, whose
`tf.keras` is Keras 2. Importing it raises `ImportError`, naming
what is installed and what to install, when neither is there. `TraceMonitor` is
the callback for `fit`, `evaluate` and `predict` of Keras 2 models.
"""

from __future__ import annotations

from traceguard import _compat, callbacks
from traceguard._record.layer import TraceAwareMixin

_FLAVOR = _compat.keras2_flavor()

#: The Keras 2 namespace the classes here belong to: `tf_keras`, or `tf.keras`.
keras = _FLAVOR.keras


class TraceAwareLayer(TraceAwareMixin, _FLAVOR.layer_base):  # type: ignore[misc,name-defined]  # Keras is untyped.
    """A Keras 2 `Layer` that records every run of its `call` body.

    Subclass it instead of `tf_keras.layers.Layer` and change nothing else; the
    arguments are those of `traceguard.TraceAwareMixin`.

    Args:
        trace_log_size: Positive integer, how many events `trace_log` keeps.
            Defaults to `1000`.
        log_eager: Boolean, whether eager runs become events. Defaults to
            `False`.
        max_traces: None or a non-negative integer, the retrace budget.
            Defaults to `None`.
        on_retrace: One of `{"raise", "warn"}`. Defaults to `"warn"`.
        **kwargs: Standard `Layer` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    import tf_keras
    from traceguard.keras2 import TraceAwareLayer

    class Seed(TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = tf_keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    layer = Seed()
    tf.function(layer)(tf.random.uniform([60, 28, 28]))
    [event.kind.value for event in layer.trace_log]
    # ['trace', 'variable_retrace']
    ```
    """


# A Keras runs only its own callbacks. Where `tf.keras` is Keras 2, the default
# monitor is already a callback of this Keras.
if keras is _compat.keras:
    TraceMonitor = callbacks.TraceMonitor
else:
    class TraceMonitor(callbacks.TraceMonitorMixin, keras.callbacks.Callback):  # type: ignore[no-redef,misc,name-defined]
        """`traceguard.callbacks.TraceMonitor` for the `fit`, `evaluate` and `predict` of Keras 2 models.

        A Keras runs only its own callbacks: pass this one to a tf_keras model's
        `fit` while Keras 3 is `tf.keras`. Where `tf.keras` is Keras 2, it is
        `traceguard.callbacks.TraceMonitor` itself. The arguments are those of
        `traceguard.callbacks.TraceMonitor`.

        Args:
            html: Path (str or path-like) of a self-contained HTML report of
                `report`, rewritten at the end of each call. Defaults to `None`.
            log_dir: Directory (str or path-like) for TensorBoard summaries.
                Defaults to `None`.
            trace_file: Path (str or path-like) of a trace file, written as
                records happen; it may hold `{worker}` and the other fields of
                `traceguard.callbacks.TraceMonitor`'s. Defaults to `None`.
            trace_file_label: String, how reports name this process.
                Defaults to `None`: the worker in a multi-worker job
                (`"worker-1"`), else `"<host>:<pid>"`.

        Example:

        ```python
        import tf_keras
        from traceguard.keras2 import TraceMonitor

        model = tf_keras.Sequential([tf_keras.Input((8,)), tf_keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        monitor = TraceMonitor()
        model.fit(x, y, batch_size=32, callbacks=[monitor])
        print(monitor.report)
        ```
        """


__all__ = ["TraceAwareLayer", "TraceAwareMixin", "TraceMonitor", "keras"]
