"""Fig. 7 of Balog et al. (2016, Sec. 8.2): recovering a known kernel width.

Data are drawn from a Gaussian process with the Laplace kernel
exp(-λ₀‖x - x'‖₁), λ₀ = 10, on D = 2 uniform inputs (1000 training, 1000
validation and 1000 test points, noise variance 1e-4).  One Mondrian
forest of M = 50 trees is grown to Λ and ridge regression (α = noise
variance, the paper's δ²) follows the path; the validation error is
plotted against λ for Λ = 20 (the authors' script) and Λ = 100 (the
paper's text), and the selected λ̂ is printed (the authors' script found
λ̂ ≈ 15-20).
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
import scipy.linalg as la

from ..kernels import laplace_kernel
from ..metrics import relative_error, relative_error_from_mse
from ..path import MondrianKernelRidgeCV
from ._common import output_path, pyplot_or_none, save_figure, write_csv

DESCRIPTION = "Fig. 7: validation error along the lifetime path on Laplace-GP data (lambda_0=10)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lifetime0", type=float, default=10.0, help="true lambda_0 (10)")
    parser.add_argument("--n-points", type=int, default=1000,
                        help="points per train/validation/test set (1000)")
    parser.add_argument("--n-trees", type=int, default=50, help="M (50)")
    parser.add_argument("--noise", type=float, default=1e-4, help="noise variance (1e-4)")
    parser.add_argument("--max-lifetimes", default="20,100",
                        help="terminal lifetimes, comma-separated (20,100)")
    parser.add_argument("--n-lifetimes", type=int, default=100,
                        help="lifetimes on the validation grid (100)")
    parser.add_argument("--tol", type=float, default=1e-4, help="CG tolerance (1e-4)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true",
                        help="200 points per set, 10 trees, 20 grid lifetimes")


def sample_laplace_gp(n: int, dim: int, lifetime0: float, noise: float,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n uniform points in [0, 1]^dim and a draw of the Laplace-kernel GP
    there plus N(0, noise) observation noise."""
    X = rng.random((n, dim))
    K = laplace_kernel(X, X, lifetime=lifetime0)
    K[np.diag_indices_from(K)] += 1e-10
    f = la.cholesky(K, lower=True, check_finite=False) @ rng.standard_normal(n)
    return X, f + np.sqrt(noise) * rng.standard_normal(n)


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.n_points, args.n_trees = min(args.n_points, 200), min(args.n_trees, 10)
        args.n_lifetimes = min(args.n_lifetimes, 20)
        print("--quick: 200 points per set, 10 trees, 20 grid lifetimes")
    lams = [float(v) for v in args.max_lifetimes.split(",") if v.strip()]
    if (not lams or any(not v > 0 for v in lams) or args.n_points < 10 or args.n_trees < 1
            or not args.noise > 0 or not args.lifetime0 > 0):
        raise ValueError("need positive --max-lifetimes, --noise, --lifetime0; "
                         "--n-points >= 10, --n-trees >= 1")
    rng = np.random.default_rng(args.seed)
    n = args.n_points
    X, y = sample_laplace_gp(3 * n, 2, args.lifetime0, args.noise, rng)
    X_tr, y_tr, X_val, y_val, X_te, y_te = X[:n], y[:n], X[n:2 * n], y[n:2 * n], X[2 * n:], y[2 * n:]
    rows, curves = [], {}
    for lam_max in lams:
        model = MondrianKernelRidgeCV(n_trees=args.n_trees, max_lifetime=lam_max,
                                      alphas=(args.noise,), solver="cg", tol=args.tol,
                                      n_lifetimes=args.n_lifetimes, random_state=args.seed)
        with warnings.catch_warnings():
            # Fig. 7 is about ceilings Λ below the best lifetime: the estimator's
            # warning that the error still falls at max_lifetime is the point.
            warnings.filterwarnings("ignore", message="the validation error still falls")
            model.fit(X_tr, y_tr, X_val=X_val, y_val=y_val)
        p = model.path_
        val_err = relative_error_from_mse(p["validation_mse"][:, 0], y_val)
        test_err = relative_error(y_te, model.predict(X_te))
        print(f"Lambda = {lam_max:g}: selected lifetime {model.lifetime_:.3f} "
              f"(true {args.lifetime0:g}); validation error {val_err.min():.2f} %, "
              f"test error {test_err:.2f} %; path time {model.path_time_:.2f} s "
              f"({p['n_features'][-1]} features at Lambda)")
        curves[lam_max] = (p["lifetimes"], val_err, model.lifetime_)
        rows += [(lam_max, lam, err) for lam, err in zip(p["lifetimes"], val_err)]
    write_csv(output_path(args.out, "fig7.csv"),
              ["max_lifetime", "lifetime", "validation_error_percent"], rows)
    plt = pyplot_or_none()
    if plt is not None:
        fig, axes = plt.subplots(1, len(lams), figsize=(5.5 * len(lams), 4), squeeze=False)
        for ax, lam_max in zip(axes[0], lams):
            grid, err, sel = curves[lam_max]
            ax.plot(grid, err, label="validation error")
            ax.axvline(args.lifetime0, color="g", ls="--", label=f"true λ₀={args.lifetime0:g}")
            ax.axvline(sel, color="k", ls=":", label=f"selected λ̂={sel:.3g}")
            ax.set_xlabel("lifetime λ")
            ax.set_ylabel("validation error (%)")
            ax.set_title(f"Λ = {lam_max:g}, M = {args.n_trees}")
            ax.legend()
        save_figure(plt, fig, output_path(args.out, "fig7.png"))
    return 0
