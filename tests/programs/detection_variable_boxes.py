"""An object-detection train step given a list of ground-truth boxes whose count varies per image.

Sources:
  https://github.com/tensorflow/tensorflow/issues/34025 (comment by Leci37, 2024-01-13)
  https://github.com/keras-team/keras-cv/issues/886
  https://github.com/allanzelener/YAD2K/issues/49

The few-shot detection tutorial's `train_step_fn(image_tensors,
groundtruth_boxes_list, groundtruth_classes_list)` is a `@tf.function`. With
one box per image it traces once; with N boxes per image the shapes of the
list's tensors change from batch to batch and TensorFlow warns "5 of the last
5 calls to <function get_model_train_step_function.<locals>.train_step_fn>
triggered tf.function retracing" (Leci37: "tf.functions can only handle one
predefined input form, if the form changes ... it retraces"). The standard fix
(YAD2K#49's answer): zero-pad the boxes of every image to a fixed maximum
count (or give an `input_signature` with a `None` box dimension).

Expected:
  function: train_step_fn
  cause: shape-nonbatch
  changed: "groundtruth_boxes_list: dim 0 of an element"
  fix: pad every image's boxes to a fixed maximum count (or input_signature with a None box dimension)
  fix_keywords: ["pad", "None", "input_signature"]
  forbidden_keywords: ["drop_remainder"]
  traces: 5
  note: 7 batches, 5 distinct box-count combinations
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
import keras

num_classes = 3
backbone = keras.Sequential(
    [keras.Input((32, 32, 3)), keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
     keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(4 + num_classes)]
)
optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
optimizer.build(backbone.trainable_variables)


def get_model_train_step_function(model, optimizer, vars_to_fine_tune):
    @tf.function
    def train_step_fn(image_tensors, groundtruth_boxes_list, groundtruth_classes_list):
        with tf.GradientTape() as tape:
            outputs = model(tf.concat(image_tensors, axis=0), training=True)
            losses = []
            for i, (boxes, classes) in enumerate(zip(groundtruth_boxes_list, groundtruth_classes_list)):
                predicted_box = outputs[i, :4]
                box_loss = tf.reduce_min(tf.reduce_sum(tf.abs(boxes - predicted_box), axis=-1))
                class_probabilities = tf.nn.softmax(outputs[i, 4:])
                class_loss = -tf.reduce_mean(tf.reduce_sum(classes * tf.math.log(class_probabilities), axis=-1))
                losses.append(box_loss + class_loss)
            total_loss = tf.add_n(losses)
        gradients = tape.gradient(total_loss, vars_to_fine_tune)
        optimizer.apply_gradients(zip(gradients, vars_to_fine_tune))
        return total_loss

    return train_step_fn


train_step_fn = get_model_train_step_function(backbone, optimizer, backbone.trainable_variables)
rng = np.random.default_rng(0)
boxes_per_image = [[1, 2], [3, 1], [2, 2], [1, 2], [4, 1], [2, 3], [1, 2]]
for counts in boxes_per_image:
    image_tensors = [tf.constant(rng.uniform(size=(1, 32, 32, 3)).astype("float32")) for _ in counts]
    groundtruth_boxes_list = [tf.constant(rng.uniform(size=(n, 4)).astype("float32")) for n in counts]
    groundtruth_classes_list = [tf.one_hot(rng.integers(0, num_classes, n), num_classes) for n in counts]
    train_step_fn(image_tensors, groundtruth_boxes_list, groundtruth_classes_list)

print("train_step_fn tracing count:", train_step_fn.experimental_get_tracing_count())
