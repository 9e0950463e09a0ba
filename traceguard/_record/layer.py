"""`TraceAwareMixin` and `TraceAwareLayer`: the layer classes users subclass.

The behaviour lives in the mixin, which works with the `Layer` classes of every
supported Keras; `TraceAwareLayer` is the mixin on `tf.keras.layers.Layer`.
Subclassing wraps the class's `call` and `build` once (in `__init_subclass__`), so
every run of the body is recorded, `__call__`'s and the runs Keras makes by calling
`self.call` directly, like Keras 3's symbolic build pass. Keras's own `__call__` is
left as it is: an eager step costs one wrapped `call` and nothing more.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import TYPE_CHECKING, Any

from traceguard import _compat
from traceguard._record.layer_state import STATE_ATTRIBUTE, LayerTraceState
from traceguard._record.log import TraceLog
from traceguard._record.recorder import is_recorded, record_body, record_build
from traceguard._record.settings import RENAMED_SETTINGS, SETTING_NAMES, TraceSettings


class TraceAwareMixin:
    """Records every run of the layer's `call` body in `layer.trace_log`.

    Mix it in before any Keras `Layer` class: `class MyDense(TraceAwareMixin,
    keras.layers.Dense)`. Each run is classified as a `TraceKind` with the
    reason, what changed since the previous trace, and how to avoid it. The
    layer's results are never changed.

    A mixed class without an `__init__` of its own takes the arguments of the
    Keras class, positional ones included, plus the keyword-only ones below,
    and Keras generates, saves and restores its config as the parent's. A
    `get_config` that calls `super().get_config()` gets the arguments below.

    Thread-safe: the layer may be called from several threads at once,
    including `tf.distribute` replica threads. Each run is recorded exactly
    once, its event names its thread (and replica), and event indices stay
    unique and contiguous.

    Args:
        trace_log_size: Positive integer, how many events `trace_log` keeps
            (older ones are dropped and counted). Defaults to `1000`.
        log_eager: Boolean, whether eager runs become events (they are always
            counted in `trace_log.eager_calls`). Defaults to `False`.
        max_traces: None or a non-negative integer: how many graph traces
            (`trace`, `retrace`, `variable_retrace`) the layer may make, each
            trace of a function that ran the body counted once however many
            times the body ran in it: the unit of
            `traceguard.testing.assert_max_traces()`. Defaults to `None`, no
            budget.
        on_retrace: What a trace past `max_traces` does. One of
            `{"raise", "warn"}`: `traceguard.RetraceError` raised during the
            trace, or a `UserWarning`. Defaults to `"warn"`: the budget lives
            in the model, and a long training run goes on. (`on_excess`, its
            former name, is deprecated.)
        **kwargs: Passed on to the Keras layer.

    Example:

    ```python
    class MyDense(traceguard.TraceAwareMixin, keras.layers.Dense):
        pass

    layer = MyDense(4)
    tf.function(layer)(tf.ones((2, 3)))
    print(layer.trace_log.summary())
    ```
    """

    if TYPE_CHECKING:
        name: str  # Keras's `Layer.name`, on every class the mixin is mixed into.

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_mixin_order(cls)
        # Also loads the Keras of `cls` (tf_keras, Keras 3...) for the questions asked later.
        for name, record in (("call", record_body), ("build", record_build)):
            method = getattr(cls, name, None)
            if method is not None and not _compat.is_base_layer_method(cls, name) \
                    and not is_recorded(method):
                setattr(cls, name, record(method))
        if "get_config" not in cls.__dict__:
            setattr(cls, "get_config", _config_method(cls))  # noqa: B010 (a class attribute)
        if cls.__init__ is TraceAwareMixin.__init__ and _compat.layer_base_of(cls) is not None:
            setattr(cls, "__init__", _init_method(cls))  # noqa: B010 (a class attribute)

    def __init__(
        self,
        *args: Any,
        trace_log_size: int = 1000,
        log_eager: bool = False,
        max_traces: int | None = None,
        on_retrace: str = "warn",
        **kwargs: Any,
    ) -> None:
        if _compat.layer_base_of(type(self)) is None:
            raise TypeError(
                "`TraceAwareMixin` records Keras layers: mix it into a Keras `Layer` class, "
                "before it, e.g. `class MyDense(traceguard.TraceAwareMixin, keras.layers.Dense)`. "
                f"Received: an instance of {type(self).__qualname__}, not a "
                f"{getattr(_compat.LayerBase, '__module__', 'keras')}."
                f"{getattr(_compat.LayerBase, '__qualname__', 'Layer')}"
            )
        on_retrace = _renamed_on_excess(on_retrace, kwargs)
        settings = TraceSettings(trace_log_size, log_eager, max_traces, on_retrace)
        super().__init__(*args, **kwargs)
        # Set around Keras's `__setattr__` so the state is never tracked or saved.
        object.__setattr__(self, STATE_ATTRIBUTE, LayerTraceState(settings, owner=self.name))

    def get_config(self) -> dict[str, Any]:
        # Reached from a subclass's own `get_config` through `super().get_config()`.
        return _with_settings(self, super().get_config())  # type: ignore[misc]

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Any:
        # A config saved under a setting's former name (`on_excess`) loads as the new one, with
        # no warning: the file is not the user's code to change, and saving it again renames it.
        return super().from_config(_renamed_settings(config))  # type: ignore[misc]

    @property
    def trace_log(self) -> TraceLog:
        """The `traceguard.TraceLog` of this layer's body runs."""
        state: LayerTraceState = self.__dict__[STATE_ATTRIBUTE]
        return state.log


def _renamed_on_excess(on_retrace: str, kwargs: dict[str, Any]) -> str:
    """`on_retrace`, or the value of `on_excess`, its deprecated name, taken out of `kwargs`."""
    if "on_excess" not in kwargs:
        return on_retrace
    on_excess = kwargs.pop("on_excess")
    warnings.warn("The `on_excess` argument of traceguard layers is deprecated: use `on_retrace` "
                  f"(same values). Received: on_excess={on_excess!r}", DeprecationWarning,
                  stacklevel=_compat.user_stacklevel())
    if on_retrace != "warn" and on_retrace != on_excess:
        raise ValueError("`on_retrace` and `on_excess` (its deprecated name) disagree: give only "
                         f"`on_retrace`. Received: on_retrace={on_retrace!r}, on_excess={on_excess!r}")
    return on_excess  # type: ignore[no-any-return]


# traceguard's keyword-only arguments, as the mixin's `__init__` declares them.
_SETTING_PARAMETERS = {name: inspect.signature(TraceAwareMixin.__init__).parameters[name]
                       for name in SETTING_NAMES}


def _check_mixin_order(cls: type) -> None:
    """Fails at class creation when a Keras layer class precedes the mixin in `cls`'s bases.

    Keras's `Layer.__init__` and `__call__` would then run instead of the mixin's,
    and the layer would record nothing.
    """
    base = _compat.layer_base_of(cls)
    mro = cls.__mro__
    if base is not None and mro.index(base) < mro.index(TraceAwareMixin):
        bases = ", ".join(base.__qualname__ for base in cls.__bases__)
        raise TypeError(
            f"`TraceAwareMixin` must come before the Keras layer class in the bases of "
            f"`{cls.__qualname__}`, e.g. `class {cls.__name__}(traceguard.TraceAwareMixin, "
            f"keras.layers.Dense)`. Received: class {cls.__name__}({bases})"
        )


def _parent_method(cls: type, name: str) -> Any:
    """The method `name` that `cls` would have without the mixin, or None."""
    return next((klass.__dict__[name] for klass in cls.__mro__[1:]
                 if klass is not TraceAwareMixin and name in klass.__dict__), None)


def _config_method(cls: type[Any]) -> Any:
    """A `get_config` for `cls` that adds traceguard's arguments to the parent's config.

    Keras generates the config of a subclass without `get_config` from its
    `__init__` arguments, but only while the `get_config` it finds is marked as
    Keras's default: the method is marked likewise when the parent's is.
    """

    def get_config(self: Any) -> dict[str, Any]:
        config: dict[str, Any] = super(cls, self).get_config()
        return _with_settings(self, config)

    if _compat.is_keras_default_method(_parent_method(cls, "get_config")):
        _compat.mark_keras_default_method(get_config)
    get_config.__qualname__ = f"{cls.__qualname__}.get_config"
    return get_config


def _with_settings(layer: Any, config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the layer's traceguard arguments, if its class can take them back."""
    owner: type = type(layer)
    if _accepts_settings(owner):
        config.update(layer.__dict__[STATE_ATTRIBUTE].settings.as_config())
        for old in RENAMED_SETTINGS:  # Keras 3's automatic config keeps the arguments as passed.
            config.pop(old, None)
    return config


def _renamed_settings(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with the settings saved under a former name under their name now."""
    if not any(old in config for old in RENAMED_SETTINGS):
        return config
    config = dict(config)
    for old, new in RENAMED_SETTINGS.items():
        if old in config:
            value = config.pop(old)
            config.setdefault(new, value)
    return config


def _init_method(cls: type[Any]) -> Any:
    """An `__init__` for `cls` whose signature is the parent's plus traceguard's arguments.

    Keras reads a layer's constructor arguments from the signature of `cls.__init__`
    to generate its config; the mixin's own, `(self, *args, ..., **kwargs)`, would
    hide them, and a positional argument (`Wrapper.from_config` passes the wrapped
    layer so) would turn Keras's automatic config off. The parent is the `__init__`
    the class would have without the mixin.
    """

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        super(cls, self).__init__(*args, **kwargs)

    parameters = list(inspect.signature(_parent_method(cls, "__init__")).parameters.values())
    settings = [parameter for name, parameter in _SETTING_PARAMETERS.items()
                if all(p.name != name for p in parameters)]
    # Keyword-only, before the parent's `**kwargs` if it has one.
    has_kwargs = bool(parameters) and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD
    at = len(parameters) - has_kwargs
    _compat.present_signature(__init__, inspect.Signature(parameters[:at] + settings + parameters[at:]))
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


@functools.cache
def _accepts_settings(cls: type) -> bool:
    """Whether `cls(**config)` can take traceguard's arguments back."""
    parameters = inspect.signature(getattr(cls, "__init__")).parameters.values()  # noqa: B009
    names = {p.name for p in parameters}
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters) \
        or set(SETTING_NAMES) <= names


class _NoKeras:
    """Keras's `Layer` where no Keras imports (plain JAX or TensorFlow): using it says why."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.__module__ != __name__:  # `TraceAwareLayer` itself is defined; a user's class is not.
            _compat.keras3_flavor()  # Raises the ImportError that says why, and the fix.

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _compat.keras3_flavor()


class TraceAwareLayer(TraceAwareMixin, _compat.LayerBase or _NoKeras):  # type: ignore[misc]  # Keras is untyped.
    """A Keras `Layer` that records every run of its `call` body.

    Subclass it instead of `keras.layers.Layer` and change nothing else; see
    `TraceAwareMixin` for the arguments. It subclasses `tf.keras.layers.Layer`,
    whichever Keras `tf.keras` is when traceguard is imported: Keras 3 on
    TensorFlow >= 2.16, `tf_keras` when `TF_USE_LEGACY_KERAS=1` is set, Keras 2 on
    TensorFlow 2.12-2.15. For `tf_keras` layers next to Keras 3, subclass
    `traceguard.keras2.TraceAwareLayer`.

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
    class Seed(traceguard.TraceAwareLayer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = keras.layers.Dense(32)

        def call(self, inputs):
            return self.dense(inputs)

    layer = Seed()
    tf.function(layer)(tf.random.uniform([60, 28, 28]))
    [event.kind.value for event in layer.trace_log]
    # ['symbolic', 'trace', 'variable_retrace']
    ```
    """
