"""``python -m mondrian``: see :mod:`mondrian.cli`."""
import sys

from mondrian.cli import main

if __name__ == "__main__":
    sys.exit(main())
