"""``python -m mondrian experiment NAME``: reproduce a figure or table of the papers.

Each module of :mod:`mondrian.experiments` becomes a sub-command with its
own options and ``--output-dir`` (also spelt ``--out``; default: the current
directory, created if missing and printed); it writes a CSV of its numbers
and a PNG there.
"""
from __future__ import annotations

from ._args import add_output_argument, prepare_output_dir

__all__ = ["add_command"]


def add_command(subparsers) -> None:
    """Register ``experiment`` and one sub-command per experiment module."""
    from ..experiments import available_experiments

    exp = subparsers.add_parser("experiment", help="reproduce a figure or table of the papers",
                                description="Run one reproduction; each writes a CSV and a PNG.")
    sub = exp.add_subparsers(dest="name", metavar="NAME", required=True)
    for name, module in available_experiments().items():
        p = sub.add_parser(name, help=module.DESCRIPTION, description=module.DESCRIPTION)
        # --out is the older spelling; the modules read args.out.
        add_output_argument(p, "--out", dest="out")
        module.add_arguments(p)
        p.set_defaults(func=_in_output_dir(module.run))


def _in_output_dir(run):
    """``run`` after creating and printing the output directory ``args.out``."""
    def run_in_output_dir(args):
        args.out = str(prepare_output_dir(args.out))
        return run(args)
    return run_in_output_dir
