"""The words of a compilation without a trace: its `Reason` and the fixed shapes that avoid it.

`messages` hands these verdicts here (`Reason.XLA_COMPILE`, `Reason.RECOMPILE`, the
`XLA_*` hints), so that their wording changes here only.
"""

from __future__ import annotations

from traceguard._core.verdicts import Hint, Reason, Verdict

_NO_JIT = "or drop `jit_compile=True` from a function whose shapes must vary"


def compilation_reason(verdict: Verdict) -> str:
    """Why XLA (or JAX) compiled without a trace."""
    function = verdict.function
    if verdict.reason is Reason.RECOMPILE and verdict.changes:
        return (f"`jax.jit` `{function}` compiled again for a signature it had traced: its tracing cache "
                "hit, but JAX keys compiled executables by where the arguments are placed too: "
                f"{'; '.join(map(str, verdict.changes))}.")
    if verdict.reason is Reason.RECOMPILE:
        return (f"`jax.jit` `{function}` compiled again for a signature it had traced: its tracing cache "
                "hit, but no compiled executable matched, and the arguments' shapes, dtypes, devices, "
                "shardings and committedness are those of an earlier compilation: JAX's compilation "
                "cache no longer held it (`jax.clear_caches()`, or its size limit).")
    inner = [name for name in verdict.xla_functions if name != function]
    what = (f"XLA compiled `{'`, `'.join(inner)}` (`jit_compile=True`), which tf.function `{function}` "
            "runs," if inner else f"XLA compiled tf.function `{function}` (`jit_compile=True`)")
    changed = "; ".join(map(str, verdict.changes))
    return (f"{what} for new input shapes without a retrace: {changed}. TensorFlow "
            "reused the trace (its signature is relaxed), but XLA compiles once per concrete input "
            "shape.")


def compilation_hint(verdict: Verdict) -> str:
    """The fixed shapes that avoid the compilation."""
    hint = verdict.hint
    call = verdict.keras_call
    if hint is Hint.XLA_DROP_REMAINDER:
        return ("The last, partial batch of the dataset has a new shape, and XLA compiles the step again "
                "for it: batch with `dataset.batch(batch_size, drop_remainder=True)`, or compile the "
                "model with `jit_compile=False`.")
    if hint is Hint.XLA_BATCH_DIVIDES:
        samples, batch_size = (call.samples, call.batch_size or 32) if call is not None else (None, 32)
        method = f"`{call.method}`" if call is not None else "`fit`"
        facts = (f"{method} got {samples} samples in batches of {batch_size}: the last batch of "
                 f"{samples % batch_size} has a new shape" if samples and samples % batch_size
                 else f"A batch of {method} has a new shape")
        return (f"{facts}, and XLA compiles the step again for it although the trace is reused. Choose "
                "a `batch_size` that divides the number of samples, or trim `x` and `y` to a multiple "
                "of it (`n = len(x) // batch_size * batch_size`); or compile the model with "
                "`jit_compile=False`.")
    if hint is Hint.XLA_PREDICT_PAD:
        return ("Each new batch size in `predict` costs an XLA compilation of the step, although the "
                "trace is reused. Pad the inputs to a multiple of the batch size and drop the padded "
                "rows' predictions (dropping the last batch would lose predictions), predict with one "
                "batch size, or compile the model with `jit_compile=False`.")
    if hint is Hint.RECOMPILE_SAME_SIGNATURE:
        return ("Keep the arguments on one device with one sharding, and the function object the same "
                "between calls; a persistent compilation cache "
                "(`jax.config.update(\"jax_compilation_cache_dir\", ...)`) serves repeats across processes.")
    return ("Each new input shape costs an XLA compilation although the trace is reused: pad or bucket "
            f"the inputs to a few fixed shapes, {_NO_JIT}.")
