"""Where the HTML report is written from: Explanation, watch(), `run --html`, TraceMonitor(html=...)."""

import io
import logging
import warnings

import pytest
import tensorflow as tf
from conftest import SeedLayer, keras
from helpers import RETRACING, script
from test_callbacks import compiled_projection_model, data, model, monitor_class_of  # noqa: F401
from test_html import kinds_of, marks_of, parse, rows_of

import traceguard as tg
from traceguard._cli import build_parser
from traceguard._diagnosis.run import run_script

pytestmark = pytest.mark.backend("tensorflow")


def test_explanation_to_html_writes_the_timeline_of_each_layer(tmp_path, seed_input):
    explanation = tg.explain(tf.function(SeedLayer(name="seed")), seed_input)
    path = explanation.to_html(tmp_path / "explain.html")
    assert path == tmp_path / "explain.html"
    document = path.read_text(encoding="utf-8")
    seed, dense = explanation.layers
    marks = {layer: [kinds_of(mark) for mark in marks_of(row)] for layer, row in rows_of(document).items()}
    assert marks == {layer: [["k-symbolic"], ["k-trace"], ["k-variable_retrace"]] for layer in (seed, dense)}
    assert parse(document).find_all("title")[0].text == "explain(tf.function function)"


def test_explanation_to_html_rejects_a_path_that_is_not_one(tmp_path, seed_input):
    explanation = tg.explain(SeedLayer(name="seed"), seed_input)
    with pytest.raises(TypeError, match=r"`path` expects a file path .*Received: path=None"):
        explanation.to_html(None)


def test_watch_reports_repr_html_is_the_layers_table_with_the_retraces(seed_input):
    with tg.watch() as report:
        step = tf.function(keras.layers.Dense(2, name="watched"))
        step(tf.ones((3, 2)))
        step(tf.ones((5, 2)))
    tree = parse(report._repr_html_())
    # Badges count function traces; the layer's runs are counted as such beside them.
    assert tree.find_all("div")[1].all_text() == \
        "watch(): 1 trace 1 variable_retrace 1 retrace 1 layer: 3 layer runs, 2 of them in 2 retraces"
    assert [row.children[0].text for row in tree.find_all("table", "tg-counts")[0].find_all("tr")] == [
        "layer", "watched"]
    rows = tree.find_all("table", "tg-retraces")[0].find_all("tr")[1:]
    assert [[cell.all_text() for cell in row.children][:5] for row in rows] == [
        ["watched", "variable_retrace", "function", "#2", "\u2013"],
        ["watched", "retrace", "function", "#3", "inputs: dim 0 3 -> 5"]]


@pytest.mark.parametrize("ending, code", [("", 0), ("raise KeyError('from the script')\n", 1),
                                          ("import sys\nsys.exit(3)\n", 3)])
def test_run_html_is_written_however_the_script_ends(tmp_path, ending, code):
    html = tmp_path / "report.html"
    err = io.StringIO()
    result = run_script(script(tmp_path, f"{RETRACING}\n{ending}"), [], None, err, html=str(html))
    assert result == code
    assert err.getvalue().endswith("traceguard: watched 1 function and 1 layer; report above, "
                                   f"HTML report written to {html}\n")
    rows = rows_of(html.read_text(encoding="utf-8"))
    assert [kinds_of(mark) for mark in marks_of(rows["scripted"])] == [
        ["k-trace"], ["k-variable_retrace"], ["k-retrace"]]
    assert parse(html.read_text(encoding="utf-8")).find_all("title")[0].text == "run script.py"


@pytest.mark.parametrize("where", ["missing/report.html", "."])
def test_run_html_in_a_missing_directory_or_a_directory_is_a_usage_error(tmp_path, where):
    html = str(tmp_path / where)
    err = io.StringIO()
    assert run_script(script(tmp_path, "raise SystemExit('the script ran')\n"), [], None, err, html=html) == 2
    assert err.getvalue() == (f"traceguard run: --html expects a file in an existing directory. "
                              f"Received: --html {html!r}\n")


def test_run_command_line_takes_html_before_the_script():
    arguments = build_parser().parse_args(["run", "--html", "r.html", "train.py", "--html", "x"])
    assert (arguments.html, arguments.script, arguments.arguments) == ("r.html", "train.py", ["--html", "x"])


def test_trace_monitor_html_is_rewritten_after_each_call(keras_flavor, tmp_path):
    html = tmp_path / "fit.html"
    flavor_model = compiled_projection_model(keras_flavor)
    monitor = monitor_class_of(keras_flavor)(html=html)
    flavor_model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
    # Keras 2 creates the optimizer's variables in the first trace of `train_function`.
    first_fit = keras_flavor.pick([["k-trace"]], [["k-trace"], ["k-variable_retrace"]])
    assert [kinds_of(mark) for mark in marks_of(rows_of(html.read_text(encoding="utf-8"))["projection"])] == \
        first_fit
    with pytest.warns(UserWarning, match="inputs: dim 0 32 -> None"):
        flavor_model.fit(*data(70), batch_size=32, verbose=0, callbacks=[monitor])
    document = html.read_text(encoding="utf-8")
    marks = marks_of(rows_of(document)["projection"])
    assert [kinds_of(mark) for mark in marks] == first_fit + [["k-retrace"]]
    assert parse(document).find_all("title")[0].text == "TraceMonitor"


def test_trace_monitor_that_cannot_write_its_html_logs_and_lets_fit_finish(model, tmp_path, caplog):  # noqa: F811
    html = tmp_path / "gone" / "fit.html"
    html.parent.mkdir()
    monitor = tg.callbacks.TraceMonitor(html=str(html))
    html.parent.rmdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = model.fit(*data(64), batch_size=32, verbose=0, callbacks=[monitor])
    assert len(history.history["loss"]) == 1
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "traceguard"]
    assert record.getMessage().startswith(f"TraceMonitor: could not write the HTML report to {str(html)!r}: ")


@pytest.mark.parametrize("arguments, error, message", [
    ({"html": 3}, TypeError, r"`TraceMonitor\(html=...\)` expects the path of the HTML file to write "
                             r"\(str or path-like\), or None. Received: html=3"),
    ({"html": "missing/r.html"}, ValueError, r"`TraceMonitor\(html=...\)` expects a file in an existing "
                                             r"directory. Received: html='missing/r.html'"),
    ({"log_dir": ["logs"]}, TypeError, r"`TraceMonitor\(log_dir=...\)` expects a directory for "
                                       r"TensorBoard summaries \(str or path-like\), or None. "
                                       r"Received: log_dir=\['logs'\]"),
])
def test_trace_monitor_checks_its_arguments_when_made(tmp_path, monkeypatch, arguments, error, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=message):
        tg.callbacks.TraceMonitor(**arguments)


def test_trace_monitor_log_dir_must_not_be_a_file(tmp_path):
    (tmp_path / "logs").write_text("")
    with pytest.raises(ValueError, match=r"expects a directory, created if missing; it is an existing file. "
                                         r"Received: log_dir=PosixPath\("):
        tg.callbacks.TraceMonitor(log_dir=tmp_path / "logs")
