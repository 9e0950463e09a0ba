"""How big and how fast is the HTML report for 100 layers x 1,000 body runs?

Run: python benchmarks/html_report.py [--no-browser]

Two synthetic logs, with the reasons and hints `classify_run` really gives:
"training" (per layer: the symbolic pass, a trace and its variable retrace, then
eager steps with a retrace for every partial batch and a save now and then) and
"worst case" (kinds, times and changes at random, so few marks can merge).
Prints the file size and Python render time of each, and the time headless
Chromium takes to load and lay the page out, when Chromium is installed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from traceguard._core.classify import Observation, classify_run  # noqa: E402
from traceguard._core.events import TraceEvent  # noqa: E402
from traceguard._core.keras_names import is_keras_step_function  # noqa: E402
from traceguard._core.specs import TensorSpec, ValueSpec  # noqa: E402
from traceguard._core.verdicts import EarlierTrace, RunContext  # noqa: E402
from traceguard._diagnosis.html_report import write_html  # noqa: E402
from traceguard._reports.html import render_html  # noqa: E402
from traceguard._reports.messages import hint_text, reason_text  # noqa: E402

LAYERS = 100
RUNS_PER_LAYER = 1000
SPAN_SECONDS = 120.0
START = 1.8e9


def _signature(batch: int) -> dict:
    return {"inputs": TensorSpec("float32", (batch, 64)), "training": ValueSpec("True")}


def _event(index: int, layer: str, timestamp: float, context: RunContext, batch: int,
           function: str | None, earlier: list[EarlierTrace], in_creation_phase: bool | None) -> TraceEvent:
    verdict = classify_run(Observation(context, _signature(batch), function, in_creation_phase, earlier,
                                       keras_step=is_keras_step_function(function)))
    return TraceEvent(index=index, kind=verdict.kind, layer=layer, function=function,
                      signature=_signature(batch), changes=verdict.changes, created_variables=(),
                      reason=reason_text(verdict), hint=hint_text(verdict), timestamp=timestamp,
                      duration_s=0.002, thread="MainThread", verdict=verdict)


def training_events(layers: int = LAYERS, runs: int = RUNS_PER_LAYER,
                    seed: int = 0) -> dict[str, list[TraceEvent]]:
    """A custom training loop logged with log_eager=True: mostly eager steps, a retrace per partial batch."""
    rng = random.Random(seed)
    events_by_layer = {}
    for layer_number in range(layers):
        layer = f"encoder/block_{layer_number // 4}/dense_{layer_number}"
        offset = layer_number * 1e-4  # Layers run one after the other within a step.
        first_trace = EarlierTrace(_signature(32), in_creation_phase=True)
        events = [
            _event(1, layer, START + offset, RunContext.SYMBOLIC, 32, None, [], None),
            _event(2, layer, START + 0.2 + offset, RunContext.GRAPH, 32, "train_step", [], True),
            _event(3, layer, START + 0.4 + offset, RunContext.GRAPH, 32, "train_step", [first_trace], False),
        ]
        for index in range(4, runs + 1):
            timestamp = START + 1 + (index / runs) * (SPAN_SECONDS - 1) + offset
            draw = rng.random()
            if draw < 0.01:
                batch = rng.randint(1, 31)  # A partial last batch.
                events.append(_event(index, layer, timestamp, RunContext.GRAPH, batch, "train_step",
                                     [first_trace], False))
            elif draw < 0.013:
                events.append(_event(index, layer, timestamp, RunContext.SAVE, 32, "serving_default",
                                     [], None))
            else:
                events.append(_event(index, layer, timestamp, RunContext.EAGER, 32, None, [], None))
        events_by_layer[layer] = events
    return events_by_layer


def worst_case_events(layers: int = LAYERS, runs: int = RUNS_PER_LAYER,
                      seed: int = 0) -> dict[str, list[TraceEvent]]:
    """Kinds, times and changes at random: neighbouring runs rarely share an explanation."""
    rng = random.Random(seed)
    contexts = [RunContext.EAGER, RunContext.SYMBOLIC, RunContext.GRAPH, RunContext.SAVE]
    events_by_layer = {}
    for layer_number in range(layers):
        layer = f"layer_{layer_number}"
        earlier = [EarlierTrace(_signature(32), in_creation_phase=True)]
        timestamps = sorted(START + rng.random() * SPAN_SECONDS for _ in range(runs))
        events = []
        for index, timestamp in enumerate(timestamps, start=1):
            context = rng.choice(contexts)
            batch = rng.randint(1, 64)
            events.append(_event(index, layer, timestamp, context, batch, rng.choice(["train_step", "serve"]),
                                 earlier if context is RunContext.GRAPH and rng.random() < 0.7 else [],
                                 rng.choice([False, None])))
        events_by_layer[layer] = events
    return events_by_layer


def _median_seconds(function, repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of `function()`; CPU time varies less on a shared machine."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _browser_seconds(path: pathlib.Path, repeats: int) -> tuple[float, float, float] | str:
    """Medians of Chrome's first paint and load event (from its navigation timing) and the wall time.

    The wall time runs from asking ChromeDriver to open the page to a layout
    query answered after it loaded: what a user waits, plus WebDriver's overhead.
    """
    sys.path.insert(0, str(ROOT / "tests"))
    import chromium

    try:
        binaries = chromium.find_or_install(log=lambda text: print(f"  {text}"))
    except chromium.BrowserUnavailable as error:
        return f"skipped: {error}"
    paints, loads, walls = [], [], []
    with chromium.Browser(*binaries) as browser:
        for _ in range(repeats):
            browser.open(path.parent / "blank.html")
            start = time.perf_counter()
            browser.open(path)
            browser.run("return document.body.getBoundingClientRect().height")
            walls.append(time.perf_counter() - start)
            paint, load = browser.run(
                "return [performance.getEntriesByName('first-contentful-paint')[0].startTime,"
                " performance.getEntriesByType('navigation')[0].loadEventEnd]")
            paints.append(paint / 1000)
            loads.append(load / 1000)
        errors = browser.console_errors()
    if errors:
        return f"console errors: {errors}"
    return statistics.median(paints), statistics.median(loads), statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-browser", action="store_true", help="skip the headless Chromium timing")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    directory = pathlib.Path(tempfile.mkdtemp(prefix="traceguard-benchmark-"))
    (directory / "blank.html").write_text("<!DOCTYPE html><title>blank</title>")
    print(f"HTML report, {LAYERS} layers x {RUNS_PER_LAYER:,} body runs (files in {directory})")
    for name, make in (("training", training_events), ("worst case", worst_case_events)):
        events_by_layer = make()
        document = render_html(events_by_layer)
        path = write_html(directory / f"{name.replace(' ', '_')}.html", events_by_layer)
        wall, cpu = _median_seconds(lambda events=events_by_layer: render_html(events), arguments.repeats)
        marks = document.count('<g class="mark"')
        print(f"{name:>10}: {path.stat().st_size / 1e6:5.2f} MB, {marks:,} marks "
              f"({marks / (LAYERS * RUNS_PER_LAYER):.3f} per run), render in Python {cpu:.2f} s CPU "
              f"({cpu / (LAYERS * RUNS_PER_LAYER) * 1e6:.1f} us per run), {wall:.2f} s wall")
        if not arguments.no_browser:
            browser = _browser_seconds(path, arguments.repeats)
            if isinstance(browser, str):
                print(f"{'':>10}  Chromium: {browser}")
            else:
                print(f"{'':>10}  Chromium: first paint {browser[0]:.2f} s, load event {browser[1]:.2f} s, "
                      f"{browser[2]:.2f} s through WebDriver")


if __name__ == "__main__":
    main()
