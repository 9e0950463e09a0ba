"""A function restored from a SavedModel cannot trace a shape it was not saved with: `ValueError`.

Source:
  https://github.com/tensorflow/tensorflow/issues/61849
  https://www.tensorflow.org/guide/saved_model

The reporter saved a model whose function had been traced on the shapes used so
far, loaded it and called the restored function with other shapes: "Could not
find matching concrete function to call loaded from the SavedModel". The
established cause (the SavedModel guide, "Saving a custom model"): the Python
code is not saved, only the concrete functions that were traced; "when you load
... the function will retrace" only into those saved concrete functions, so an
input that matches none of them is an error, and editing the loaded object
cannot add an `input_signature`. The fix is on the saving side: give the
`tf.function` an `input_signature` with `None` for the varying dimension before
saving (or trace it once with such a `TensorSpec`, or export a serving
signature and call that). This program traces `__call__` on batches of 2 and 3,
saves, loads, and calls the restored function with 2, 3, then 5 rows. Measured
on TF 2.21: the original `__call__` traces 4 times (2 calls, 2 more while
`tf.saved_model.save` traces its concrete functions in a save context), the
restored function (`recreate_function.<locals>.restored_function_body`) twice (2
and 3 rows; each dispatches to a saved concrete function), then it raises the
`ValueError`. The call that raises traces nothing: TensorFlow's dispatcher finds
no saved concrete function and the restored function's count stays 2 (measured),
so a report records 2 traces, not 3. TensorFlow names the restored function
`restored_function_body` (its `name`, `__name__` and retracing warning). A report
should name `x`'s batch dimension and say to save with an `input_signature` (or
call the serving signature); "add reduce_retracing" or "add an input_signature"
to the loaded function cannot be applied. `reduce_retracing=True` is not
forbidden report-wide: on the ORIGINAL `__call__`, before saving, it is a fix
that works (measured on TF 2.21: with it the original's second call traces
`[None, 4]`, that concrete function is saved, and the restored function runs 5
rows, its count 1), so the original's own retrace may suggest it.

Expected:
  function: restored_function_body
  cause: restored-function
  changed: "x | args: dim 0"
  fix: save the function with an input_signature (TensorSpec([None, 4])) or export and call a serving signature; a restored function cannot trace new shapes
  fix_keywords: ["save", "signature"]
  forbidden_keywords: ["drop_remainder"]
  raises: ValueError
  traces: 2
  backend: tensorflow
  kinds: ["trace", "retrace"]
  changes: [{"argument": "x | args", "aspect": "dim", "axis": 0}]
  note: the restored function is made by TensorFlow's loader with its internal def_function.function, which _trace_counts.py does not wrap; count mode sees 0 for it (and 4 for the original __call__: 2 calls, then 2 more when tf.saved_model.save traces its concrete functions in a save context); the restored function's 2 are its experimental_get_tracing_count()
"""
import tempfile

import tensorflow as tf


class CustomModel(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.random.normal([4, 2]), name="w")

    @tf.function
    def __call__(self, x):
        return tf.matmul(x, self.w)


model = CustomModel()
model(tf.random.normal([2, 4]))
model(tf.random.normal([3, 4]))
export_dir = tempfile.mkdtemp()
tf.saved_model.save(model, export_dir)

loaded = tf.saved_model.load(export_dir)
for batch_size in [2, 3]:
    print(batch_size, loaded(tf.random.normal([batch_size, 4])).shape)
print("restored function traces:", loaded.__call__.experimental_get_tracing_count())
print(loaded(tf.random.normal([5, 4])).shape)  # ValueError: Could not find matching concrete function
