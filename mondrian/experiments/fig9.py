"""Fig. 9 of Balog et al. (2016, Sec. 8.3): Mondrian kernel against Mondrian
forest on the same Mondrian samples, CPU relative error along the lifetime.

One forest of M = 50 trees is grown to Λ = 1e-5 on the CPU training data.
At every lifetime λ of a log grid in [1e-8, Λ]:

* the Mondrian kernel: exact ridge regression on the features at λ.  The
  paper's ridge constant is δ² = 1e-4, but the authors' script passed it
  as ``SGDRegressor(alpha=1e-4)``, whose objective (1/2N)Σ(yₙ - wᵀφₙ)² +
  (α/2)‖w‖² is eq. (3) with δ² = N·1e-4 (0.655 on the CPU data); that is
  the default here (``--alpha 1e-4`` takes the text literally).  The
  script also took one warm-started SGD epoch per split event rather than
  the exact minimiser;
* the "Mondrian forest" as the authors ran it: every tree predicts its
  leaf's mean target (their per-tree ridge with δ²/M on the 1/√M features
  gives S/(n + δ²), within 1e-4 relative of the mean), no smoothing --
  ``MondrianForestRegressor.from_features(features, y, lifetime=λ,
  smoothing=False)``;
* our Mondrian forest with hierarchical smoothing, its hyperparameters
  selected by leave-one-out at each λ (``from_features(..., lifetime=λ)``).

Train and test errors go to fig9.csv, the curves to fig9.png.  The paper's
finding: the kernel, fitting all trees' weights jointly, reaches a lower
test error at lower lifetimes (simpler partitions) than the forest.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ..forest import MondrianForestRegressor
from ..metrics import relative_error
from ._common import output_path, pyplot_or_none, save_figure, write_csv
from ._kernel_forest import (add_common_arguments, check_common, cpu_data, grow,
                             kernel_weights, resolve_alpha)

DESCRIPTION = "Fig. 9: CPU error of the Mondrian kernel vs the Mondrian forest on the same trees"

HEADER = ["lifetime", "n_cells", "kernel_train", "kernel_test", "forest_train", "forest_test",
          "smoothed_train", "smoothed_test", "smoothed_noise", "smoothed_kappa"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument("--min-lifetime", type=float, default=1e-8,
                        help="smallest lifetime of the grid (1e-8)")
    parser.add_argument("--n-lifetimes", type=int, default=16,
                        help="log-spaced lifetimes from --min-lifetime to Lambda (16)")


def lifetime_grid(args: argparse.Namespace) -> np.ndarray:
    return np.geomspace(args.min_lifetime, args.max_lifetime, args.n_lifetimes)


def run(args: argparse.Namespace) -> int:
    check_common(args)
    if args.quick:
        args.n_lifetimes = min(args.n_lifetimes, 7)
    if args.n_lifetimes < 2 or not 0 < args.min_lifetime < args.max_lifetime:
        raise ValueError("need --n-lifetimes >= 2 and 0 < --min-lifetime < --max-lifetime")
    X, y, X_te, y_te = cpu_data(args)
    resolve_alpha(args, X.shape[0])
    t0 = time.perf_counter()
    features = grow(X, args)
    mean = y.mean()
    rows = []
    for lam in lifetime_grid(args):
        lam = float(lam)
        coef = kernel_weights(features, y - mean, lam, args.alpha)
        k_train = relative_error(y, features.training_features(lam) @ coef + mean)
        k_test = relative_error(y_te, features.transform(X_te, lam) @ coef + mean)
        forest = MondrianForestRegressor.from_features(features, y, lifetime=lam,
                                                       smoothing=False, random_state=args.seed)
        smooth = MondrianForestRegressor.from_features(features, y, lifetime=lam,
                                                       random_state=args.seed)
        rows.append((lam, len(coef), k_train, k_test,
                     relative_error(y, forest.predict(X)), relative_error(y_te, forest.predict(X_te)),
                     relative_error(y, smooth.predict(X)), relative_error(y_te, smooth.predict(X_te)),
                     smooth.hyper_[0], smooth.hyper_[1]))
        r = rows[-1]
        print(f"lambda {lam:.3g} ({r[1]} cells): test error kernel {r[3]:.2f} %, "
              f"forest {r[5]:.2f} %, smoothed forest {r[7]:.2f} %")
    print(f"{len(rows)} lifetimes in {time.perf_counter() - t0:.1f} s")
    write_csv(output_path(args.out, "fig9.csv"), HEADER, rows)
    plt = pyplot_or_none()
    if plt is not None:
        table = np.array(rows, dtype=np.float64)
        fig, ax = plt.subplots(figsize=(7, 4))
        for col, label, style in ((5, '"M. forest" (test)', dict(color="C3", lw=2)),
                                  (4, '"M. forest" (train)', dict(color="C3", lw=1, ls=":")),
                                  (7, "smoothed M. forest (test)", dict(color="C1", lw=2)),
                                  (3, "M. kernel (test)", dict(color="C0", lw=2)),
                                  (2, "M. kernel (train)", dict(color="C0", lw=1, ls=":"))):
            ax.plot(table[:, 0], table[:, col], marker=".", label=label, **style)
        ax.set_xscale("log")
        ax.set_xlabel("lifetime λ")
        ax.set_ylabel("relative error [%]")
        ax.set_ylim(0, 25)
        ax.set_title(f"CPU, M = {args.n_trees} trees grown to Λ = {args.max_lifetime:g}, "
                     f"δ² = {args.alpha:g}")
        ax.legend(frameon=False, fontsize=8)
        save_figure(plt, fig, output_path(args.out, "fig9.png"))
    return 0
