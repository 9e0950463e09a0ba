"""A `tf.function` method reading `self.weights` after it changes shape: no retrace, a stale graph.

Source:
  https://github.com/tensorflow/tensorflow/issues/44980

The reporter's `Network.call` sets `self.weights` to a (4, 5) tensor, calls the
`tf.function` method `encoder_graph(x)`, sets `self.weights` to a (2, 3) tensor
and calls it again with the same `x`: eager and graph mode disagree. The
second call does not retrace: `tf.function` keys `self` by identity (the same
object) and `x` by its spec (unchanged); what the body reads from `self` was
captured when it was traced (the TensorFlow guide: "tf.function ... captures
Python values and objects at trace time"). The fix is to pass the tensor as an
argument (it then joins the trace key) or to use a `tf.Variable`. Measured on
TF 2.21: `encoder_graph` traces once; the second call returns the (4, 5) result.
A negative control for retracing: the report must not claim a retrace.

Expected:
  function: encoder_graph | Network.encoder_graph
  cause: none-expected
  changed: "(nothing)"
  fix: none for tracing (nothing retraced); pass weights as an argument or use a tf.Variable so the graph sees the new value
  fix_keywords: []
  forbidden_keywords: ["reduce_retracing", "drop_remainder", "jax.jit"]
  traces: 1
  backend: tensorflow
  kinds: ["trace"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf


class Network:
    def call(self, x):
        self.weights = tf.zeros((4, 5), dtype=tf.double)
        self.encoder_graph(x)
        self.weights = tf.zeros((2, 3), dtype=tf.double)

        return (self.encoder_graph(x).shape == self.weights.shape)

    @tf.function
    def encoder_graph(self, x):
        return self.weights + tf.cast(tf.reduce_sum(x), tf.double)


net = Network()
print("same shape as the new weights:", net.call(tf.constant([1.0, 2.0])))
print("encoder_graph tracing count:", net.encoder_graph.experimental_get_tracing_count())
