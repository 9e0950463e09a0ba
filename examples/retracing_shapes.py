import tensorflow as tf


@tf.function
def double(a):
    return a + a


@tf.function
def scale(x, n):
    return x * n


for length in (2, 3, 4, 5):
    double(tf.ones([length]))
for n in (1, 2, 3):
    scale(tf.ones([4]), n)
