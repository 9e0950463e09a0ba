"""examples/notebook.ipynb runs in a fresh kernel and displays a trace log and an explanation as tables."""

import os
import pathlib

import pytest

from traceguard import _compat

nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the `docs` extra")
nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the `docs` extra")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"

# A kernel that imports TensorFlow: 10-20 s.
pytestmark = [pytest.mark.backend("tensorflow"), pytest.mark.slow]


def html_results(notebook):
    return [output["data"]["text/html"] for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.outputs if output.output_type == "execute_result"]


def test_notebook_displays_the_trace_log_and_the_explanation_as_tables(tmp_path, monkeypatch):
    # The kernel is a new process: it imports this checkout's traceguard, as the tests do.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells), "commit the notebook without outputs"
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    log, explanation = html_results(notebook)
    # tf.keras decides the layer's Keras: Keras 3 adds its symbolic pass.
    badges = ["1 symbolic", "1 trace", "1 variable_retrace"][0 if _compat.IS_KERAS_3 else 1:]
    assert "<b>TraceLog of layer <code>eager_layer</code></b>" in log
    assert all(f">{badge}</span>" in log for badge in badges)
    assert "<b>Fix:</b> Create the variables before the first traced call" in log
    assert "<b>explain(&lt;lambda&gt;)</b>" in explanation
    assert "<code>inputs: dim 0 32 -&gt; 6</code>" in explanation
    assert "<b>Fix:</b> Each new shape costs a trace" in explanation
