"""A jitted `model.apply` run on videos of different lengths: one trace and compilation per frame count.

Source:
  https://github.com/google-deepmind/tapnet/issues/44
  https://docs.jax.dev/en/latest/faq.html#jit-changes-the-behavior-of-my-function

The reporter runs TAPIR inference with `model_apply = jax.jit(model.apply)` once,
then `inference(frames, query_points)` per video in a loop, and asks where the
"recompilation" comes from, given that "the main factor for slow inference is
change in input tensor size causing recompilation" (from the previous threads)
and `jax.jit` is applied only once. The answer, JAX's documented behaviour: the
jitted function is traced and compiled once per input shape (and dtype); the
single `jax.jit` keeps one cache, and each video with a new frame count is a new
key in it, so it traces and compiles again; videos of a length seen before hit.
The fix: give the inputs a few fixed shapes (pad or chunk the frames to a fixed
count, resize to one resolution). This program stands in for haiku's
`transform_with_state` with a plain apply function over `(frames, query_points)`
and five videos of 8, 12, 8, 16 and 12 frames. Measured on jax 0.10.2: 3 traces
of `apply` (8, 12, 16 frames); `jax_explain_cache_misses`: "never seen function",
then twice "different input types: at frames, now f32[12,32,32,3] and before
f32[8,32,32,3]". There is no `None` dimension on JAX (no `input_signature`).

Expected:
  function: apply
  cause: shape-nonbatch
  changed: "frames: dim 0"
  fix: pad or chunk the frames to a few fixed counts (and resize to one resolution), so a few shapes cover every video
  fix_keywords: ["pad", "bucket"]
  forbidden_keywords: ["input_signature", "reduce_retracing", "tf.function"]
  traces: 3
  backend: jax
  kinds: ["trace", "retrace", "retrace"]
  changes: [{"argument": "frames", "aspect": "dim", "axis": 0}, "*"]
  set: heldout3
"""
import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
params = {"w": jnp.asarray(rng.standard_normal((3, 16)), jnp.float32),
          "v": jnp.asarray(rng.standard_normal((16, 2)), jnp.float32)}


def apply(params, state, rng_key, frames, query_points):
    features = jnp.tanh(frames @ params["w"])  # [T, H, W, 16]
    pooled = features.mean(axis=(1, 2))  # [T, 16]
    tracks = pooled @ params["v"] + query_points[:, None, 1:].mean()  # [T, 2]
    visibles = jnp.ones(tracks.shape[0], bool)
    return (tracks, visibles), state


model_apply = jax.jit(apply)


def inference(frames, query_points):
    rng_key = jax.random.PRNGKey(42)
    (tracks, visibles), _ = model_apply(params, {}, rng_key, frames, query_points)
    return tracks, visibles


videos = [rng.random((count, 32, 32, 3), dtype=np.float32) for count in (8, 12, 8, 16, 12)]
query_points = jnp.zeros((4, 3), jnp.float32)
for video in videos:
    tracks, visibles = inference(jnp.asarray(video), query_points)
print(tracks.shape)
