"""Runs one program under the oracle, in this process, and writes the result as JSON.

Usage: python tests/oracle/observe.py BACKEND RESULT.json [--offline-data] PROGRAM.py [ARGS...]

The program runs as `__main__` (`runpy`) inside `oracle.observe()`: the backend's own record and
`traceguard.watch(trace_file=...)` at once. `--offline-data` first replaces `keras.datasets`'
loaders with small synthetic data (`offline_data.py`). The program's own failure is recorded (`status` 1)
and the checks still run on what was recorded until then.
"""

import json
import os
import runpy
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle import observe  # noqa: E402


def main() -> int:
    backend, out, program, *arguments = sys.argv[1:]
    if program == "--offline-data":
        import offline_data

        offline_data.install()
        program, *arguments = arguments
    result = {"program": program, "backend": backend, "status": 0}
    sys.argv = [program, *arguments]
    with tempfile.TemporaryDirectory(prefix="traceguard-oracle-") as directory:
        with observe(backend, result, directory):
            try:
                runpy.run_path(program, run_name="__main__")
            except BaseException as error:  # noqa: BLE001 - the program's failure is part of the run.
                result["status"] = 1
                result["error"] = f"{type(error).__name__}: {error}"[:300]
                traceback.print_exc()
    result.pop("records", None)
    with open(out, "w") as file:
        json.dump(result, file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
