"""Small synthetic stand-ins for `keras.datasets`' loaders, so that example programs run offline.

An example (a keras-io one, say) runs unchanged but for its data: `install()` replaces each
`load_data` below, in Keras's public API module and in its `keras.src` module, with one that
returns random data of the real dataset's shapes and dtypes, with few samples. The program's
tracing (shapes, dtypes, step functions) is what the oracle compares; the numbers are not.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

TRAIN, TEST = 256, 64


def _images(shape: tuple[int, ...], classes: int, label_shape: tuple[int, ...] = ()) -> Any:
    def load_data(*args: Any, **kwargs: Any) -> Any:
        generator = np.random.default_rng(0)
        return tuple((generator.integers(0, 256, (n, *shape), dtype=np.uint8),
                      generator.integers(0, classes, (n, *label_shape), dtype=np.uint8))
                     for n in (TRAIN, TEST))
    return load_data


def _sequences(default_words: int) -> Any:
    def load_data(path: str = "", num_words: int | None = None, *args: Any, **kwargs: Any) -> Any:
        generator = np.random.default_rng(0)
        words = num_words or default_words

        def split(n: int) -> tuple[Any, Any]:
            texts = np.empty(n, dtype=object)
            for i in range(n):
                texts[i] = list(generator.integers(1, words, generator.integers(10, 300)))
            return texts, generator.integers(0, 2, n)
        return split(TRAIN), split(TEST)
    return load_data


LOADERS = {
    "mnist": _images((28, 28), 10),
    "fashion_mnist": _images((28, 28), 10),
    "cifar10": _images((32, 32, 3), 10, (1,)),
    "cifar100": _images((32, 32, 3), 100, (1,)),
    "imdb": _sequences(88584),
}


def install() -> None:
    """Replaces `keras.datasets.<name>.load_data` for every name in `LOADERS`."""
    for name, load_data in LOADERS.items():
        for module in (f"keras.datasets.{name}", f"keras.src.datasets.{name}"):
            importlib.import_module(module).load_data = load_data
