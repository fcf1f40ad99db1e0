"""``python -m mondrian experiment NAME``: reproduce a figure or table of the papers.

Each module of :mod:`mondrian.experiments` becomes a sub-command with its
own options and ``--out``; it writes a CSV of its numbers and a PNG.
"""
from __future__ import annotations

__all__ = ["add_command"]


def add_command(subparsers) -> None:
    """Register ``experiment`` and one sub-command per experiment module."""
    from ..experiments import available_experiments

    exp = subparsers.add_parser("experiment", help="reproduce a figure or table of the papers",
                                description="Run one reproduction; each writes a CSV and a PNG.")
    sub = exp.add_subparsers(dest="name", metavar="NAME", required=True)
    for name, module in available_experiments().items():
        p = sub.add_parser(name, help=module.DESCRIPTION, description=module.DESCRIPTION)
        p.add_argument("--out", default=".", metavar="DIR",
                       help="directory for the CSV and PNG (default: current directory)")
        module.add_arguments(p)
        p.set_defaults(func=module.run)
