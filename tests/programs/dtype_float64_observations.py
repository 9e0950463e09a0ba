"""Observations that arrive as float64 NumPy arrays on some steps and float32 tensors on others.

Sources:
  https://github.com/NatLabRockies/graph-env/issues/24
  https://www.tensorflow.org/guide/function (tracing rules: a tensor argument's dtype is part of the trace key)

In graph-env the state's observation function returns tensors, but the
environment wrapper re-casts them to NumPy arrays (float64 by default), while
other code paths hand the policy float32 tensors; the policy's `tf.function`
printed "5 out of the last 5 calls to <function _> triggered tf.function
retracing", and the maintainer suspected the NumPy re-cast. A NumPy array is
traced as a tensor of its own dtype, so the function has one graph for
float64 and one for float32 (and the Keras layer casts the float64 input back
to float32 inside the graph). Fix: convert observations once, with a fixed
dtype (`np.asarray(obs, np.float32)` / `tf.convert_to_tensor(obs,
tf.float32)`), or give the function an `input_signature` with `tf.float32`.

Expected:
  function: compute_action
  cause: dtype
  changed: "obs: dtype"
  fix: convert observations to float32 once (np.float32 / tf.convert_to_tensor(..., tf.float32)) or an input_signature with tf.float32
  fix_keywords: ["float32", "dtype", "input_signature"]
  forbidden_keywords: ["drop_remainder"]
  traces: 2
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

policy_model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])


@tf.function
def compute_action(obs):
    logits = policy_model(obs)
    return tf.argmax(logits, axis=-1)


class GraphEnv:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def make_observation(self):
        return tf.convert_to_tensor(self.rng.normal(size=(1, 6)), dtype=tf.float32)

    def step(self):
        # the wrapper stacks observations into a NumPy array, which is float64
        return np.stack([self.make_observation().numpy()[0].astype(np.float64)])

    def reset(self):
        return self.make_observation()


env = GraphEnv()
for episode in range(3):
    obs = env.reset()
    for t in range(4):
        compute_action(obs)
        obs = env.step()

print("compute_action tracing count:", compute_action.experimental_get_tracing_count())
