"""Command line: ``python -m mondrian <command>``.

Commands
--------
fit
    Mondrian kernel ridge regression on the bundled CPU data (the paper's
    setting: λ = 1e-6, M = 350) or on a CSV file; prints sizes, times and
    the paper's test metric 100·‖ŷ - y‖₂/‖y‖₂.
experiment
    Reproduce a figure or table of the papers (``mondrian/experiments/``);
    each writes a CSV of its numbers and a PNG.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main", "build_parser", "relative_error"]


def relative_error(y_true, y_pred) -> float:
    """The paper's CPU metric, in percent: 100·‖ŷ - y‖₂ / ‖y‖₂."""
    y_true = np.asarray(y_true, dtype=np.float64)
    return float(100.0 * np.linalg.norm(np.asarray(y_pred) - y_true) / np.linalg.norm(y_true))


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _nonneg_float(text: str) -> float:
    value = float(text)
    if not np.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .experiments import available_experiments
    from .path_command import add_path_command

    parser = argparse.ArgumentParser(
        prog="python -m mondrian",
        description="Kernel learning with Mondrian random features (Balog et al. 2016).")
    parser.add_argument("--version", action="version", version=f"mondrian {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    fit = sub.add_parser(
        "fit", help="Mondrian kernel ridge regression on the CPU data or a CSV file",
        description="Fit MondrianKernelRidge and report the test error 100*||y_hat-y||/||y||. "
                    "Default: the bundled CPU data at the paper's setting "
                    "(lifetime 1e-6, 350 trees).")
    add_dataset_arguments(fit)
    fit.add_argument("--lifetime", type=_nonneg_float, default=None,
                     help="kernel lifetime (inverse width); default 1e-6 for CPU, "
                          "10 / (L1 diameter of the training data) for --dataset")
    fit.add_argument("--n-trees", type=_positive_int, default=350,
                     help="number of Mondrian trees M (default 350)")
    fit.add_argument("--alpha", type=_positive_float, default=0.1,
                     help="ridge regularisation (default 0.1)")
    fit.add_argument("--solver", choices=("auto", "cholesky", "cg"), default="auto")
    fit.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    fit.add_argument("--n-jobs", type=int, default=-1, help="threads (default -1: all cores)")
    fit.set_defaults(func=_cmd_fit)
    add_path_command(sub)

    exp = sub.add_parser("experiment", help="reproduce a figure or table of the papers",
                         description="Run one reproduction; each writes a CSV and a PNG.")
    exp_sub = exp.add_subparsers(dest="name", metavar="NAME", required=True)
    for name, module in available_experiments().items():
        p = exp_sub.add_parser(name, help=module.DESCRIPTION, description=module.DESCRIPTION)
        p.add_argument("--out", default=".", metavar="DIR",
                       help="directory for the CSV and PNG (default: current directory)")
        module.add_arguments(p)
        p.set_defaults(func=module.run)
    return parser


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """The data options shared by the commands: --dataset, --target, --test-fraction."""
    parser.add_argument("--dataset", metavar="PATH.csv",
                        help="numeric CSV file (header optional); default: bundled CPU data")
    parser.add_argument("--target", type=int, default=-1,
                        help="target column of --dataset (default: last)")
    parser.add_argument("--test-fraction", type=float, default=0.2,
                        help="fraction of --dataset rows held out for testing (default 0.2)")


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
    from .datasets import load_cpu, load_csv

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


def _cmd_fit(args: argparse.Namespace) -> int:
    from .ridge import MondrianKernelRidge

    data, lifetime, how = load_dataset(args, args.lifetime, per_diameter=10.0)
    print(data.describe())
    print(f"model: MondrianKernelRidge(n_trees={args.n_trees}, lifetime={lifetime:.6g}{how}, "
          f"alpha={args.alpha:g}, solver={args.solver!r})")
    model = MondrianKernelRidge(n_trees=args.n_trees, lifetime=lifetime, alpha=args.alpha,
                                solver=args.solver, random_state=args.random_state,
                                n_jobs=args.n_jobs)
    t0 = time.perf_counter()
    model.fit(data.X_train, data.y_train)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    y_pred = model.predict(data.X_test)
    t_pred = time.perf_counter() - t0
    train_err = relative_error(data.y_train, model.predict(data.X_train))
    test_err = relative_error(data.y_test, y_pred)
    print(f"features: {model.coef_.shape[0]} columns, {args.n_trees} non-zeros per row; "
          f"solver {model.solver_}" + (f" ({model.n_iter_} iterations)" if model.n_iter_ else ""))
    print(f"fit time: {t_fit:.3f} s   predict time ({data.X_test.shape[0]} points): "
          f"{1e3 * t_pred:.1f} ms")
    print(f"train error: {train_err:.2f} %")
    print(f"test error 100*||y_hat - y||/||y||: {test_err:.2f} %")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m mondrian``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
