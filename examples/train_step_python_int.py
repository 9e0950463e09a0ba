"""A `tf.function` train step that takes the step number as a Python int: it traces at every call.

Run: python -m traceguard run examples/train_step_python_int.py
"""

import tensorflow as tf


@tf.function
def train_step(x, step):
    return tf.reduce_sum(x) * step


for step in range(3):
    train_step(tf.ones((8, 4)), step)
