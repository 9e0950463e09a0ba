"""A BERT-style custom train step on dict inputs padded per batch to that batch's longest sequence.

Source:
  https://github.com/tensorflow/models/issues/7825

SQuAD fine-tuning feeds `@tf.function` training steps a tuple of dicts
(`input_ids`, `input_mask`, `segment_ids`). With a fixed batch size and fixed
sequence length (384) nothing retraces; with "fixed batch size and dynamic
seq len" (padding on the fly, to save computation) "tracing will come into
picture, as we have varying seq len for each batch". The question and its
answer: give the `tf.function` an `input_signature` of `TensorSpec([None,
None])` per dict entry (or relax shapes), so one graph serves all lengths.

Expected:
  function: train_step
  cause: shape-nonbatch
  changed: "inputs['input_ids']: dim 1"
  fix: input_signature with TensorSpec([None, None]) for each dict entry (or reduce_retracing=True), or bucket lengths
  fix_keywords: ["input_signature", "None", "reduce_retracing", "bucket"]
  forbidden_keywords: ["drop_remainder"]
  traces: 5
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

vocab, hidden = 50, 16
input_ids = keras.Input((None,), dtype="int64", name="input_ids")
input_mask = keras.Input((None,), dtype="int64", name="input_mask")
segment_ids = keras.Input((None,), dtype="int64", name="segment_ids")
embedded = keras.layers.Embedding(vocab, hidden)(input_ids) + keras.layers.Embedding(2, hidden)(segment_ids)
embedded = embedded * keras.ops.expand_dims(keras.ops.cast(input_mask, "float32"), -1)
logits = keras.layers.Dense(2)(embedded)
model = keras.Model({"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}, logits)
optimizer = keras.optimizers.SGD(0.01)


@tf.function
def train_step(inputs, labels):
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        start_logits, end_logits = tf.unstack(logits, axis=-1)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels["start_positions"], start_logits)
            + tf.nn.sparse_softmax_cross_entropy_with_logits(labels["end_positions"], end_logits)
        )
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


rng = np.random.default_rng(0)


def examples():
    for index in range(48):
        n = 8 + index  # examples grow in length, so every padded batch has a new longest sequence
        yield (
            {"input_ids": rng.integers(1, vocab, n), "input_mask": np.ones(n, "int64"), "segment_ids": np.zeros(n, "int64")},
            {"start_positions": int(rng.integers(0, n)), "end_positions": int(rng.integers(0, n))},
        )


signature = (
    {k: tf.TensorSpec([None], tf.int64) for k in ("input_ids", "input_mask", "segment_ids")},
    {k: tf.TensorSpec([], tf.int64) for k in ("start_positions", "end_positions")},
)
dataset = tf.data.Dataset.from_generator(examples, output_signature=signature).padded_batch(8)  # pad per batch

for inputs, labels in dataset.take(5):
    train_step(inputs, labels)

print("train_step tracing count:", train_step.experimental_get_tracing_count())
