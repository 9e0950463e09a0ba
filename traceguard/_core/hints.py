"""Which fix a retrace gets: rules from the first change, the function and the Keras call.

Pure rules over `_core` values; `_reports.messages` words each `Hint`.
"""

from __future__ import annotations

from traceguard._core.backends import Backend
from traceguard._core.changes import Aspect, Change
from traceguard._core.keras_names import KerasCall
from traceguard._core.signature import Signature
from traceguard._core.specs import MappingSpec, SequenceSpec, ValueSpec
from traceguard._core.verdicts import Hint

# Keras 2's `fit` creates the optimizer's variables (slots, iteration count) in the
# first trace of `train_function` (tf_keras, Keras 2.12-2.15; measured), so TensorFlow
# traces it twice; Keras 3 builds the optimizer before tracing.
KERAS2_TRAIN_FUNCTION = "train_function"

# The public methods that trace a function for a signature on request rather than on a call's
# cache miss: `tf.function`'s `get_concrete_function` (a concrete function per signature it is
# given), `jax.jit`'s `lower` and `trace` (a record's `entry` is the library function the
# user's code called).
REQUESTING_METHODS = frozenset({"get_concrete_function", "lower", "trace"})


def requested(entry: str | None) -> bool:
    """Whether a trace made under `entry` was asked for, not a call's miss."""
    return entry is not None and entry.rsplit(".", 1)[-1] in REQUESTING_METHODS

# The fix for a retrace, by the aspect of its first change, on TensorFlow then on JAX
# (`jax.jit` compiles once per input shape and dtype, and per value of a static
# argument; it has no `None` dimension). A dimension in a Keras step is its own row.
_HINT_BY_ASPECT: dict[tuple[Aspect, bool], Hint] = {
    (Aspect.DIM, False): Hint.NONE_DIMENSION,
    (Aspect.DIM, True): Hint.FIXED_SHAPES,
    (Aspect.DTYPE, False): Hint.ONE_DTYPE,
    (Aspect.DTYPE, True): Hint.ONE_DTYPE,
    (Aspect.RANK, False): Hint.ONE_RANK,
    (Aspect.RANK, True): Hint.FIXED_SHAPES,
}

# A batch dimension that changed in a Keras step, by the Keras method and its data.
_ANY_DATA = ("dataset", "arrays", "other", None)
_BATCH_HINT_BY_CALL: dict[tuple[str, str | None], Hint] = {
    ("fit", "dataset"): Hint.PARTIAL_BATCH_DATASET,
    ("fit", "arrays"): Hint.PARTIAL_BATCH_ARRAYS,
    **{("evaluate", data): Hint.PARTIAL_BATCH_EVALUATE for data in _ANY_DATA},
    **{(method, data): Hint.PREDICT_BATCH_SIZE for method in ("predict", "predict_on_batch")
       for data in _ANY_DATA},
    **{(method, data): Hint.ONE_BATCH_SIZE for method in ("train_on_batch", "test_on_batch")
       for data in _ANY_DATA},
}


def retrace_hint(change: Change, old: Signature, new: Signature, keras_step: bool = False,
                 backend: Backend = Backend.TENSORFLOW, keras_call: KerasCall | None = None,
                 relaxed: bool | None = None) -> tuple[Hint, str | None]:
    """The fix that matches a retrace's first change, and the argument it names.

    Chosen from what the backend compared (the change's aspect and the argument's
    spec: a static argument, an object keyed by identity, a weakly typed scalar),
    the backend, whether it relaxed the signature already (`relaxed`), and the Keras
    method whose step traced (`keras_call`) with its data.
    """
    jax = backend == Backend.JAX
    name = change.parameter
    aspect = change.aspect
    if backend == Backend.TORCH:
        torch_hint = _torch_hint(change, keras_step, keras_call, relaxed)
        if torch_hint is not None:
            return torch_hint, name
    if name == "training" and not jax:
        return Hint.TRAINING_VALUE, name
    keyed = _hint_by_key(change)
    if keyed is not None:
        # JAX keys a static field and a weak type per leaf, and names the leaf (`at trace['y']`).
        return keyed, str(change.argument) if aspect in _KEYED_PER_LEAF else name
    if aspect is Aspect.DIM:
        dimension = _dimension_hint(change, keras_step, jax, keras_call, relaxed)
        if dimension is not None:
            return dimension, name
    hint = _HINT_BY_ASPECT.get((aspect, jax))
    if hint is not None:
        return hint, name
    if aspect is Aspect.VALUE:
        return Hint.PYTHON_VALUE_AS_TENSOR, name
    if aspect is Aspect.FUNCTION_OBJECT:
        return (Hint.REUSE_MODEL if keras_step else Hint.CREATE_FUNCTION_ONCE), None
    old_spec, new_spec = old.get(name), new.get(name)
    if isinstance(old_spec or new_spec, ValueSpec) and isinstance(new_spec or old_spec, ValueSpec):
        return Hint.PYTHON_VALUE_AS_TENSOR, name
    if isinstance(old_spec, SequenceSpec) and isinstance(new_spec, SequenceSpec) \
            and old_spec.length != new_spec.length and not jax:
        return Hint.VARYING_COUNT, name
    return Hint.FIXED_STRUCTURE, name


# torch.compile's guards, by what failed (torch/_dynamo/guards.py, torch/csrc/dynamo/guards.cpp): a
# tensor's size or one of its properties, a Python value specialised into the graph, an object Dynamo
# holds by identity, anything else it guards.
_TORCH_HINT_BY_ASPECT = {Aspect.DIM: Hint.DYNAMIC_DIMENSION, Aspect.VALUE: Hint.PYTHON_VALUE_AS_TENSOR,
                         Aspect.IDENTITY: Hint.OBJECT_IDENTITY, Aspect.CONTEXT: Hint.TRACING_CONTEXT,
                         Aspect.REQUIRES_GRAD: Hint.REQUIRES_GRAD, Aspect.STRIDE: Hint.ONE_LAYOUT,
                         Aspect.DEVICE: Hint.ONE_DEVICE, Aspect.INFERENCE: Hint.INFERENCE_TENSOR}
# A Python value's recompile, by what torch did with it (`relaxed`: the new compile passes another
# value): made dynamic, so later values reuse it; still guarded by value; not asked.
_TORCH_VALUE_HINT = {True: Hint.DYNAMIC_VALUE, False: Hint.SPECIALISED_VALUE,
                     None: Hint.PYTHON_VALUE_AS_TENSOR}


def _torch_hint(change: Change, keras_step: bool, keras_call: KerasCall | None,
                relaxed: bool | None) -> Hint | None:
    """The fix of a torch.compile recompile, from torch's guard as a change and what its new
    compile did with the value (`relaxed`); None for the general one."""
    if change.aspect is Aspect.DIM and change.axis == 0 and (keras_call is not None or keras_step):
        return _dimension_hint(change, keras_step, False, keras_call, None)
    if change.aspect is Aspect.CONTEXT and str(change.argument).endswith(".grad"):
        return Hint.FIRST_STEP_GRADIENTS
    if change.aspect is Aspect.DIM and change.old in (0, 1):  # torch specialises sizes 0 and 1 always.
        return Hint.SIZE_ONE_SPECIALISED
    bool_values = isinstance(change.old, bool) and isinstance(change.new, bool)
    if change.aspect is Aspect.CONTEXT and bool_values:  # The global grad mode: one compile per value.
        return Hint.GLOBAL_MODE
    if change.aspect is Aspect.VALUE:
        # A bool is guarded by its value on every compile (a mode flag such as `module.training`):
        # one compile per value, each kept.
        if bool_values:
            return Hint.MODE_FLAG
        if isinstance(change.old, str):  # Guarded by equality; torch never makes a str dynamic.
            return Hint.STRING_VALUE
        if relaxed is None and type(change.old) is int and _outside_arguments(change):
            return Hint.STATIC_ATTRIBUTE
        return _TORCH_VALUE_HINT[relaxed]
    return _TORCH_HINT_BY_ASPECT.get(change.aspect)


def _outside_arguments(change: Change) -> bool:
    """Whether torch's guard reads the value from an attribute or a global (`self.step`,
    `G['count']`), not from one of the frame's arguments."""
    name = str(change.argument)
    return "." in name or name.startswith("G[")


_KEYED_PER_LEAF = (Aspect.STATIC_FIELD, Aspect.WEAK_TYPE)


def _hint_by_key(change: Change) -> Hint | None:
    """The fix named by how the backend keys the argument: a weak type, a static argument, an
    object compared by identity; None for a tensor's shape or dtype, or a plain Python value."""
    aspect = change.aspect
    static = getattr(change.new, "static", False) or getattr(change.old, "static", False)
    if aspect is Aspect.WEAK_TYPE:
        return Hint.WEAK_TYPE
    if aspect is Aspect.CONTEXT:
        return Hint.TRACING_CONTEXT
    if aspect is Aspect.STATIC_FIELD:
        return Hint.STATIC_FIELD
    if aspect is Aspect.CALL_STRUCTURE:
        return Hint.CALL_STRUCTURE
    if aspect is Aspect.SHARDING:
        return Hint.ONE_SHARDING
    if aspect is Aspect.IDENTITY:
        return Hint.STATIC_IDENTITY if static else Hint.OBJECT_IDENTITY
    if aspect is Aspect.VALUE and static:
        return Hint.STATIC_VALUE
    return None


def _dimension_hint(change: Change, keras_step: bool, jax: bool, keras_call: KerasCall | None,
                    relaxed: bool | None) -> Hint | None:
    """The fix of a changed dimension, by the Keras method and its data, by what TensorFlow relaxed,
    and by the axis; None to take the backend's general one."""
    if change.axis == 0 and keras_call is not None:
        return _BATCH_HINT_BY_CALL.get((keras_call.method, keras_call.data), Hint.PARTIAL_BATCH)
    if change.axis == 0 and keras_step:
        return Hint.PARTIAL_BATCH
    if not jax and (relaxed or change.new is None):  # TensorFlow relaxed it (`reduce_retracing`).
        return Hint.RELAXED_DIMENSION
    if change.axis:
        return Hint.VARYING_LENGTH
    return None


def body_retrace_hint(changes: tuple[Change, ...], old: Signature) -> tuple[Hint, str] | None:
    """The fix of a body JAX traced again: when an argument weakly typed before (a Python scalar
    as a loop's initial carry) changed type, JAX promoted it to the type the body returned and
    traced the body once more (jax/_src/lax/control_flow/loops.py, `_promote_weak_typed_input`)."""
    for change in changes:
        spec = _spec_at(old.get(change.parameter), change.argument.keys)
        if getattr(spec, "weak_type", False) and change.aspect in (Aspect.DTYPE, Aspect.WEAK_TYPE):
            return Hint.WEAK_CARRY, str(change.argument)
    return None


def _spec_at(spec: object, keys: tuple) -> object:
    """The spec at `keys` into `spec` (an item of a sequence by index, of a mapping by key)."""
    for key in keys:
        if isinstance(spec, SequenceSpec) and isinstance(key, int) and key < len(spec.items):
            spec = spec.items[key]
        elif isinstance(spec, MappingSpec):
            spec = dict(spec.items).get(key if isinstance(key, str) else repr(key))
        else:
            return None
    return spec


def new_object_hint(keras_step: bool, same_model: bool | None, library: bool = False) -> Hint:
    """The fix of a trace by a new function object of the same code: for a Keras step, by whether
    the model is the same (its step function was dropped: `compile()` again) or another one; for
    another library's function, made by the API the user calls eagerly."""
    if library and not keras_step:
        return Hint.LIBRARY_FUNCTION_PER_CALL
    if not keras_step:
        return Hint.CREATE_FUNCTION_ONCE
    return Hint.RECOMPILED_MODEL if same_model else Hint.REUSE_MODEL


def layer_variable_retrace_hint(layer_created: list[bool | None], function: str | None,
                                keras_step: bool) -> Hint:
    """The fix of a layer's variable retrace, by whether its own creating runs created variables."""
    if function == KERAS2_TRAIN_FUNCTION:
        return Hint.BUILD_OPTIMIZER_FIRST
    created = True if any(layer_created) else (False if layer_created and all(
        created is False for created in layer_created) else None)
    if keras_step:  # The user wrapped nothing: never "before wrapping it in tf.function".
        by_created: dict[bool | None, Hint] = {
            False: Hint.STEP_CREATED_OTHER_VARIABLES, True: Hint.BUILD_MODEL_FIRST}
        return by_created.get(created, Hint.STEP_CREATED_VARIABLES)
    return Hint.FUNCTION_CREATED_OTHER_VARIABLES if created is False else Hint.CREATE_VARIABLES_FIRST


def function_variable_retrace_hint(owners: set[str], function: str, keras_step: bool) -> Hint:
    """The fix of a function's variable retrace, by whose variables its first trace created
    (`keras_names.variable_owner` of each)."""
    if "loss" in owners:
        return Hint.LOSS_CREATES_VARIABLE
    if function == KERAS2_TRAIN_FUNCTION:
        return Hint.BUILD_OPTIMIZER_FIRST
    if keras_step:
        if owners == {"other"}:
            return Hint.BUILD_MODEL_FIRST
        return Hint.STEP_CREATED_OTHER_VARIABLES if owners and "other" not in owners \
            else Hint.STEP_CREATED_VARIABLES
    if owners == {"optimizer"}:
        return Hint.OPTIMIZER_SLOTS
    if owners == {"metric"}:
        return Hint.METRIC_STATE
    return Hint.CREATE_VARIABLES_FIRST


__all__ = ["KERAS2_TRAIN_FUNCTION", "REQUESTING_METHODS", "body_retrace_hint",
           "function_variable_retrace_hint", "layer_variable_retrace_hint", "new_object_hint", "requested",
           "retrace_hint"]
