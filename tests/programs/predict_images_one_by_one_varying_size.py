"""`predict` called image by image on images of different sizes: the predict function retraces, then relaxes.

Source:
  https://github.com/faustomorales/keras-ocr/issues/63

keras-ocr's pipeline called one image at a time printed TensorFlow's "triggered
tf.function retracing" warnings; the maintainer's answer: each image has its own
size, so each call gives the predict function a new input shape; batching the
images (keras-ocr pads them to a common size in `recognize(images)`) removes the
warnings, and the reporter confirmed it ("the code using batching does eliminate
the warnings"), then measured one-by-one against batched. This program is that
measurement on a small fully convolutional Keras 3 model (`Input((None, None, 3))`)
and six images of different sizes. Measured on TF 2.21 + Keras 3.15.1:
`one_step_on_data_distributed` traced 3 times: once for the first image
(`1 x 480 x 640 x 3`), once more for the second size, after which Keras's
`reduce_retracing` relaxes height and width to `None` (no trace for the other
four images), and once for the padded batch of six (batch dimension 1 -> 6,
relaxed too). The fix: pad the images to a common size and predict them as one
batch (or resize them); one retrace per new size is what is left otherwise.

Expected:
  function: one_step_on_data_distributed | predict_function
  cause: shape-nonbatch
  changed: "data | x: dim 1"
  fix: pad (or resize) the images to a common size and predict them as one batch
  fix_keywords: ["pad", "resize", "bucket"]
  forbidden_keywords: ["drop_remainder"]
  traces: 3
  kinds: ["trace", "retrace", "retrace"]
  changes: [{"argument": "data | x", "aspect": "dim", "axis": 1}, {"argument": "data | x", "aspect": "dim", "axis": 0}]
  set: heldout3
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import time

import keras
import numpy as np

inputs = keras.Input((None, None, 3))
x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
x = keras.layers.GlobalAveragePooling2D()(x)
outputs = keras.layers.Dense(4)(x)
model = keras.Model(inputs, outputs)

rng = np.random.default_rng(0)
images = [rng.random((h, w, 3), dtype=np.float32) for h, w in
          [(480, 640), (300, 400), (512, 512), (240, 320), (600, 800), (360, 480)]]


def one_by_one():
    return [model.predict(image[np.newaxis], verbose=0) for image in images]


def batch():
    height = max(image.shape[0] for image in images)
    width = max(image.shape[1] for image in images)
    padded = np.zeros((len(images), height, width, 3), np.float32)
    for i, image in enumerate(images):
        padded[i, : image.shape[0], : image.shape[1]] = image
    return model.predict(padded, verbose=0)


for f in (one_by_one, batch):
    start = time.time()
    f()
    print(f"{f.__name__.ljust(10)}: {time.time() - start:.2f} s")
