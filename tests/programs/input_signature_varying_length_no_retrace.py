"""A `tf.function` with a `[None, None, depth]` input signature fed ever new sequence lengths: one trace.

Source:
  https://github.com/tensorflow/tensorflow/issues/29075

The reporter (guillaumekln, OpenNMT-tf) ran a `tf.function` with an
`input_signature` of `tf.TensorSpec([None, None, depth])` on batches of sequences
whose batch size and length change every step (token-based batching), and saw
steps slow down on each unseen length, "as if new graphs were compiled internally
even though the function does not seem to be retraced". In the thread they
confirmed "the `tf.function` itself is not retraced"; the issue was triaged to the
runtime (`comp:runtime`: per-shape kernel and memory warm-up), not to tracing. With
an input signature whose batch and length dimensions are `None`, every call fits
the one concrete function. This is their reproduction, smaller. Measured on TF 2.21:
`compute` is traced once for 40 calls with 40 shapes. A negative control: a report
must not claim a retrace, nor suggest `reduce_retracing` or an input signature
(it has one).

Expected:
  function: compute
  cause: none-expected
  changed: "(nothing)"
  fix: none needed for tracing (the signature already has None batch and length dimensions)
  fix_keywords: []
  forbidden_keywords: ["drop_remainder", "reduce_retracing"]
  traces: 1
  backend: tensorflow
  kinds: ["trace"]
"""
import itertools
import os
import random

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

DEPTH = 64


def generate_token_based_shapes(num_tokens=2048):
    while True:
        length = random.randint(1, 100)
        batch_size = num_tokens // length
        yield (batch_size, length)


kernel = tf.Variable(tf.random.stateless_normal([DEPTH, DEPTH], seed=[0, 1]))


@tf.function(input_signature=(tf.TensorSpec([None, None, DEPTH], dtype=tf.float32),))
def compute(x):
    y = tf.einsum("btd,de->bte", x, kernel)
    return tf.reduce_sum(tf.nn.relu(y))


random.seed(0)
for batch_size, length in itertools.islice(generate_token_based_shapes(), 40):
    compute(tf.random.uniform([batch_size, length, DEPTH]))

print("compute concrete functions:", compute.experimental_get_tracing_count())
