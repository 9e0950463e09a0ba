"""A layer called under `tf.function` with a Python list whose number of tensors varies.

Source:
  https://github.com/tensorflow/tensorflow/issues/45984

An adaptive-pooling layer reduces each tensor of its input list; "the inputs
to `call` may be of variable size, therefore requiring a graph retrace for
every call" (Susmit-A). The TensorFlow maintainer's answer (edloper): the
list's length is part of the trace key, so "`call` will need to be retraced
for each different number of input tensors"; combine the tensors into a single
`tf.RaggedTensor` input (shape `[N, None]`) instead of a list of `N` tensors
(and use `reduce_retracing` if only the shapes vary).

Expected:
  function: pool
  cause: structure
  changed: "segments: list length"
  fix: pass one tf.RaggedTensor ([N, None]) instead of a Python list of N tensors
  fix_keywords: ["RaggedTensor", "ragged"]
  forbidden_keywords: ["drop_remainder"]
  traces: 4
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras


class AdaptivePooling1D(keras.layers.Layer):
    """Reduces every segment of the input list to a fixed number of bins."""

    def __init__(self, reduce_function=tf.reduce_mean, output_size=4, **kwargs):
        super().__init__(**kwargs)
        self.reduce_function = reduce_function
        self.output_size = output_size

    def call(self, segments):
        pooled = []
        for segment in segments:
            bins = tf.split(segment[: (tf.shape(segment)[0] // self.output_size) * self.output_size],
                            self.output_size)
            pooled.append(tf.stack([self.reduce_function(b) for b in bins]))
        return tf.stack(pooled)


pooling = AdaptivePooling1D()


@tf.function
def pool(segments):
    return pooling(segments)


rng = np.random.default_rng(0)
for count in (3, 5, 3, 2, 7, 5):
    segments = [tf.constant(rng.normal(size=(16,)).astype("float32")) for _ in range(count)]
    pool(segments)

print("pool tracing count:", pool.experimental_get_tracing_count())
