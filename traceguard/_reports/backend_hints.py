"""The hints each backend words its own way, and those that name the argument they are about.

Tables of text only, keyed by `Hint` and by the backend's name (`Backend` members are equal
to it): `messages.hint_text` picks one for a verdict and fills in `{argument}` and
`{function}`. A new backend adds its words here, beside the others.
"""

from __future__ import annotations

from traceguard._core.verdicts import Hint

# Hints worded per backend, with the argument they name.
BY_BACKEND: dict[Hint, dict[str, str]] = {
    Hint.PREDICT_BATCH_SIZE: {
        "tensorflow": "A new batch size in `predict` costs a trace (Keras then relaxes the batch dimension "
                      "to None, so later sizes reuse the graph). To trace once, predict in batches of one "
                      "size, or call the model in your own `tf.function` with an `input_signature` whose "
                      "batch dimension is None.",
        "jax": "A new batch size in `predict` costs a trace and a compilation of the predict step: on JAX "
               "every batch size has its own (there is no None dimension). Pad "
               "the inputs to one batch size (and drop the padded rows from the predictions), or call "
               "the model on batches of one size.",
    },
    Hint.REQUESTED_TRACE: {
        "tensorflow": "Expected: `get_concrete_function` asked for this trace, one per signature it is "
                      "given; a call whose arguments fit a traced signature reuses its graph. Nothing "
                      "to fix.",
        "jax": "Expected: `.lower()` or `.trace()` asked for this trace; a call with the same "
               "abstract arguments reuses it. Nothing to fix.",
    },
    Hint.CREATE_FUNCTION_ONCE: {
        "tensorflow": "Create the tf.function once, outside the loop or the function called per step, "
                      "and reuse it.",
        "jax": "Apply `jax.jit` once, outside the loop or the function called per step, to a function "
               "made once (not a `lambda` or a bound method `obj.f` taken per call), and reuse the "
               "jitted function: its cache belongs to the function object.",
    },
    Hint.LIBRARY_FUNCTION_PER_CALL: {
        "tensorflow": "`{function}` is the library's own tf.function, made anew each time its API is "
                      "called eagerly (as `tf.vectorized_map` does), so every call traces it again: "
                      "call that API inside one tf.function of yours, defined once outside the loop, "
                      "where the library's function is traced once, as part of it.",
        "jax": "`{function}` is the library's own jitted function, made anew each time its API is "
               "called: call that API inside one function of yours, jitted once outside the loop.",
    },
    Hint.KEEP_OUTSIDE_VALUES_FIXED: {
        "tensorflow": "Create the tf.function once and reuse it; pass values that vary as tensors, not "
                      "Python objects.",
        "jax": "Jit the function once and reuse it; pass values that vary as arrays, not Python objects.",
    },
    Hint.OBJECT_IDENTITY: {
        "tensorflow": "`{argument}` is a Python object (a function, a bound method, a model): "
                      "tf.function keys it by identity, so each new object costs a trace. Pass the same "
                      "object every call (define the function once, or bind the method once: "
                      "`step = model.step` before the loop), or call it from the tf.function's body "
                      "instead of passing it.",
        "jax": "`{argument}` is a Python object keyed by identity: pass the same object every call.",
    },
    Hint.TRACING_CONTEXT: {
        "tensorflow": "`{argument}` is part of tf.function's cache key, with the rest of the context it is "
                      "called in (the graph it is called from, the device scope of a graph being built, "
                      "whether a `tf.distribute` strategy is in its cross-replica context, a SavedModel's "
                      "variable policy, an XLA context): a call from another context traces again. Call it "
                      "from one context every time: all calls inside `strategy.scope()` (or `strategy.run`) "
                      "or all outside.",
        "jax": "`{argument}` is part of `jax.jit`'s cache key, with the rest of JAX's tracing context "
               "(`jax.config` options and context managers such as `jax.default_matmul_precision`, "
               "`jax.enable_x64` or a mesh): a call under another value traces and compiles again. Set it "
               "once for the whole program (`jax.config.update`), or make every call of this function "
               "under the same value.",
    },
}
_WEAK_TYPE = ("`{argument}` is a Python scalar in one call and a typed array in another (often the "
              "value a step returned): JAX traces a Python number as a *weakly typed* array, and weak "
              "and typed are different keys. Pass a typed scalar every time, e.g. `np.float32(...)` or "
              "`jnp.asarray(..., dtype=jnp.float32)` from the start.")
_STATIC_VALUE = ("`{argument}` is a static argument (`static_argnums`/`static_argnames`): JAX keys it by "
                 "hash and `==`, so each new value traces and compiles again. Keep it to a few values, "
                 "or, if the body needs it only as a number (not for shapes or Python control flow), "
                 "drop it from the static arguments and pass it as an array.")
_STATIC_IDENTITY = ("`{argument}` is a static argument whose type defines no `__eq__`: JAX compares it "
                    "by identity, so every new object is a new key (and a mutated one can hit a stale "
                    "trace). Give its class `__eq__` and `__hash__` over the fields the body reads, or "
                    "create the object once and reuse it.")
# TensorFlow keys a call made from a graph being built under a device scope, or in a replica of a
# `tf.distribute` strategy that retraces per device (MirroredStrategy's
# `_retrace_functions_for_each_device`), by its device functions (function_context.py).
TF_DEVICE_CONTEXT = ("`device_functions` (the device the call is placed on) is part of tf.function's "
                      "cache key when it is called from a graph being built under a device scope, or in "
                      "a replica of a `tf.distribute` strategy, which traces a function once per replica "
                      "device by design: one trace per device is expected. To trace it once, call it "
                      "outside the device scope (or outside `strategy.run`), with the inputs of all "
                      "devices.")
_STATIC_FIELD = ("`{argument}` is a static field of a pytree node (its auxiliary data: a `meta_fields` or "
                 "`pytree_node=False` field): JAX keys it by `==`, so each new value traces and compiles "
                 "again. Keep it to a few values, or, if the body needs it only as a number (not for "
                 "shapes or Python control flow), make it a data field holding an array.")
_CALL_STRUCTURE = ("`jax.jit` keys a call's positional and keyword arguments apart: `{argument}` passed "
                   "positionally at one call and by keyword at another traces and compiles again for the "
                   "same values. Pass it the same way at every call.")
_ONE_SHARDING = ("`{argument}` came with another sharding: JAX keys each trace by the sharding an array's "
                 "abstract value carries (its mesh, the mesh's axis types and its `PartitionSpec`), so each "
                 "new one traces and compiles again. Put it on one sharding before the calls "
                 "(`jax.device_put(x, NamedSharding(mesh, spec))` with the same mesh and spec every time).")
PYTHON_VALUE = {
    "tensorflow": ("Each new Python value of `{argument}` is a new signature: pass it as a tensor "
                   "(e.g. `tf.constant(...)`) so the graph takes it as an input, or keep it fixed."),
    "jax": ("Each new Python value of `{argument}` is a new signature: pass it as an array "
            "(e.g. `jnp.asarray(...)`) so the trace takes it as an input, or keep it fixed."),
}
FIXED_STRUCTURE = {
    "tensorflow": ("Keep the structure of the arguments fixed between calls, or use an "
                   "`input_signature`; each distinct structure costs a trace."),
    "jax": ("Keep the shapes, dtypes and structure of the arguments fixed between calls; "
            "each distinct combination costs a trace."),
}
# Hints that name the argument they are about, on whichever backend keys it so.
BY_ARGUMENT = {Hint.WEAK_TYPE: _WEAK_TYPE, Hint.STATIC_VALUE: _STATIC_VALUE,
               Hint.STATIC_IDENTITY: _STATIC_IDENTITY, Hint.STATIC_FIELD: _STATIC_FIELD,
               Hint.CALL_STRUCTURE: _CALL_STRUCTURE, Hint.ONE_SHARDING: _ONE_SHARDING}
