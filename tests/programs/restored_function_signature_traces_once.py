"""A function restored from a SavedModel with a `[None, 4]` signature: one trace for every batch size.

Source:
  https://github.com/tensorflow/tensorflow/issues/39369
  https://github.com/tensorflow/tensorflow/issues/37858

The reporters (TF 2.1) saved a custom model with `tf.saved_model.save` and a
signature with `None` in the batch dimension; after `tf.saved_model.load` every
new batch size traced the restored function again, with TensorFlow's warning
"5 out of the last 5 calls to <function recreate_function.<locals>.restored_function_body>
triggered tf.function retracing" (#37858: "retracing even with input_signature").
TensorFlow's loader has since restored a saved `input_signature` with the
function (`function_deserialization.recreate_function`), so the restored
function is keyed by the signature, not by each call's shape. Measured on TF
2.21: the program's original `__call__` traces once when it is saved, and the
restored one (`recreate_function.<locals>.restored_function_body`) once for batch sizes 1, 2, 3, 5 and 8
(`loaded.__call__.experimental_get_tracing_count()` is 1; TensorFlow warns
nothing). A negative control: a report must not count retraces for the restored
function (nor call the restored function's single trace a retrace of the
original).

Expected:
  function: restored_function_body
  cause: none-expected
  changed: "(nothing)"
  fix: none needed (the restored function keeps the saved [None, 4] input_signature)
  fix_keywords: []
  forbidden_keywords: []
  traces: 1
  backend: tensorflow
  kinds: ["trace"]
  note: the restored function is made by TensorFlow's loader with its internal def_function.function, which _trace_counts.py does not wrap; count mode sees 0 for it (and 1 for the original __call__, traced when it is saved); the restored function's count (1) is printed by the program from experimental_get_tracing_count()
"""
import tempfile

import tensorflow as tf


class CustomModel(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.random.normal([4, 2]), name="w")
        self.b = tf.Variable(tf.zeros([2]), name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


model = CustomModel()
export_dir = tempfile.mkdtemp()
tf.saved_model.save(model, export_dir, signatures=model.__call__)

loaded = tf.saved_model.load(export_dir)
for batch_size in [1, 2, 3, 5, 8]:
    out = loaded(tf.random.normal([batch_size, 4]))
    print(batch_size, out.shape)
print("restored function traces:", loaded.__call__.experimental_get_tracing_count())
