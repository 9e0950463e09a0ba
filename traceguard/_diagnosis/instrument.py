"""Recording plain Keras layers for a while: patching `call` on every Keras layer class.

`watch()` and `explain()` open an instrumentation session. While at least one is
open, every subclass of the `Layer` of each Keras imported when the first session
opened (`tf.keras`'s, and tf_keras's or Keras 3's next to it) that defines its own `call` (found
recursively through `__subclasses__()`, and any class defined meanwhile, through
a temporary `Layer.__init_subclass__`) runs the recorder's wrapped `call`. Plain
layers have no traceguard state: theirs lives in a store owned by the sessions
(a `WeakKeyDictionary` layer -> `LayerTraceState`), never on the user's objects.
When the last session closes, every class gets back the very `call` it had, and
`Layer` loses the `__init_subclass__` it did not have.

`TraceAwareLayer`s are left alone: their `call` is recorded already, into their
own `trace_log`.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

from traceguard import _compat
from traceguard._record.layer import TraceAwareMixin
from traceguard._record.layer_state import LayerTraceState, set_plain_layer_state
from traceguard._record.recorder import is_recorded, record_body
from traceguard._record.settings import TraceSettings

_SUBCLASS_HOOK = "__init_subclass__"

_lock = threading.RLock()
_open_sessions = 0
_eager_sessions = 0  # Open sessions that want plain layers' eager runs as events.
_patched: dict[type, tuple[Callable[..., Any], Callable[..., Any]]] = {}  # class -> (original, recorded)
_bases: tuple[type, ...] = ()  # The `Layer` classes patched: one per Keras.
_saved_subclass_hooks: dict[type, Any] = {}  # The `Layer.__dict__` entries replaced, if there were.
_states: weakref.WeakKeyDictionary[Any, LayerTraceState] = weakref.WeakKeyDictionary()
_plain_settings = {False: TraceSettings(log_eager=False), True: TraceSettings(log_eager=True)}


def open_session(log_eager: bool) -> None:
    """Starts recording plain Keras layers (nested sessions share the patches)."""
    global _open_sessions, _eager_sessions
    with _lock:
        if _open_sessions == 0:
            _install()
        _open_sessions += 1
        _eager_sessions += bool(log_eager)
        _apply_eager_setting()


def close_session(log_eager: bool) -> None:
    """Ends a session; the last one restores every class exactly."""
    global _open_sessions, _eager_sessions
    with _lock:
        _open_sessions -= 1
        _eager_sessions -= bool(log_eager)
        if _open_sessions == 0:
            _uninstall()
        else:
            _apply_eager_setting()


def layer_classes(bases: tuple[type, ...] | None = None) -> list[type]:
    """Every class derived from the `Layer` classes `bases`, bases included, each once.

    `bases` defaults to `tf.keras`'s `Layer` (none without Keras).
    """
    found: dict[type, None] = {}
    pending = list(bases if bases is not None else
                   (_compat.LayerBase,) if _compat.LayerBase is not None else ())
    while pending:
        cls = pending.pop()
        if cls not in found:
            found[cls] = None
            pending.extend(type.__subclasses__(cls))
    return list(found)


def _install() -> None:
    global _bases
    try:
        _bases = _compat.loaded_layer_bases()
        for base in _bases:
            if _SUBCLASS_HOOK in base.__dict__:
                _saved_subclass_hooks[base] = base.__dict__[_SUBCLASS_HOOK]
            type.__setattr__(base, _SUBCLASS_HOOK, classmethod(_instrument_new_subclass))
        for cls in layer_classes(_bases):
            _instrument_class(cls)
        set_plain_layer_state(_state_of)
    except BaseException:
        _uninstall()
        raise


def _uninstall() -> None:
    global _bases
    set_plain_layer_state(None)
    for base in _bases:
        if base in _saved_subclass_hooks:
            type.__setattr__(base, _SUBCLASS_HOOK, _saved_subclass_hooks.pop(base))
        elif _SUBCLASS_HOOK in base.__dict__:
            type.__delattr__(base, _SUBCLASS_HOOK)
    _bases = ()
    for cls, (original, recorded) in _patched.items():
        # Leave alone a `call` the user replaced meanwhile (a mock, say).
        if cls.__dict__.get("call") is recorded:
            type.__setattr__(cls, "call", original)
    _patched.clear()
    _states.clear()


def _instrument_new_subclass(cls: type, **kwargs: Any) -> None:
    # Runs for classes defined while a session is open; chains to the next
    # `__init_subclass__` after their `Layer` in the MRO (object's, on Keras 3.15).
    base: type[Any] = next(klass for klass in cls.__mro__ if klass in _bases)
    super(base, cls).__init_subclass__(**kwargs)
    with _lock:
        if _open_sessions:
            _instrument_class(cls)


def _instrument_class(cls: type) -> None:
    original = cls.__dict__.get("call")
    if (cls in _bases or not isinstance(original, types.FunctionType)
            or is_recorded(original) or issubclass(cls, TraceAwareMixin) or cls in _patched):
        return
    recorded = record_body(original)
    type.__setattr__(cls, "call", recorded)
    _patched[cls] = (original, recorded)


def _state_of(layer: Any) -> LayerTraceState | None:
    """The state recording a plain layer, made on its first run in a session."""
    if isinstance(layer, TraceAwareMixin):  # Still in its `__init__`: not ours to record.
        return None
    state = _states.get(layer)
    if state is None:
        with _lock:
            state = _states.get(layer)
            if state is None:
                # Only `call` is patched: what the layer's `build` creates is not seen.
                state = LayerTraceState(_plain_settings[_eager_sessions > 0],
                                        owner=getattr(layer, "name", type(layer).__name__),
                                        sees_build=False)
                _states[layer] = state
    return state


def _apply_eager_setting() -> None:
    # The plain states are shared by nested sessions; they log eager runs while any wants them.
    settings = _plain_settings[_eager_sessions > 0]
    for state in list(_states.values()):
        state.settings = settings

