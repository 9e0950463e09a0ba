"""The IPython extension: `%load_ext traceguard`, then `%%traceguard` and `%traceguard`, in a real kernel."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend("tensorflow")

pytest.importorskip("IPython", reason="the IPython extension's tests need IPython (the `docs` extra)")

from traceguard import _cli, _ipython  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAVY_MODULES = ("tensorflow", "jax", "keras", "tf_keras")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("line, options, statement", [
    ("model.fit(x, y)", "", "model.fit(x, y)"),
    ("--summary model.fit(x, y, batch_size=32)", "--summary", "model.fit(x, y, batch_size=32)"),
    ("--html report.html --summary  h = f({'a': 1})", "--html report.html --summary", "h = f({'a': 1})"),
    ("--html='my report.html' f()", "--html='my report.html'", "f()"),
    ("--trace-file \"a b.jsonl\" f()", "--trace-file \"a b.jsonl\"", "f()"),
    ("--htm r.html f()", "--htm r.html", "f()"),  # argparse accepts the abbreviation.
    ("--summary -- -x", "--summary --", "-x"),
    ("--bogus f()", "--bogus", "f()"),
    ("--summary", "--summary", ""),
])
def test_split_options_keeps_the_statement_verbatim(line, options, statement):
    assert _ipython.split_options(line) == (options, statement)


def test_loading_the_extension_imports_no_backend():
    code = ("import sys, traceguard\n"
            "traceguard.load_ipython_extension, traceguard.unload_ipython_extension\n"
            f"print(sorted(name for name in {HEAVY_MODULES!r} if name in sys.modules))\n"
            "print('IPython' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\nTrue\n"


# The notebook: one kernel for every check (a kernel that imports TensorFlow takes 10-20 s).
# A cell tagged "raises-exception" is expected to fail; any other failure stops the test.
CELLS = [
    ("load", '%load_ext traceguard\nimport sys\n'
             f'print(sorted(name for name in {HEAVY_MODULES!r} if name in sys.modules))'),
    # TensorFlow's own retracing warning (after 5 retraces) would come between the outputs checked.
    ("setup", 'import tensorflow as tf\nfrom tensorflow import keras\n\ntf.get_logger().setLevel("ERROR")\n'
              'step = tf.function(keras.layers.Dense(2, name="dense_in_cell"))'),
    ("cell", '%%traceguard\nprint("cell output")\nstep(tf.ones((3, 2)))\nstep(tf.ones((5, 2)))\n'
             '"last value"'),
    ("files", '%%traceguard --summary --html {tmp}/report.html --trace-file {tmp}/trace.jsonl\n'
              'step(tf.ones((6, 2)));'),
    ("line", 'shape = %traceguard step(tf.ones((7, 2))).shape\n'
             'print(shape, type(_traceguard).__name__, _traceguard.title)'),
    ("line_options", '%traceguard --summary sizes = {{"batch": int(step(tf.ones((8, 2))).shape[0])}}\n'
                     'print(sizes)'),
    ("raises", '%%traceguard\n\nprint("before")\nstep(tf.ones((9, 2)))\nraise ValueError("from the cell")'),
    ("after_raise", 'print(_traceguard.title, _traceguard.count("trace"))'),
    ("syntax_error", '%%traceguard\nstep(tf.ones((10, 2))))\n'),
    ("unknown_option", '%%traceguard --bogus\npass'),
    ("missing_directory", '%%traceguard --html {tmp}/missing/report.html\npass'),
    ("no_statement", '%traceguard --summary'),
    ("kept", 'print(_traceguard.title)'),
    ("unload", '%unload_ext traceguard\nprint("traceguard" in get_ipython().magics_manager.magics["cell"])\n'
               '%load_ext traceguard\nprint("traceguard" in get_ipython().magics_manager.magics["cell"])'),
]
RAISING = {"raises", "syntax_error", "unknown_option", "missing_directory", "no_statement"}


# The tests that read the notebook are slow: its kernel imports TensorFlow (10-20 s, once).
@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The executed notebook's outputs and execution count by cell name, and its directory."""
    nbclient = pytest.importorskip("nbclient", reason="running a notebook needs the `docs` extra")
    nbformat = pytest.importorskip("nbformat", reason="running a notebook needs the `docs` extra")
    tmp = tmp_path_factory.mktemp("notebook")
    cells = []
    for name, source in CELLS:
        cell = nbformat.v4.new_code_cell(source.format(tmp=tmp))
        cell.metadata["tags"] = ["raises-exception"] if name in RAISING else []
        cells.append(cell)
    executed = nbformat.v4.new_notebook(cells=cells)
    with pytest.MonkeyPatch.context() as patch:
        # The kernel is a new process: it imports this checkout's traceguard, as the tests do.
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        patch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
        nbclient.NotebookClient(executed, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp)}}).execute()
    outputs = {name: cell.outputs for (name, _), cell in zip(CELLS, executed.cells)}
    counts = {name: cell.execution_count for (name, _), cell in zip(CELLS, executed.cells)}
    return outputs, counts, tmp


def shown(outputs):
    """Each output as (kind, text): stdout/stderr text, the HTML (else plain text) of a result or
    display, an error's name and value.

    Consecutive stream outputs of one name are joined, as a notebook shows them: the kernel
    sends a stream's text in pieces, as it flushes. TensorFlow's C++ start-up lines are left
    out: the kernel forwards what C++ writes to file descriptor 2 from a thread, so they may
    arrive during a later cell.
    """
    kinds = []
    for output in outputs:  # Streams joined first: a piece may end mid-line ("False", then "\n").
        if output.output_type == "stream":
            if kinds and kinds[-1][0] == output.name:
                kinds[-1] = (output.name, kinds[-1][1] + output.text)
            else:
                kinds.append((output.name, output.text))
        elif output.output_type == "error":
            kinds.append(("error", f"{output.ename}: {output.evalue}"))
        else:
            data = output["data"]
            kinds.append((output.output_type, data.get("text/html", data["text/plain"])))
    shown = []
    for kind, text in kinds:
        if kind in ("stdout", "stderr"):
            text = "".join(line for line in text.splitlines(keepends=True)
                           if line.strip() and not _cli._STARTUP_LINE.match(line))
            if not text and kind != "stdout":
                continue
            if shown and shown[-1][0] == kind:  # Around a stream that was only start-up lines.
                shown[-1] = (kind, shown[-1][1] + text)
                continue
        shown.append((kind, text))
    return shown


@pytest.mark.slow
def test_loading_the_extension_in_a_kernel_imports_no_backend(notebook):
    outputs, _, _ = notebook
    assert shown(outputs["load"]) == [("stdout", "[]\n")]


@pytest.mark.slow
def test_cell_output_and_last_value_come_first_then_the_report_as_html(notebook):
    outputs, counts, _ = notebook
    number = counts["cell"]
    (stdout, cell_output), (result, value), (display, html) = shown(outputs["cell"])
    assert (stdout, cell_output, result, value, display) == (
        "stdout", "cell output\n", "execute_result", "'last value'", "display_data")
    assert outputs["cell"][1].execution_count == number  # The cell's own Out[n].
    assert f"<b>cell In[{number}]</b>" in html
    assert all(f">1 {kind}</span>" in html for kind in ("trace", "variable_retrace", "retrace"))
    assert "<code>inputs: dim 0 3 -&gt; 5</code>" in html
    # A front end without HTML shows the text report, not a bare repr.
    text = outputs["cell"][2]["data"]["text/plain"]
    assert text.startswith(f"traceguard report for cell In[{number}]: 1 function traced 3 times: ")


@pytest.mark.slow
def test_terminal_ipython_shows_the_report_and_the_repr_counts_functions(tmp_path):
    """`ipython script.ipy`: the display in a terminal is the text report, and the repr counts the
    function's traces (it said `0 events in 0 layers` for a function traced three times)."""
    ipython = pathlib.Path(sys.executable).with_name("ipython")
    if not ipython.exists():
        pytest.skip(f"no terminal IPython beside {sys.executable}")
    script = tmp_path / "script.ipy"
    script.write_text(
        "%load_ext traceguard\n"
        "import tensorflow as tf\n"
        "tf.get_logger().setLevel('ERROR')\n"
        "double = tf.function(lambda x: x * 2)\n"
        "get_ipython().run_cell_magic('traceguard', '', 'for n in (1, 2, 3):\\n    double(tf.ones((n,)))')\n"
        "print(repr(_traceguard))\n"
        "print(str(_traceguard) == _traceguard.summary())\n")
    result = subprocess.run([str(ipython), "--no-banner", "--colors=NoColor", str(script)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("traceguard report for "))
    assert re.match(r"traceguard report for cell In\[\d+\]: 1 function traced 3 times: 1 trace, 2 retrace; "
                    r"0 layers: 0 layer runs; 0 eager layer runs$", lines[start]), lines[start]
    assert lines[start + 2] == "Problems (1), the most costly first:"
    assert lines[start + 3].startswith("1. `<lambda>`: 2 retraces (#2, #3), ")
    assert re.match(r"<Explanation 'cell In\[\d+\]': 1 function traced 3 times; 0 layer events in 0 layers>$",
                    lines[-2]), lines[-2]
    assert lines[-1] == "True"


@pytest.mark.slow
def test_summary_option_shows_the_text_summary_and_writes_the_html_and_trace_file(notebook):
    outputs, counts, tmp = notebook
    # The trailing ";" silences the last value, as in any cell.
    (display, summary), (_, written) = shown(outputs["files"])
    assert display == "display_data"
    assert summary.startswith(f"traceguard report for cell In[{counts['files']}]: 1 function traced 1 time: "
                              "1 trace; 1 layer: 1 layer run; 0 eager layer runs\n")
    assert "why:" not in summary and "No problems" in summary
    assert written == (f"traceguard: HTML report written to {tmp / 'report.html'}; "
                       f"trace file written to {tmp / 'trace.jsonl'}")
    assert f"cell In[{counts['files']}]" in (tmp / "report.html").read_text()
    header = json.loads((tmp / "trace.jsonl").read_text().splitlines()[0])
    assert header["type"] == "header"


@pytest.mark.slow
def test_line_magic_watches_one_statement_and_returns_its_value(notebook):
    outputs, _, _ = notebook
    (display, html), (stdout, text) = shown(outputs["line"])
    assert (display, stdout) == ("display_data", "stdout")
    assert "<b>step(tf.ones((7, 2))).shape</b>" in html
    assert text == "(7, 2) Explanation step(tf.ones((7, 2))).shape\n"


@pytest.mark.slow
def test_line_magic_options_come_before_a_statement_taken_verbatim(notebook):
    outputs, _, _ = notebook
    (display, summary), (_, printed) = shown(outputs["line_options"])
    # No variable expansion: the braces are Python's.
    assert summary.startswith(
        'traceguard report for sizes = {"batch": int(step(tf.ones((8, 2))).shape[0])}: ')
    assert printed == "{'batch': 8}\n"


@pytest.mark.slow
def test_exception_of_the_cell_reaches_the_user_after_the_report(notebook):
    outputs, counts, _ = notebook
    kinds = shown(outputs["raises"])
    assert [kind for kind, _ in kinds] == ["stdout", "display_data", "error"], kinds
    assert kinds[0][1] == "before\n", kinds
    assert f"<b>cell In[{counts['raises']}]</b>" in kinds[1][1]
    assert kinds[2] == ("error", "ValueError: from the cell")
    traceback = ANSI.sub("", "\n".join(outputs["raises"][2].traceback))
    # The cell's own line, numbered as in the notebook; traceguard's frames hidden.
    assert '----> 5 raise ValueError("from the cell")' in traceback
    assert "_ipython.py" not in traceback
    assert shown(outputs["after_raise"]) == [("stdout", f"cell In[{counts['raises']}] 1\n")]


@pytest.mark.slow
def test_syntax_error_fails_the_cell_before_anything_is_watched(notebook):
    outputs, _, _ = notebook
    [(kind, error)] = shown(outputs["syntax_error"])  # No report.
    assert kind == "error"
    assert error.startswith("SyntaxError: unmatched ')' (") and error.endswith(", line 2)"), error


@pytest.mark.slow
@pytest.mark.parametrize("cell, message", [
    ("unknown_option", "%%traceguard: unrecognized arguments: --bogus. It accepts --summary, --html "
                       "FILE and --trace-file FILE (`%traceguard?` explains them). "
                       "Received: %%traceguard --bogus"),
    ("missing_directory", "%%traceguard: --html expects a file in an existing directory. "
                          "Received: --html '{tmp}/missing/report.html'"),
    ("no_statement", "%traceguard expects a statement to watch, as in `%traceguard model.fit(x, y)`; start a "
                     "cell with %%traceguard to watch the whole cell. Received: %traceguard --summary"),
])
def test_argument_errors_name_the_option_and_value_and_run_nothing(notebook, cell, message):
    outputs, _, tmp = notebook
    assert shown(outputs[cell]) == [("stderr", f"UsageError: {message.format(tmp=tmp)}\n")]
    # No report replaced the last one.
    assert shown(outputs["kept"]) == [("stdout", f"cell In[{notebook[1]['raises']}]\n")]


@pytest.mark.slow
def test_unloading_removes_the_magics_and_loading_restores_them(notebook):
    outputs, _, _ = notebook
    assert shown(outputs["unload"]) == [("stdout", "False\nTrue\n")]
