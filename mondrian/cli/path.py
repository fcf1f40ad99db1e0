"""``python -m mondrian path``: learn the kernel width along the path.

Runs :class:`~mondrian.MondrianKernelRidgeCV` on the bundled CPU data (or a
CSV file), prints the selected lifetime and alpha, the validation and test
errors (the paper's metric 100·‖ŷ - y‖₂/‖y‖₂) and the path time, and writes
``path.png`` (validation error and log marginal likelihood L(λ) against λ,
paper Sec. 4, Fig. 7/8) into ``--output-dir`` (default: the current
directory), whose absolute path it prints.  A progress bar goes to stderr when it
is a terminal.
"""
from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from ._args import (add_dataset_arguments, add_forest_arguments, add_output_argument,
                    load_dataset, nonneg_float, positive_float, positive_floats, positive_int,
                    prepare_output_dir)

__all__ = ["add_command", "run", "progress_verbosity"]


def progress_verbosity(stream=None) -> int:
    """``verbose`` of the command's estimator: 1 (a progress report,
    :mod:`mondrian._progress`) when ``stream`` (default stderr) is a
    terminal, 0 when it is a file or a pipe."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return int(bool(isatty and isatty()))


def add_command(subparsers) -> None:
    """Register ``path`` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "path", help="learn the kernel width (and alpha) along the Mondrian path",
        description="Grow one Mondrian forest to --max-lifetime, sweep every lifetime with "
                    "warm-started ridge regression (MondrianKernelRidgeCV) and select the "
                    "lifetime and alpha; default: the bundled CPU data, 350 trees, "
                    "lifetime up to 1e-6 (the paper's Sec. 8.2 setting).")
    add_dataset_arguments(p)
    p.add_argument("--max-lifetime", type=nonneg_float, default=None,
                   help="terminal lifetime; default 1e-6 for CPU, "
                        "20 / (L1 diameter of the training data) for --dataset")
    p.add_argument("--alphas", type=positive_floats, default=(0.1, 1.0),
                   help="comma-separated ridge regularisations (default 0.1,1)")
    p.add_argument("--selection", choices=("validation", "evidence"), default="validation")
    p.add_argument("--profile-scale", action="store_true",
                   help="evidence with the prior variance maximised per lifetime "
                        "(default: unit prior variance, as the paper)")
    p.add_argument("--validation-fraction", type=float, default=0.2,
                   help="fraction of the training data held out for validation (default 0.2)")
    p.add_argument("--n-lifetimes", type=positive_int, default=100,
                   help="lifetimes on the validation grid (default 100)")
    p.add_argument("--tol", type=positive_float, default=1e-3,
                   help="relative residual tolerance of the CG path (default 1e-3)")
    add_forest_arguments(p)
    add_output_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Body of ``python -m mondrian path``."""
    from ..metrics import relative_error, relative_error_from_mse
    from ..path import MondrianKernelRidgeCV

    out_dir = prepare_output_dir(args.output_dir)
    data, lam_max, _ = load_dataset(args, args.max_lifetime, per_diameter=20.0)
    print(data.describe())
    model = MondrianKernelRidgeCV(
        n_trees=args.n_trees, max_lifetime=lam_max, alphas=args.alphas,
        selection=args.selection, validation_fraction=args.validation_fraction,
        solver=args.solver, n_lifetimes=args.n_lifetimes, tol=args.tol,
        prior_variance="profile" if args.profile_scale else 1.0,
        random_state=args.random_state, n_jobs=args.n_jobs, verbose=progress_verbosity())
    print(f"model: {model!r}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        model.fit(data.X_train, data.y_train)
    for w in caught:
        print(f"note: {w.message}")
    p = model.path_
    print(f"path: {p['lifetimes'].shape[0]} lifetimes in [0, {lam_max:.6g}], "
          f"{p['n_features'][-1]} features at the end, solver {p['solver']}"
          + (f" (CG to relative residual {p['tol']:g})" if p["solver"] == "cg" else
             " (exact Cholesky up/down-dates)"))
    print(f"path time: {model.path_time_:.2f} s")
    print(f"selected lifetime: {model.lifetime_:.6g}   alpha: {model.alpha_:g}")
    val_rows = p["validation_rows"]
    if val_rows.size:
        val_err = relative_error_from_mse(p["validation_mse"], data.y_train[val_rows])
        g, a = np.unravel_index(np.nanargmin(val_err), val_err.shape)
        print(f"validation error 100*||y_hat - y||/||y||: {val_err[g, a]:.2f} % "
              f"(at lifetime {p['lifetimes'][g]:.6g}, alpha {p['alphas'][a]:g}; "
              f"weights then refitted on all {data.X_train.shape[0]} training points)")
    else:
        val_err = None
    if model.posterior_ is not None:
        lo, hi = model.posterior_.interval(0.95)
        print(f"posterior over lifetime (alpha {model.alpha_:g}): mode "
              f"{model.posterior_.mode():.6g}, mean {model.posterior_.mean():.6g}, "
              f"95% interval [{lo:.6g}, {hi:.6g}]")
    test_err = relative_error(data.y_test, model.predict(data.X_test))
    print(f"test error 100*||y_hat - y||/||y||: {test_err:.2f} %")
    _plot(model, val_err, out_dir / "path.png")
    return 0


def _plot(model, val_err, out) -> None:
    from ..experiments import pyplot_or_none, save_figure

    plt = pyplot_or_none()
    if plt is None:
        return

    p = model.path_
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    if val_err is not None:
        for a, alpha in enumerate(p["alphas"]):
            ax.plot(p["lifetimes"], val_err[:, a], label=f"alpha={alpha:g}")
        ax.set_ylabel("validation error (%)")
    else:
        for a, alpha in enumerate(p["alphas"]):
            ax.plot(p["lifetimes"], p["train_mse"][:, a], label=f"alpha={alpha:g}")
        ax.set_ylabel("training MSE")
    ax.axvline(model.lifetime_, color="k", ls=":", label="selected")
    ax.set_xlabel("lifetime λ")
    ax.legend()
    ax = axes[1]
    if "event_log_marginal_likelihood" in p:
        for a, alpha in enumerate(p["alphas"]):
            ax.step(p["event_lifetimes"], p["event_log_marginal_likelihood"][:, a],
                    where="post", label=f"alpha={alpha:g}")
        ax.set_ylabel("log marginal likelihood L(λ)")
        ax.legend()
    else:
        ax.text(0.5, 0.5, "L(λ) needs the exact solver\n(--solver cholesky, fewer trees)",
                ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("lifetime λ")
    fig.suptitle(f"Mondrian kernel-width path, M={model.n_trees}")
    save_figure(plt, fig, out)
