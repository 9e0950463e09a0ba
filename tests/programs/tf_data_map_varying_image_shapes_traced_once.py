"""A `tf.data` `map` over images of varying sizes: the map function is traced once, and so is the step.

Source:
  https://github.com/tensorflow/tensorflow/issues/47687
  https://www.tensorflow.org/guide/data_performance

In tensorflow#47687 the reporter's `tf.data` pipeline over images of different
sizes takes minutes before the first batch; an answer in the thread says "The
shapes of the images are not the same ... This causes retracing of all the
mapping functions", and the reporter asks how to avoid it. What TensorFlow does:
`Dataset.map` traces its function once, when `map` is called, against the
dataset's `element_spec` (here `(None, None, 3)`), never per element; the time
is the per-element work (decoding, resizing), which the `tf.data` performance
guide addresses (`num_parallel_calls`, `cache`, `prefetch`). This program maps a
resize over 24 images of random sizes from a generator, batches them, and trains
a `tf.function` step for two epochs. Measured on TF 2.21: `preprocess` runs its
Python body once (with `(None, None, 3)`), `train_step` is traced once
(`experimental_get_tracing_count()` 1; the resized batches have one shape).
A negative control: nothing retraces although the thread said so.

Expected:
  function: preprocess
  cause: none-expected
  changed: "(nothing)"
  fix: none for tracing (map traces once with the element spec); parallelise/cache/prefetch the per-element work
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  kinds: ["trace"]
  set: heldout3
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

IMG = 64
map_traces = []
rng = np.random.default_rng(0)
shapes = [(int(h), int(w)) for h, w in rng.integers(40, 120, size=(24, 2))]


def images():
    for h, w in shapes:
        yield rng.random((h, w, 3), dtype=np.float32), np.int32(h % 2)


def preprocess(image, label):
    map_traces.append(image.shape)
    image = tf.image.resize(image, (IMG, IMG))
    return image / 255.0, label


dataset = tf.data.Dataset.from_generator(
    images,
    output_signature=(tf.TensorSpec((None, None, 3), tf.float32), tf.TensorSpec((), tf.int32)),
)
dataset = dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(8)

kernel = tf.Variable(tf.zeros((IMG * IMG * 3, 2)))
optimizer = tf.keras.optimizers.SGD(0.01)
optimizer.build([kernel])


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        logits = tf.reshape(images, (-1, IMG * IMG * 3)) @ kernel
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    optimizer.apply_gradients([(tape.gradient(loss, kernel), kernel)])
    return loss


for epoch in range(2):
    for batch_images, batch_labels in dataset:
        loss = train_step(batch_images, batch_labels)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
print("preprocess traced", len(map_traces), "time(s):", map_traces)
print("train_step tracing count:", train_step.experimental_get_tracing_count())
