"""The same Keras model re-`compile()`d before each `fit` (TensorFlow): a new train step per fit.

Source:
  https://github.com/tensorflow/tensorflow/issues/25073

The reporter trains one model in a loop and calls `model.compile(...)` again
before every `fit`; "If the re-compile is commented out, fit() time remains
constant." On Keras 3, `compile()` drops the model's compiled step
(`train_function = None`), so the next `fit` makes a new `tf.function` of the
same Python function and traces it again: one new step function object per
`compile()`, each traced once (plus nothing else: SGD has no slots and the model
is built). Compile once, outside the loop (to change the learning rate, assign
`model.optimizer.learning_rate`). Measured on TF 2.21 + Keras 3.15.1:
`one_step_on_data` traced 5 times for 5 iterations (`multi_step_on_iterator` 5
times too), each a first trace of a new function object.

Expected:
  function: one_step_on_data | train_function
  cause: new-function-object
  changed: "function object: compile() before each fit drops the train function"
  fix: call compile() once, before the loop; change the learning rate with model.optimizer.learning_rate
  fix_keywords: ["compile"]
  forbidden_keywords: ["drop_remainder", "reduce_retracing=True"]
  traces: 5
  kinds: ["trace", "trace", "trace", "trace", "trace"]
  backend: tensorflow
  changes: [{"aspect": "function_object"}, "*"]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
from keras.layers import Activation, Dense
from keras.models import Sequential

input1 = np.array([[0, 1, 1, 1, 0, 0, 0, 1, 1, 1]], dtype="float32")
dOutput1 = np.array([[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]], dtype="float32")

model = Sequential()
initializer = keras.initializers.TruncatedNormal(mean=0.0, stddev=0.05, seed=1)
model.add(keras.Input((10,)))
model.add(Dense(25, kernel_initializer=initializer, bias_initializer="zeros"))
model.add(Activation("relu"))
model.add(Dense(10, kernel_initializer=initializer, bias_initializer="zeros"))
model.add(Activation("softmax"))

for i in range(5):
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(learning_rate=0.1))
    model.fit(input1, dOutput1, epochs=3, verbose=0)
print("done")
