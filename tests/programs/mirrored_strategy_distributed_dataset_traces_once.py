"""A `MirroredStrategy` custom loop over a distributed dataset: the step traces once, every epoch after reuses it.

Source:
  https://github.com/tensorflow/tensorflow/issues/34025
  https://www.tensorflow.org/tutorials/distribute/custom_training

In the thread on TensorFlow's "5 out of the last 5 calls ... triggered
tf.function retracing" warning, several users saw it only with multiple GPUs
and `MirroredStrategy`; one (ckyleda) "placed a print statement inside the
tf.function distributed training step and it appears to only be executed twice
- matching the number of GPUs", and called the message erroneous. This program
is the documented custom training loop of the tutorial (a `tf.function`
`distributed_train_step` that calls `strategy.run` on each batch of
`strategy.experimental_distribute_dataset`), on two logical CPU devices, four
epochs of four batches. What TensorFlow does: the step is traced once, its
per-replica `train_step` body runs once per replica inside that trace (the
"twice" of the comment), and each epoch's `iter()` over the distributed dataset
builds TensorFlow's own multi-device iterator functions with
`get_concrete_function`, which are library functions, not retraces of the
user's step. Measured on TF 2.21: `distributed_train_step.experimental_get_tracing_count()`
is 1 after 16 calls, and TensorFlow prints no retracing warning. A negative
control: a report must count one trace of `distributed_train_step`, no retrace,
and must not report TensorFlow's `tf.data` iterator functions as retracing
library functions.

Expected:
  function: distributed_train_step
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (one trace of the step; the per-epoch iterator functions are TensorFlow's tf.data functions, built per iterator by design)
  fix_keywords: []
  forbidden_keywords: ["vectorized_map"]
  traces: 1
  backend: tensorflow
  kinds: ["trace"]
"""
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

import keras  # noqa: E402

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
print("Number of devices:", strategy.num_replicas_in_sync)

GLOBAL_BATCH_SIZE = 16
EPOCHS = 4
features = tf.random.normal([64, 8], seed=1)
targets = tf.random.normal([64, 1], seed=2)
train_dataset = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(64).batch(GLOBAL_BATCH_SIZE)
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)

with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(learning_rate=0.01)
    loss_object = keras.losses.MeanSquaredError(reduction="none")


def compute_loss(labels, predictions):
    per_example_loss = loss_object(labels, predictions)
    return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


for epoch in range(EPOCHS):
    total_loss = 0.0
    num_batches = 0
    for x in train_dist_dataset:
        total_loss += distributed_train_step(x)
        num_batches += 1
    print(f"Epoch {epoch + 1}, Loss: {float(total_loss / num_batches):.4f}")
print("distributed_train_step traces:", distributed_train_step.experimental_get_tracing_count())
