"""See it: HTML timelines of the "trace twice" layer and of a small model whose second fit retraces.

Run: python examples/html_timeline.py [--out DIR] [--screenshots DIR]

Writes seed_timeline.html and model_timeline.html (into a new temp directory
unless --out is given) and prints each layer's log. With --screenshots, also
renders them in headless Chromium to PNG, as in the README (this uses the test
suite's browser driver, tests/chromium.py, which needs Debian's chromium and
chromium-driver; pngquant, where installed, compresses them).
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import traceguard  # noqa: E402

keras = tf.keras  # The Keras that traceguard.TraceAwareLayer subclasses: Keras 3, or Keras 2.


class EagerLayer(traceguard.TraceAwareLayer):  # The seed question's layer.
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(32)

    def call(self, inputs):
        return self.dense(inputs)


class Projection(traceguard.TraceAwareLayer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, inputs):
        return inputs @ self.kernel


def seed_scenario(directory: pathlib.Path) -> pathlib.Path:
    """tf.function over a fresh layer: a symbolic pass, a trace, and a second trace for its variables."""
    layer = EagerLayer(name="eager_layer")
    graph_layer = tf.function(layer)
    inputs = tf.random.uniform([60, 28, 28])
    graph_layer(inputs)
    graph_layer(inputs)
    print(layer.trace_log.summary())
    return layer.trace_log.to_html(directory / "seed_timeline.html")


def model_scenario(directory: pathlib.Path) -> pathlib.Path:
    """A functional model fitted on 64 samples, then 70: the last batch of 6 retraces the train step."""
    rng = np.random.default_rng(0)
    inputs = keras.Input((8,))
    hidden = keras.layers.ReLU()(Projection(16, name="encoder")(inputs))
    outputs = Projection(4, name="head")(Projection(16, name="bottleneck")(hidden))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(rng.random((64, 8)), rng.random((64, 4)), batch_size=32, verbose=0)
    model.fit(rng.random((70, 8)), rng.random((70, 4)), batch_size=32, verbose=0)
    model.predict(rng.random((16, 8)), verbose=0)
    layers = [layer for layer in model.layers if isinstance(layer, traceguard.TraceAwareMixin)]
    for layer in layers:
        print(layer.trace_log.summary())
    return traceguard.write_html(directory / "model_timeline.html",
                                 {layer.name: layer.trace_log for layer in layers},
                                 title="traceguard: a small model, fitted twice")


def screenshots(pages: list[pathlib.Path], directory: pathlib.Path) -> None:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
    import chromium

    directory.mkdir(parents=True, exist_ok=True)
    with chromium.Browser(*chromium.find_or_install(), width=1300, height=800) as browser:
        for page in pages:
            browser.open(page)
            errors = browser.console_errors()
            if errors:
                raise RuntimeError(f"{page} logged console errors: {errors}")
            shot = browser.screenshot(directory / page.with_suffix(".png").name, "body > *", margin=16)
            if shutil.which("pngquant"):  # Debian's pngquant: a third of the size, no visible change.
                subprocess.run(["pngquant", "--quality=80-95", "--speed=1", "--force", "--output", str(shot),
                                str(shot)], check=True)
            print(f"wrote {shot}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, help="directory for the HTML files")
    parser.add_argument("--screenshots", type=pathlib.Path, help="directory for PNG screenshots")
    arguments = parser.parse_args()
    directory = arguments.out or pathlib.Path(tempfile.mkdtemp(prefix="traceguard-timelines-"))
    directory.mkdir(parents=True, exist_ok=True)
    pages = [seed_scenario(directory), model_scenario(directory)]
    for page in pages:
        print(f"wrote {page}")
    if arguments.screenshots:
        screenshots(pages, arguments.screenshots)


if __name__ == "__main__":
    main()
