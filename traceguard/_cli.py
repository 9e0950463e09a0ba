"""The command line: `python -m traceguard demo [--keras {2,3}]` and `python -m traceguard run SCRIPT`."""

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
    demo = commands.add_parser("demo", help="run the 'why does tf.function trace my layer twice?' "
                               "layer and explain every run of its body")
    demo.add_argument("--keras", type=int, choices=(2, 3), default=None,
                      help="run on Keras 2 (tf_keras, or tf.keras on TensorFlow <= 2.15) or "
                      "Keras 3; default: the Keras that tf.keras is")
    run = commands.add_parser(
        "run", help="run a Python script under traceguard.watch() and report every Keras "
        "layer's body runs when it ends",
        description="Run SCRIPT as `python SCRIPT ARGS...` would, recording every run of every "
        "Keras layer's `call` body, and print the report to stderr when the script ends (also "
        "when it raises). The exit code is the script's.")
    run.add_argument("--output", metavar="FILE", help="write the report to FILE instead of stderr")
    run.add_argument("--html", metavar="FILE", help="also write the report as a self-contained HTML "
                     "file: a timeline of every layer's body runs, then tables")
    run.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    run.add_argument("arguments", metavar="ARGS", nargs=argparse.REMAINDER,
                     help="arguments for the script")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        from traceguard._demo import run_demo

        try:
            run_demo(sys.stdout, arguments.keras)
        except ImportError as error:
            parser.error(f"--keras {arguments.keras}: {error}")
    elif arguments.command == "run":
        from traceguard._diagnosis.run import run_script

        return run_script(arguments.script, arguments.arguments, arguments.output, sys.stderr,
                          html=arguments.html)
    return 0
