"""The command line: `python -m traceguard demo`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m traceguard",
        description="See, explain and control when Keras and TensorFlow run a layer's `call`.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="run the 'why does tf.function trace my layer twice?' "
                        "layer and explain every run of its body")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    if arguments.command == "demo":
        from traceguard._demo import run_demo

        run_demo(sys.stdout)
    return 0
