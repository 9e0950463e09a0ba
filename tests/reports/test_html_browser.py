"""The HTML report in a real browser: headless Chromium renders every layer's marks, with no console error.

Needs Debian's chromium and chromium-driver; tests/chromium.py installs them
with apt-get where missing (as root), else these tests skip and say why.
Screenshots are kept under $TRACEGUARD_ARTIFACTS (default: the temp dir's
traceguard-artifacts/); the run's summary lists them. These tests are slow:
`python -m pytest -m slow` runs them.
"""

import dataclasses
import os
import pathlib
import shutil
import tempfile

import chromium
import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import BROWSER_ARTIFACTS, SeedLayer
from test_html import event, load_benchmark

import traceguard as tg
from traceguard import _compat
from traceguard._reports.html_tables import KIND_COLORS

# Installs and starts Chromium: about 100 s on 2 cores.
pytestmark = [pytest.mark.backend("tensorflow"), pytest.mark.slow]

# Per row: its layer, runs, label text and, per mark, its runs, kind classes, fill colour and boxes.
READ_TIMELINE = """
return [...document.querySelectorAll('svg.timeline g.row')].map(row => {
  const stripe = row.querySelector('rect.stripe').getBoundingClientRect();
  return {
    layer: row.dataset.layer, runs: +row.dataset.runs,
    label: [...row.querySelector('text.label').childNodes].filter(node => node.nodeType === Node.TEXT_NODE)
             .map(node => node.data).join(''),
    marks: [...row.querySelectorAll('g.mark')].map(mark => ({
      runs: +mark.dataset.runs,
      title: mark.querySelector('title').textContent,
      rects: [...mark.querySelectorAll('rect')].map(rect => {
        const box = rect.getBoundingClientRect();
        return {kind: rect.getAttribute('class'), fill: getComputedStyle(rect).fill,
                width: box.width, height: box.height,
                inside: box.top >= stripe.top && box.bottom <= stripe.bottom};
      }),
    })),
  };
});
"""


def rgb(hex_colour):
    red, green, blue = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


@pytest.fixture(scope="module")
def browser():
    try:
        binaries = chromium.find_or_install()
    except chromium.BrowserUnavailable as error:
        pytest.skip(f"headless Chromium is not available, so the report is not checked in a browser: {error}")
    with chromium.Browser(*binaries, width=1300, height=900) as session:
        yield session


@pytest.fixture(scope="module")
def artifacts():
    directory = pathlib.Path(os.environ.get("TRACEGUARD_ARTIFACTS")
                             or pathlib.Path(tempfile.gettempdir()) / "traceguard-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def keep(path, artifacts):
    """Copies a file to the artifacts directory; the run's summary lists it (conftest.py)."""
    BROWSER_ARTIFACTS.append(shutil.copy(path, artifacts / path.name))


# The seed layer's first call under tf.function: Keras 3 runs a symbolic pass first, Keras 2 none.
SEED_KINDS = ["symbolic"] * _compat.IS_KERAS_3 + ["trace", "variable_retrace"]


def check_rendered(browser, path, expected_runs):
    """Opens the report; checks every row's marks account for its runs, are drawn and coloured by kind."""
    browser.open(path)
    rows = browser.run(READ_TIMELINE)
    assert {row["layer"]: row["runs"] for row in rows} == expected_runs
    for row in rows:
        assert sum(mark["runs"] for mark in row["marks"]) == row["runs"]
        for mark in row["marks"]:
            assert mark["rects"] and mark["title"]
            for rect in mark["rects"]:
                kind = rect["kind"].removeprefix("k-")
                assert rect["fill"] == rgb(KIND_COLORS[kind])
                assert rect["width"] >= 3 and rect["height"] >= 2 and rect["inside"]
    assert browser.run("return document.querySelectorAll('script, iframe, img, link, object').length") == 0
    assert browser.console_errors() == []
    return rows


def test_report_of_real_layers_and_a_hostile_name_renders_in_chromium(browser, artifacts, tmp_path,
                                                                      seed_input):
    seed = SeedLayer(name="seed")
    step = tf.function(seed)
    step(seed_input)
    step(seed_input[:10])
    hostile = '<script>alert("x")</script>'
    hostile_event = dataclasses.replace(
        event(1, "retrace", 0.0, layer=hostile, reason="<img src=x onerror=alert(1)>",
              changes=["</title><b>x</b>"]), timestamp=seed.trace_log[-1].timestamp + 0.01)
    logs = {"seed": seed.trace_log, hostile: [hostile_event]}
    # The order axis: one mark per run whatever the timing.
    path = tg.write_html(tmp_path / "browser_report.html", logs, title="Browser check", axis="order")
    seed_kinds = SEED_KINDS + ["retrace"]
    rows = check_rendered(browser, path, {"seed": len(seed_kinds), hostile: 1})
    assert [mark["rects"][0]["kind"] for mark in rows[0]["marks"]] == [f"k-{kind}" for kind in seed_kinds]
    assert rows[0]["marks"][-1]["title"].splitlines()[2] == "changed: inputs: dim 0 60 -> 10"
    assert rows[1]["label"] == hostile
    title = rows[1]["marks"][0]["title"].splitlines()
    assert [title[0], *title[2:4]] == ["#1 retrace in one_step_on_data", "changed: </title><b>x</b>",
                                       "why: <img src=x onerror=alert(1)>"]
    assert browser.run("return document.querySelector('h1').textContent") == "Browser check"
    screenshot = browser.screenshot(tmp_path / "browser_report.png")
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    keep(screenshot, artifacts)


def test_benchmark_sized_report_renders_in_chromium(browser, artifacts, tmp_path):
    events_by_layer = load_benchmark().training_events()
    path = tg.write_html(tmp_path / "benchmark_report.html", events_by_layer)
    rows = check_rendered(browser, path, {layer: 1000 for layer in events_by_layer})
    assert len(rows) == 100
    screenshot = browser.screenshot(tmp_path / "benchmark_report.png", "h1, .legend, svg.timeline")
    keep(screenshot, artifacts)


def test_notebook_table_renders_kind_colours_in_chromium(browser, artifacts, tmp_path, seed_input):
    seed = SeedLayer(name="seed")
    tf.function(seed)(seed_input)
    path = tmp_path / "trace_log_repr.html"
    path.write_text(f"<!DOCTYPE html><meta charset='utf-8'><body>{seed.trace_log._repr_html_()}</body>",
                    encoding="utf-8")
    browser.open(path)
    pills = browser.run("return [...document.querySelectorAll('table .tg-kind')].map("
                        "pill => [pill.textContent, getComputedStyle(pill).backgroundColor])")
    assert pills == [[kind, rgb(KIND_COLORS[kind])] for kind in SEED_KINDS]
    assert browser.console_errors() == []
    keep(browser.screenshot(tmp_path / "trace_log_repr.png", ".traceguard", margin=8), artifacts)


READ_PAGE = """
const rows = [...document.querySelectorAll('svg.timeline g.row')];
const retraces = {};
for (const row of rows) {
  for (const part of row.querySelectorAll('text.stats tspan.retraces')) {
    const [count, kind] = part.textContent.replace('\\u00b7', '').trim().split(' ');
    retraces[kind] = (retraces[kind] || 0) + Number(count.replace(',', ''));
  }
}
return {
  scrollWidth: document.documentElement.scrollWidth,
  boxes: [...document.querySelectorAll('.scroll')].map(box => box.scrollWidth - box.clientWidth),
  legend: Object.fromEntries([...document.querySelectorAll('.legend .item')].map(item => {
    const [kind, count] = item.textContent.match(/^(\\w+) \\(([\\d,]+)/).slice(1);
    return [kind, Number(count.replace(',', ''))];
  })),
  runs: rows.reduce((total, row) => total + Number(row.dataset.runs), 0),
  functions: rows.filter(row => row.classList.contains('function')).map(row => row.dataset.function),
  retraces,
};
"""


def test_report_of_functions_and_layers_fits_1280_px_and_its_legend_counts_its_rows(artifacts, tmp_path):
    try:
        binaries = chromium.find_or_install()
    except chromium.BrowserUnavailable as error:
        pytest.skip(f"headless Chromium is not available: {error}")
    model = keras.Sequential([keras.Input((None, 4)), keras.layers.Dense(8), keras.layers.Dense(2)])
    dense = keras.layers.Dense(3, name="eager_dense")
    with tg.watch() as report:
        for length in (3, 5, 7):  # `predict` retraces for a new length (Keras relaxes the batch only).
            model.predict(np.ones((2, length, 4), "float32"), verbose=0)
        for _ in range(3):
            dense(np.ones((1, 2), "float32"))  # Eager calls: counted, not logged.
    path = report.to_html(tmp_path / "functions_and_layers.html")
    with chromium.Browser(*binaries, width=1280, height=900) as browser:
        browser.open(path)
        page = browser.run(READ_PAGE)
        keep(browser.screenshot(tmp_path / "functions_and_layers.png"), artifacts)
    assert page["scrollWidth"] <= 1280 and all(extra <= 0 for extra in page["boxes"]), page
    # Keras 3 names predict's step one_step_on_data_distributed; Keras 2, predict_function.
    assert ("one_step_on_data_distributed" if keras.__version__.startswith("3.") else "predict_function") \
        in page["functions"]
    function_traces = sum(runs.traces + runs.compilations for runs in report.functions.values())
    layer_runs = sum(len(runs.events) for runs in report.layers.values())
    assert page["runs"] == function_traces + layer_runs == sum(page["legend"].values())
    for kind in ("retrace", "variable_retrace"):
        assert page["legend"][kind] == page["retraces"].get(kind, 0)
    assert page["legend"]["retrace"] >= 2
    assert page["legend"]["eager"] == report.count("eager", of="layers")
