import sys

from traceguard._cli import main

sys.exit(main(prog="python -m traceguard"))
