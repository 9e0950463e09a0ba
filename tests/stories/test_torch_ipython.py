"""The IPython extension on torch: `%%traceguard` around Keras 3 and `torch.compile` runs.

In-process (`InteractiveShell`, whose displays `capture_output` keeps: the HTML a notebook shows)
and in a terminal (`ipython script.ipy`, the text report). Compiles use Dynamo's `eager` backend.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend("torch")

pytest.importorskip("IPython", reason="the IPython extension's tests need IPython")

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext traceguard")
    yield shell
    shell.run_cell("%unload_ext traceguard")
    InteractiveShell.clear_instance()


def test_a_cell_records_a_compiled_keras_layer_and_displays_the_report_as_html(shell):
    from IPython.utils.capture import capture_output

    setup = shell.run_cell("import keras, torch\nlayer = keras.layers.Dense(2, name='dense_in_cell')\n"
                           "layer(torch.ones((1, 4)))\nstep = torch.compile(layer, backend='eager')")
    assert setup.success
    with capture_output() as captured:
        result = shell.run_cell("%%traceguard\nfor n in (3, 5, 7):\n    step(torch.ones((n, 4)))\n"
                                "'last value'")
    assert result.success and result.result == "last value"
    (display,) = captured.outputs
    report = shell.user_ns["_traceguard"]
    # torch compiled the layer's call twice: 3 rows, then 5 with dimension 0 dynamic (7 reuses it).
    assert report.count("trace") == report.count("retrace") == 1
    (runs,) = report.functions.values()
    assert [str(change) for event in runs.events for change in event.changes] == ["args[1]: dim 0 3 -> 5"]
    # The frame is Keras's `error_handler` around `Layer.__call__`: its `*args` are the signature.
    assert str(runs.events[1].signature["args"]).endswith("torch.float32[5,4])")
    assert [event.kind.value for event in report.layers["dense_in_cell"].events] == ["trace", "retrace"]
    assert display.data["text/plain"].startswith("traceguard report for cell In[")
    assert "<code>args[1]: dim 0 3 -&gt; 5</code>" in display.data["text/html"]
    assert "torch._dynamo.mark_dynamic(args[1], 0)" in display.data["text/html"]


@pytest.mark.slow  # A terminal IPython that imports torch and Keras: about 10 s.
def test_terminal_ipython_shows_the_text_report_with_the_graph_breaks(tmp_path):
    ipython = pathlib.Path(sys.executable).with_name("ipython")
    if not ipython.exists():
        pytest.skip(f"no terminal IPython beside {sys.executable}")
    script = tmp_path / "script.ipy"
    script.write_text(
        "%load_ext traceguard\n"
        "import torch\n"
        "@torch.compile(backend='eager')\n"
        "def twice(x):\n"
        "    y = x + 1\n"
        "    torch._dynamo.graph_break()\n"
        "    return y * 2\n"
        "get_ipython().run_cell_magic('traceguard', '--summary',\n"
        "                            'twice(torch.ones(3))\\ntwice(torch.ones(4))')\n"
        "print(repr(_traceguard))\n")
    result = subprocess.run([str(ipython), "--no-banner", "--colors=NoColor", str(script)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": "torch"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("traceguard report for "))
    # Each of `twice`'s two frames compiled twice (3, then 4 rows): one function, 2 trace, 2 retrace.
    assert re.match(r"traceguard report for cell In\[\d+\]: 1 function traced 4 times: 2 trace, 2 retrace; "
                    r"0 layers: 0 layer runs; 0 eager layer runs$", lines[start]), lines[start]
    text = " ".join(result.stdout.split())
    assert "Graph breaks (1 function): twice: compiled as 2 frames (1 graph break: Call to " \
           "`torch._dynamo.graph_break()` at" in text
    assert re.match(r"<Explanation 'cell In\[\d+\]': 1 function traced 4 times; 0 layer events in 0 layers>$",
                    lines[-1]), lines[-1]
