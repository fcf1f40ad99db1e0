"""Command line: ``python -m mondrian <command>`` (also the ``mondrian`` script).

Commands
--------
fit
    Mondrian kernel ridge regression at one lifetime (:mod:`.fit`).
path
    The kernel width learnt along the Mondrian path (:mod:`.path`).
online
    Exact online ridge on a stream, with its learning curve (:mod:`.online`).
experiment
    Reproduce a figure or table of the papers (:mod:`.experiment`, one
    module each in :mod:`mondrian.experiments`).

Imports point one way: this module imports the command modules, which
import :mod:`._args` (argument types, data options, ``load_dataset``); no
command imports another, and nothing outside the CLI imports from it.
"""
from __future__ import annotations

import argparse
import sys

from . import experiment, fit, online, path

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m mondrian`` with every command registered."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="python -m mondrian",
        description="Kernel learning with Mondrian random features (Balog et al. 2016).")
    parser.add_argument("--version", action="version", version=f"mondrian {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in (fit, path, online, experiment):
        command.add_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m mondrian`` and of the ``mondrian`` script.

    Returns the exit status: 0 on success, 2 for invalid input (bad data,
    missing file; the message goes to stderr).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
