"""``python -m mondrian fit``: Mondrian kernel ridge regression at one lifetime.

Fits :class:`~mondrian.MondrianKernelRidge` on the bundled CPU data (the
paper's setting: λ = 1e-6, M = 350) or on a CSV file and prints sizes,
times and the paper's test metric 100·‖ŷ - y‖₂/‖y‖₂.
"""
from __future__ import annotations

import argparse
import time

from ._args import (add_dataset_arguments, add_forest_arguments, load_dataset, nonneg_float,
                    positive_float)

__all__ = ["add_command", "run"]


def add_command(subparsers) -> None:
    """Register ``fit`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "fit", help="Mondrian kernel ridge regression on the CPU data or a CSV file",
        description="Fit MondrianKernelRidge and report the test error 100*||y_hat-y||/||y||. "
                    "Default: the bundled CPU data at the paper's setting "
                    "(lifetime 1e-6, 350 trees).")
    add_dataset_arguments(p)
    p.add_argument("--lifetime", type=nonneg_float, default=None,
                   help="kernel lifetime (inverse width); default 1e-6 for CPU, "
                        "10 / (L1 diameter of the training data) for --dataset")
    p.add_argument("--alpha", type=positive_float, default=0.1,
                   help="ridge regularisation (default 0.1)")
    add_forest_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Body of ``python -m mondrian fit``."""
    from ..metrics import relative_error
    from ..ridge import MondrianKernelRidge

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
