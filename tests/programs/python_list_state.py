"""A Python list observation passed to a `tf.function` policy retraces it for every new state.

Sources:
  https://github.com/keiohta/tf2rl/issues/99
  https://github.com/keiohta/tf2rl/pull/100

tf2rl's agents call a `@tf.function` `_get_action_body(state, test, max_action)`
from their rollout loop. The unit tests' environments hand back observations
as plain Python objects; TensorFlow 2.3 changed how Python values enter the
trace key, and "6 out of the last 11 calls to <function VPG._get_action_body>
triggered tf.function retracing" appeared. The fix in PR #100: make sure the
arguments of the graph function are `tf.Tensor`s (`tf.constant(...)`), not
pure Python objects.

Expected:
  function: _get_action_body
  cause: python-value-arg
  changed: "state: value"
  fix: convert the state to a tensor (tf.constant / np.asarray) before calling
  fix_keywords: ["tensor", "tf.constant"]
  traces: 8
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras


class VPG:
    def __init__(self, state_dim=3, action_dim=1, max_action=1.0):
        self.actor = keras.Sequential(
            [keras.Input((state_dim,)), keras.layers.Dense(16, activation="relu"),
             keras.layers.Dense(action_dim, activation="tanh")]
        )
        self.max_action = max_action

    def get_action(self, state, test=False):
        return self._get_action_body([state], test, self.max_action)

    @tf.function
    def _get_action_body(self, state, test, max_action):
        action = self.actor(tf.convert_to_tensor(state, tf.float32)) * max_action
        if not test:
            action += tf.random.normal(tf.shape(action), stddev=0.1)
        return action


class ToyEnv:
    """Returns observations as Python lists of floats, as many gym wrappers did."""

    def __init__(self):
        self.t = 0

    def reset(self):
        self.t = 0
        return [0.0, 0.5, 1.0]

    def step(self, action):
        self.t += 1
        return [0.1 * self.t, 0.5, 1.0 - 0.1 * self.t], float(-abs(action)), self.t >= 8


policy = VPG()
env = ToyEnv()
obs, done = env.reset(), False
while not done:
    act = policy.get_action(obs)
    obs, reward, done = env.step(float(act[0][0]))

print("_get_action_body tracing count:", policy._get_action_body.experimental_get_tracing_count())
