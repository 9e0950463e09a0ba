"""Python `bool` flags passed to a `tf.function` loss retrace it for each combination.

Source:
  https://github.com/NatLabRockies/sup3r/pull/109

`Sup3rGan.calc_loss(hi_res_true, hi_res_gen, train_gen, train_disc)` was a
`@tf.function`; the GAN loop calls it with the Python booleans
`train_gen`/`train_disc` alternating, so every combination is its own trace
and TensorFlow warned "5 out of the last 18 calls to <function
Sup3rGan.calc_loss> triggered tf.function retracing". The maintainers' fix
(merged): `calc_loss` should not be a `tf.function`, since its behaviour
depends on those flags (the alternative: pass the flags as tensors). Here the
flags take three combinations (gen only, disc only, both).

Expected:
  function: calc_loss
  cause: python-value-arg
  changed: "train_gen: value"
  fix: do not tf.function calc_loss (its behaviour depends on Python flags), or pass the flags as tensors
  fix_keywords: ["tensor", "train_gen", "train_disc"]
  traces: 3
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras


class Sup3rGan:
    def __init__(self):
        self.generator = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(1, 3, padding="same")])
        self.discriminator = keras.Sequential(
            [keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(1)]
        )

    @tf.function
    def calc_loss(self, hi_res_true, hi_res_gen, train_gen=True, train_disc=False):
        loss_gen = tf.reduce_mean(tf.square(hi_res_true - hi_res_gen))
        disc_out_true = self.discriminator(hi_res_true)
        disc_out_gen = self.discriminator(hi_res_gen)
        loss_disc = tf.reduce_mean(disc_out_gen) - tf.reduce_mean(disc_out_true)
        if train_gen and not train_disc:
            loss = loss_gen
        elif train_disc and not train_gen:
            loss = loss_disc
        else:
            loss = loss_gen + loss_disc
        return loss, loss_gen, loss_disc

    def run_gradient_descent(self, low_res, hi_res_true, train_gen, train_disc):
        hi_res_gen = self.generator(low_res)
        return self.calc_loss(hi_res_true, hi_res_gen, train_gen=train_gen, train_disc=train_disc)


rng = np.random.default_rng(0)
model = Sup3rGan()
low_res = tf.constant(rng.normal(size=(4, 8, 8, 1)).astype("float32"))
hi_res = tf.constant(rng.normal(size=(4, 8, 8, 1)).astype("float32"))
for epoch in range(6):
    model.run_gradient_descent(low_res, hi_res, train_gen=True, train_disc=False)
    model.run_gradient_descent(low_res, hi_res, train_gen=False, train_disc=True)
    if epoch % 2:
        model.run_gradient_descent(low_res, hi_res, train_gen=True, train_disc=True)

print("calc_loss tracing count:", model.calc_loss.experimental_get_tracing_count())
