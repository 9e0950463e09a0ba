"""`tf.vectorized_map` called eagerly in a Python loop over batches: a new traced function per call.

Sources:
  https://github.com/tensorflow/tensorflow/issues/43710
  https://github.com/keras-team/keras-cv/issues/241
  https://github.com/tensorflow/tensorflow/pull/39711

To bound memory, the reporter of tensorflow#43710 split a forward-mode Jacobian
computation into batches and called `tf.vectorized_map(f, batch)` once per batch
from a Python loop, with arguments of the same shape and dtype every time; TF
still printed "5 out of the last 5 calls to <function pfor.<locals>.f> triggered
tf.function retracing" (keras-cv#241 hit the same warning from an image layer that
calls `vectorized_map` eagerly). The TensorFlow maintainer's explanation (allenlavoie,
in tensorflow#39711, of the same `vectorized_map`-over-`ForwardAccumulator` code):
every eager call "creates a new def_function.function object, which will start with
no traces and have to build one the first time it's called. That's what
vectorized_map was doing itself": `pfor` wraps its loop body in a fresh
`tf.function` on each eager call. Nothing about the arguments changed. The fix is
to call `vectorized_map` inside one `tf.function` defined once outside the loop
(then `pfor` runs in that graph and the outer function is traced once). This is the
reporter's structure with smaller tensors. Measured on TF 2.21: `f` (`pfor`'s inner
function) is traced once per call, 6 traces for 6 batches.

Expected:
  function: f | pfor.<locals>.f
  cause: new-function-object
  changed: "(...)"
  fix: wrap the batched vectorized_map call in one tf.function defined once outside the loop
  fix_keywords: ["once", "outside"]
  forbidden_keywords: ["drop_remainder", "input_signature", "jax.jit"]
  traces: 6
  kinds: ["trace", "trace", "trace", "trace", "trace", "trace"]
  backend: tensorflow
  changes: [{"aspect": "function_object"}, "*"]
  note: pfor creates its tf.function with TensorFlow's internal def_function.function, which _trace_counts.py does not wrap (count mode sees 0); the 6 traces are what TensorFlow's own warning counts ("6 out of the last 6 calls to <function pfor.<locals>.f> triggered tf.function retracing")
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf


def _jvp(f, primals, tangents):
    with tf.autodiff.ForwardAccumulator(primals, tangents) as acc:
        primals_out = f(*primals)
    return primals_out, acc.jvp(primals_out, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def f(x, z, t):
    p = tf.concat([x, z, t], axis=-1)
    return tf.reduce_sum(tf.sin(p) * p, axis=-1)


def jvp_one(args):
    x, z, t = args
    return _jvp(f, (x, z, t), (tf.ones_like(x), tf.zeros_like(z), tf.zeros_like(t)))[1]


points = tf.random.stateless_normal([600, 3], seed=[1, 2], dtype=tf.float64)
batch_size = 100
results = []
for start in range(0, points.shape[0], batch_size):
    batch = points[start:start + batch_size]
    x, z, t = batch[:, 0:1], batch[:, 1:2], batch[:, 2:3]
    results.append(tf.vectorized_map(jvp_one, (x, z, t)))

print("jvp batches:", len(results), "shape", tuple(results[0].shape))
