"""The codes of a classification: where a run happened, why, how to avoid it, and the verdict.

The vocabulary `classify` and `function_rules` decide with and `_reports.messages`
words: `RunContext`, `Reason`, `SymbolicPass`, `Hint` and `Verdict`, and what a
layer remembers of its earlier traces (`EarlierTrace`) and learns of the
function trace around a run (`EnclosingTrace`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, NamedTuple

from traceguard._core.backends import Backend
from traceguard._core.changes import Change
from traceguard._core.keras_names import KerasCall, OptimizerBuild
from traceguard._core.kinds import TraceKind
from traceguard._core.signature import Signature
from traceguard._core.specs import Site, spec_from_json


class RunContext(enum.Enum):
    """Where the body ran, as seen by the recorder."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    SAVE = "save"
    GRAPH = "graph"


class Reason(enum.Enum):
    """Why a body run or a function trace happened; `_reports.messages` words each."""

    EAGER = "eager"
    SYMBOLIC = "symbolic"
    SAVE = "save"
    FIRST_TRACE = "first_trace"
    SAME_TRACE = "same_trace"  # Ran again within a trace that already ran it with this signature.
    NEW_FUNCTION_OBJECT = "new_function_object"
    VARIABLE_RETRACE = "variable_retrace"
    SAME_ARGUMENTS = "same_arguments"  # The function retraced; this layer's arguments did not change.
    SIGNATURE_CHANGED = "signature_changed"
    # The layer's arguments did not change; the enclosing function's did.
    ENCLOSING_CHANGED = "enclosing_changed"
    # A whole function: XLA compiled it for new input shapes without a trace; JAX compiled
    # it again for a signature it had traced.
    XLA_COMPILE = "xla_compile"
    RECOMPILE = "recompile"
    # A body JAX traced below `jax.jit` (a `lax.scan` body, ...), as part of the trace of the
    # function it is a body of: that trace's kind says whether it was a retrace. On torch, the first
    # compile of a frame Dynamo compiles after a graph break, part of compiling its function.
    PART_OF_TRACE = "part_of_trace"


class SymbolicPass(enum.Enum):
    """Why Keras ran a layer's `call` on symbolic inputs (`RunContext.SYMBOLIC`)."""

    BUILD = "build"  # Keras 3 built the layer, which has no `build()`, by running `call`.
    OUTPUT = "output"  # Keras 3 inferred the layer's output (a functional model).
    ENCLOSING = "enclosing"  # Keras 3 ran it inside another layer's symbolic pass.
    KERAS2 = "keras2"  # A Keras 2 functional model ran it to infer its outputs.


class Hint(enum.Enum):
    """How to avoid a run; `_reports.messages` words each."""

    # A symbolic pass: why it ran not known.
    SYMBOLIC_PASS = "symbolic_pass"
    DEFINE_BUILD = "define_build"  # Keras 3's pass building a layer without `build()`.
    DEFINE_COMPUTE_OUTPUT_SHAPE = "define_compute_output_shape"  # Keras 3's pass inferring outputs.
    ENCLOSING_SYMBOLIC_PASS = "enclosing_symbolic_pass"  # Inside another layer's pass.
    KERAS2_FUNCTIONAL = "keras2_functional"  # Keras 2's functional model: nothing to fix.
    CREATE_VARIABLES_FIRST = "create_variables_first"
    # The first trace of a Keras step created variables, none of them the layer's.
    STEP_CREATED_OTHER_VARIABLES = "step_created_other_variables"
    # The first trace of a Keras step created variables: whose is not known.
    STEP_CREATED_VARIABLES = "step_created_variables"
    # The first trace of a Keras step built the layer.
    BUILD_MODEL_FIRST = "build_model_first"
    # The first trace of a user function created variables, none of them the layer's.
    FUNCTION_CREATED_OTHER_VARIABLES = "function_created_other_variables"
    BUILD_OPTIMIZER_FIRST = "build_optimizer_first"
    CREATE_FUNCTION_ONCE = "create_function_once"
    # A library's function made anew per eager call of its API (`tf.vectorized_map`'s).
    LIBRARY_FUNCTION_PER_CALL = "library_function_per_call"
    # A Keras step traced anew for a new model object: build the model once.
    REUSE_MODEL = "reuse_model"
    # A user function's first trace created an optimizer's variables, or metrics' state.
    OPTIMIZER_SLOTS = "optimizer_slots"
    METRIC_STATE = "metric_state"
    LOSS_CREATES_VARIABLE = "loss_creates_variable"  # The loss function makes a tf.Variable.
    # A list of a varying number of tensors.
    VARYING_COUNT = "varying_count"
    KEEP_OUTSIDE_VALUES_FIXED = "keep_outside_values_fixed"
    TRAINING_VALUE = "training_value"
    PARTIAL_BATCH = "partial_batch"  # In fit/evaluate, the data's kind unknown.
    PARTIAL_BATCH_DATASET = "partial_batch_dataset"  # fit on a tf.data.Dataset: drop_remainder.
    PARTIAL_BATCH_ARRAYS = "partial_batch_arrays"  # fit on arrays: a batch size that divides.
    PARTIAL_BATCH_EVALUATE = "partial_batch_evaluate"  # Dropping samples would change the metrics.
    PREDICT_BATCH_SIZE = "predict_batch_size"  # Dropping samples would drop predictions.
    ONE_BATCH_SIZE = "one_batch_size"  # train_on_batch / test_on_batch with varying sizes.
    RELAXED_DIMENSION = "relaxed_dimension"  # TensorFlow made a dimension None: expected, once.
    VARYING_LENGTH = "varying_length"  # A dimension past the batch, such as a sequence length.
    NONE_DIMENSION = "none_dimension"
    # torch: a dimension that varies recompiled `torch.compile`: mark it dynamic.
    DYNAMIC_DIMENSION = "dynamic_dimension"
    # torch: the first step ran before gradients existed; the second recompiled once they did.
    FIRST_STEP_GRADIENTS = "first_step_gradients"
    # torch: a Python value its recompile made dynamic (automatic dynamic): later values reuse it.
    DYNAMIC_VALUE = "dynamic_value"
    # torch: a Python value still guarded by its exact value after its recompile (a `range` bound,
    # Python control flow): every new value compiles again, whatever `dynamic` says.
    SPECIALISED_VALUE = "specialised_value"
    # torch: a bool (a mode flag such as `module.training`) guarded by value: one compile per value,
    # both kept; nothing to fix.
    MODE_FLAG = "mode_flag"
    # torch: a dimension whose earlier size was 0 or 1, which torch always specialises (0/1
    # specialisation), whatever `dynamic` says: `mark_unbacked`, or a first size above 1.
    SIZE_ONE_SPECIALISED = "size_one_specialised"
    # torch: a global mode Dynamo guards (`GLOBAL_STATE changed: grad_mode`): one compile per value,
    # both kept; nothing to fix.
    GLOBAL_MODE = "global_mode"
    # torch: an int read from an attribute or a global (`self.step`), not an argument: guarded by
    # its exact value on every compile, `dynamic=True` or not (an nn.Module's int attributes can be
    # made dynamic with `allow_unspec_int_on_nn_module`).
    STATIC_ATTRIBUTE = "static_attribute"
    # torch: a `str` argument, guarded by equality and never made dynamic: do the string work outside.
    STRING_VALUE = "string_value"
    # torch: an inference tensor against a normal one: one compile each, kept; make inputs one kind.
    INFERENCE_TENSOR = "inference_tensor"
    # torch: a tensor argument's `requires_grad`, stride or device changed (a guard per tensor).
    REQUIRES_GRAD = "requires_grad"
    ONE_LAYOUT = "one_layout"
    ONE_DEVICE = "one_device"
    FIXED_SHAPES = "fixed_shapes"  # jax.jit: no None dimension; pad or bucket.
    ONE_DTYPE = "one_dtype"
    ONE_RANK = "one_rank"
    PYTHON_VALUE_AS_TENSOR = "python_value_as_tensor"
    FIXED_STRUCTURE = "fixed_structure"
    # JAX: a weakly typed scalar (a Python number) became typed, or the other way.
    WEAK_TYPE = "weak_type"
    # JAX: a static argument (`static_argnums`/`static_argnames`) took a new value.
    STATIC_VALUE = "static_value"
    # JAX: a pytree node's static field (its auxiliary data) took a new value.
    STATIC_FIELD = "static_field"
    # JAX: an array's sharding (its abstract value's mesh and partitioning) changed.
    ONE_SHARDING = "one_sharding"
    # JAX: an argument passed by keyword at one call and positionally at another.
    CALL_STRUCTURE = "call_structure"
    # JAX: a static argument whose type has no `__eq__`: a new object is a new key.
    STATIC_IDENTITY = "static_identity"
    # The call ran in another context the backend keys traces by (JAX: a `jax.config` value or
    # context manager; TensorFlow: the cross-replica context, a graph's device scope, ...).
    TRACING_CONTEXT = "tracing_context"
    # TensorFlow: a Python object argument (a function, a bound method, a model) keyed by identity.
    OBJECT_IDENTITY = "object_identity"
    # A Keras step traced anew for the same model: `compile()` (or `make_*_function(force=True)`)
    # dropped the step function.
    RECOMPILED_MODEL = "recompiled_model"
    # The trace was asked for (`get_concrete_function`, `jax.jit(...).lower()`): not a call's miss.
    REQUESTED_TRACE = "requested_trace"
    # An XLA compilation without a trace: fixed shapes, by input kind.
    XLA_FIXED_SHAPES = "xla_fixed_shapes"  # Pad or bucket, or no `jit_compile` if shapes must vary.
    XLA_DROP_REMAINDER = "xla_drop_remainder"  # fit/evaluate on a tf.data.Dataset.
    XLA_BATCH_DIVIDES = "xla_batch_divides"  # fit/evaluate on arrays: a batch size that divides.
    XLA_PREDICT_PAD = "xla_predict_pad"  # predict: pad the last batch, or one batch size.
    RECOMPILE_SAME_SIGNATURE = "recompile_same_signature"  # JAX: a new device, sharding or cache.
    # TensorFlow: a function restored by `tf.saved_model.load`, which serves the concrete functions
    # saved with it only: save it with an `input_signature`, or call its serving signature.
    RESTORED_FUNCTION = "restored_function"
    # JAX: a control-flow body made anew per call of the function that runs it eagerly.
    DEFINE_BODY_ONCE = "define_body_once"
    # JAX: a loop's weakly typed initial carry (a Python scalar) promoted to the body's output type.
    WEAK_CARRY = "weak_carry"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The classification of one run or function trace: its kind, what changed, and why, as codes.

    `function` and `backend` name the place for the words of the reason and hint;
    `argument` is the argument a hint names (`PYTHON_VALUE_AS_TENSOR`), else None.
    """

    kind: TraceKind
    changes: tuple[Change, ...]
    reason: Reason
    hint: Hint | None
    function: str | None = None
    backend: Backend = Backend.TENSORFLOW
    argument: str | None = None
    keras_call: KerasCall | None = None  # The Keras method of the step, for a hint's numbers.
    control_flow: str | None = None  # "tf.while_loop" or "tf.cond" whose body or branch ran it.
    objects: int | None = None  # For a new function object: how many objects its code has had.
    created: tuple[str, ...] = ()  # For a function's variable retrace: the variables lifted.
    # Where the call's data came from: "dataset" (a `tf.data` pipeline), "arrays", "other", or None
    # when not known; a hint names `drop_remainder` only for a dataset.
    data: str | None = None
    # For a trace TensorFlow relaxed (`reduce_retracing`): the spec it traced for the argument the
    # hint names.
    relaxed_to: Any = None
    # Whether the verdict is a whole function's trace (else a layer's body run).
    of_function: bool = False
    xla_functions: tuple[str, ...] = ()  # For a compilation: the `jit_compile=True` functions run.
    # For a body JAX traced below `jax.jit` (`control_flow` is what for: "scan", "while_body", ...):
    # the function it is a body of.
    body_of: str | None = None
    # For a Keras step's variable retrace: the optimizers that own the variables lifted, when found.
    optimizers: tuple[OptimizerBuild, ...] = ()
    # torch: for a frame Dynamo compiled after a graph break, where the break is (the frame runs
    # the rest of `function`); and the graph breaks of the compile, each torch's kind and its site.
    resumed_after: Site | None = None
    graph_breaks: tuple[tuple[str, Site], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The codes and what their words name; its changes are the event's (`from_json` takes them)."""
        keras_call, relaxed_to = self.keras_call, self.relaxed_to
        return {"kind": self.kind.value, "reason": self.reason.value,
                "hint": None if self.hint is None else self.hint.value, "function": self.function,
                "backend": str(self.backend), "argument": self.argument,
                "keras_call": None if keras_call is None else keras_call.to_json(),
                "control_flow": self.control_flow, "objects": self.objects, "created": list(self.created),
                "data": self.data, "relaxed_to": None if relaxed_to is None else relaxed_to.to_json(),
                "of_function": self.of_function, "xla_functions": list(self.xla_functions),
                "body_of": self.body_of, "optimizers": [build.to_json() for build in self.optimizers],
                "resumed_after": None if self.resumed_after is None else self.resumed_after.to_json(),
                "graph_breaks": [[what, site.to_json()] for what, site in self.graph_breaks]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], changes: tuple[Change, ...] = ()) -> Verdict:
        """The verdict `to_json` wrote, with `changes` (the event's)."""
        keras_call, relaxed_to, hint = data.get("keras_call"), data.get("relaxed_to"), data.get("hint")
        return cls(TraceKind(data["kind"]), changes, Reason(data["reason"]),
                   None if hint is None else Hint(hint),
                   data.get("function"), Backend(data.get("backend", "tensorflow")), data.get("argument"),
                   None if keras_call is None else KerasCall.from_json(keras_call), data.get("control_flow"),
                   data.get("objects"), tuple(data.get("created", ())), data.get("data"),
                   None if relaxed_to is None else spec_from_json(relaxed_to),
                   bool(data.get("of_function", False)), tuple(data.get("xla_functions", ())),
                   data.get("body_of"),
                   tuple(OptimizerBuild.from_json(build) for build in data.get("optimizers", ())),
                   None if data.get("resumed_after") is None else Site.from_json(data["resumed_after"]),
                   tuple((str(what), Site.from_json(site)) for what, site in data.get("graph_breaks", ())))


class EarlierTrace(NamedTuple):
    """What classification remembers of one earlier trace of a function.

    A named tuple: the recorder makes one per trace, and a frozen dataclass costs
    a call per field more.
    """

    signature: Signature
    in_creation_phase: bool  # Traced by tf.function's first, variable-creating configuration.
    # Identifies the trace the run was part of (compared with `==`); None when unknown.
    trace: Any = None
    created_variables: bool | None = None  # Whether the layer's run created variables; None: unknown.


@dataclasses.dataclass(frozen=True)
class EnclosingTrace:
    """What the whole-function trace a layer run is part of differs in (`FunctionRecords.preview`).

    `kind` and `reason` are the function trace's; `objects`, how many function
    objects its code has had.
    """

    kind: TraceKind
    reason: Reason
    changes: tuple[Change, ...]
    objects: int = 1
    same_model: bool | None = None  # For a Keras step's new object: the same model as before?


__all__ = ["EarlierTrace", "EnclosingTrace", "Hint", "Reason", "RunContext", "SymbolicPass", "Verdict"]
