"""A Keras model that creates a `tf.Variable` inside `call`, run under `tf.function`.

Sources:
  https://github.com/tensorflow/tensorflow/issues/105654
  https://github.com/tensorflow/tensorflow/issues/26812

`TestModel.call` builds a fresh `tf.Variable` on every call (in #105654 via
embedding feature columns created inside `call`). Eagerly this works; under
`@tf.function` the first trace creates the variable, TensorFlow lifts it and
traces again, the second trace creates another one, and the call fails:
"ValueError: tf.function only supports singleton tf.Variables created on the
first call. Make sure the tf.Variable is only created once or created outside
tf.function." The answer (TF guide, #26812): create the variable once, in
`__init__` or `build()`, and only use it in `call`.

Expected:
  function: compiled_forward
  cause: variable-creation
  changed: "(none - variables created in call)"
  fix: create the variable once in __init__/build(), not in call
  fix_keywords: ["build", "__init__", "once"]
  raises: ValueError
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras


class TestModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(4)

    def call(self, inputs):
        embedding_table = tf.Variable(tf.random.normal([3, 8]), name="embedding_weights")
        ids = tf.cast(inputs["feature_0"], tf.int32)
        embedded = tf.nn.embedding_lookup(embedding_table, ids)
        return self.dense(embedded)


model = TestModel()
inputs = {"feature_0": tf.constant(np.array([0, 1, 2, 1]))}
print("eager:", model(inputs).shape)


@tf.function(jit_compile=True)
def compiled_forward(x):
    return model(x)


print(compiled_forward(inputs).shape)
