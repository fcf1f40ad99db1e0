"""What the commands share: argument types, the data and model options, and
loading the data with its default lifetime.

The bottom of the command-line layer: it imports no command module.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

__all__ = ["positive_int", "nonneg_int", "nonneg_float", "positive_float", "positive_floats",
           "n_jobs", "csv_file",
           "add_dataset_arguments", "add_forest_arguments", "add_output_argument",
           "prepare_output_dir", "load_dataset"]


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonneg_int(text: str) -> int:
    """argparse type: an integer >= 0 (a seed)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def nonneg_float(text: str) -> float:
    """argparse type: a finite float >= 0."""
    value = float(text)
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    value = float(text)
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
    return value


def positive_floats(text: str) -> tuple[float, ...]:
    """argparse type: comma-separated finite floats > 0, at least one."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"must be comma-separated numbers: {text}") from exc
    if not values or any(not np.isfinite(v) or v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be finite and > 0: {text}")
    return values


def n_jobs(text: str) -> int:
    """argparse type: a thread count as ``n_jobs`` takes it (nonzero; -1 all cores)."""
    from .._validation import resolve_n_jobs

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("must be nonzero (-1: all cores), got 0")
    try:
        resolve_n_jobs(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def csv_file(text: str) -> str:
    """argparse type: the path of an existing file (checked before any work)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"not a file: {text!r}")
    return text


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """The data options: --dataset, --target, --test-fraction."""
    parser.add_argument("--dataset", metavar="PATH.csv", type=csv_file,
                        help="numeric CSV file (header optional); default: bundled CPU data")
    parser.add_argument("--target", type=int, default=-1,
                        help="target column of --dataset (default: last)")
    parser.add_argument("--test-fraction", type=float, default=0.2,
                        help="fraction of --dataset rows held out for testing (default 0.2)")


def add_forest_arguments(parser: argparse.ArgumentParser, *, n_trees: int = 350) -> None:
    """The model options of every command: --n-trees (default ``n_trees``),
    --solver, --random-state, --n-jobs."""
    parser.add_argument("--n-trees", type=positive_int, default=n_trees,
                        help=f"number of Mondrian trees M (default {n_trees})")
    parser.add_argument("--solver", choices=("auto", "cholesky", "cg"), default="auto")
    parser.add_argument("--random-state", type=nonneg_int, default=0, help="seed (default 0)")
    parser.add_argument("--n-jobs", type=n_jobs, default=-1,
                        help="threads (default -1: all cores; nonzero)")


def add_output_argument(parser: argparse.ArgumentParser, *aliases: str,
                        dest: str = "output_dir") -> None:
    """The --output-dir option of a command that writes files (default: the
    current directory); ``aliases`` are further option strings."""
    parser.add_argument("--output-dir", *aliases, dest=dest, default=".", metavar="DIR",
                        help="directory for the files written, created if missing and "
                             "printed (default: the current directory)")


def prepare_output_dir(path: str | Path) -> Path:
    """Create the output directory ``path`` if missing, print its absolute path
    and return it.  Raises ValueError if ``path`` exists and is not a directory
    (OSError if it cannot be created)."""
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output-dir {str(path)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    print(f"output directory: {out}")
    return out


def load_dataset(args: argparse.Namespace, lifetime: float | None, *,
                 per_diameter: float):
    """The data of ``args`` and the lifetime to use, with how it was chosen.

    ``lifetime`` if given; else the paper's 1e-6 for the bundled CPU data, or
    ``per_diameter`` / (L1 diameter of the training data) for a CSV file, a
    scale-free default (CPU: 10 / 6.6e6 ≈ 1.5e-6).

    Returns
    -------
    (TrainTestData, float, str)
    """
    from ..datasets import load_cpu, load_csv

    if args.dataset is None:
        data = load_cpu()
        if lifetime is None:
            return data, 1e-6, " (the paper's setting)"
        return data, lifetime, ""
    data = load_csv(args.dataset, target=args.target, test_fraction=args.test_fraction,
                    random_state=args.random_state)
    if lifetime is not None:
        return data, lifetime, ""
    diameter = float(np.ptp(data.X_train, axis=0).sum())
    how = f" ({per_diameter:g} / L1 diameter of the training data; set --lifetime)"
    return data, (per_diameter / diameter if diameter > 0 else 1.0), how
