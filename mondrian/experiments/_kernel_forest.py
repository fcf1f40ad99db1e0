"""What Figs. 9 and 10 share: one Mondrian forest on the CPU data, the kernel's
ridge weights and the forest's leaf values at any lifetime on its trees.

Balog et al. (2016), Sec. 6: with the normalised features φ_n (M entries
1/√M per row), both models predict ŷ = wᵀφ = (1/M) Σ_m ŷ⁽ᵐ⁾ with
w = M^{-1/2}[w⁽¹⁾ᵀ ⋯ w⁽ᴹ⁾ᵀ]ᵀ.  The kernel fits w jointly (ridge, eq. (3));
the forest fits each tree's w⁽ᵐ⁾ alone (eq. (4)): its leaf means, so its
w is the leaf means divided by √M.
"""
from __future__ import annotations

import argparse

import numpy as np

from ..datasets import load_cpu
from ..features import MondrianFeatures
from ..ridge import ridge_solve

__all__ = ["add_common_arguments", "check_common", "resolve_alpha", "cpu_data", "grow",
           "kernel_weights", "column_trees", "forest_weights", "AUTHORS_SGD_ALPHA"]


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-trees", type=int, default=50, help="M (50)")
    parser.add_argument("--max-lifetime", type=float, default=1e-5,
                        help="terminal lifetime Lambda (1e-5)")
    parser.add_argument("--alpha", type=float, default=None,
                        help="ridge delta^2 of the kernel in eq. (3) (default: N * 1e-4, "
                             "what the authors' SGDRegressor(alpha=1e-4) minimises; "
                             "1e-4 takes the paper's text literally)")
    parser.add_argument("--seed", type=int, default=0, help="seed (0)")
    parser.add_argument("--quick", action="store_true",
                        help="1500 training points, 10 trees")


#: The paper's ridge constant δ² = 1e-4 (Sec. 8, from Rahimi and Recht) was
#: passed by the authors' script as ``SGDRegressor(alpha=1e-4)``, whose
#: objective is (1/2N) Σ (yₙ - wᵀφₙ)² + (α/2)‖w‖²: in the paper's eq. (3),
#: Σ (yₙ - wᵀφₙ)² + δ²‖w‖², that is δ² = N·α.
AUTHORS_SGD_ALPHA = 1e-4


def check_common(args: argparse.Namespace) -> None:
    if args.n_trees < 1 or not args.max_lifetime > 0 or (args.alpha is not None
                                                         and not args.alpha > 0):
        raise ValueError("need --n-trees >= 1, --max-lifetime > 0 and --alpha > 0")


def resolve_alpha(args: argparse.Namespace, n_points: int) -> float:
    """--alpha, or N·1e-4 (the authors' SGD objective in eq. (3)'s scale)."""
    if args.alpha is None:
        args.alpha = AUTHORS_SGD_ALPHA * n_points
        print(f"ridge delta^2 = N * {AUTHORS_SGD_ALPHA:g} = {args.alpha:.4g} (the objective of "
              f"the authors' SGDRegressor(alpha={AUTHORS_SGD_ALPHA:g}) in eq. (3)'s scale)")
    return args.alpha


def cpu_data(args: argparse.Namespace):
    """(X, y, X_test, y_test) of the CPU data; --quick: 1500 training points
    drawn with the seed, 10 trees at most."""
    data = load_cpu()
    X, y = data.X_train, data.y_train
    if args.quick:
        keep = np.sort(np.random.default_rng(args.seed).choice(X.shape[0], 1500, replace=False))
        X, y = X[keep], y[keep]
        args.n_trees = min(args.n_trees, 10)
        print(f"--quick: {X.shape[0]} of {data.X_train.shape[0]} training points, "
              f"M = {args.n_trees}")
    return X, y, data.X_test, data.y_test


def grow(X: np.ndarray, args: argparse.Namespace) -> MondrianFeatures:
    """The one forest both models use: M trees grown to Λ."""
    return MondrianFeatures(n_trees=args.n_trees, lifetime=args.max_lifetime,
                            random_state=args.seed).fit(X)


def kernel_weights(features: MondrianFeatures, y_centred: np.ndarray, lam: float,
                   alpha: float) -> np.ndarray:
    """Exact ridge weights ŵ = (ΦᵀΦ + αI)⁻¹Φᵀy at λ on the training
    features (Cholesky of the primal system from the trees' Gram matrix while
    the cells are at most the points, of the dual system above)."""
    Phi = features.training_features(lam)
    n, c = Phi.shape
    gram = features.gram(lam) if c <= n else None
    return ridge_solve(Phi, y_centred, alpha, solver="cholesky", gram=gram).coef


def column_trees(features: MondrianFeatures, lam: float) -> np.ndarray:
    """Tree of every column of ``training_features(lam)`` (a forest grown in
    batch: tree m's cells are the columns col_offset[m]:col_offset[m + 1])."""
    _, offset = features.forest_.active_columns(lam)
    return np.repeat(np.arange(features.forest_.n_trees), np.diff(offset))


def forest_weights(features: MondrianFeatures, y_centred: np.ndarray, lam: float):
    """The unsmoothed forest's w at λ (Sec. 6): each cell's mean of the
    centred targets divided by √M; and each cell's number of points."""
    Phi = features.training_features(lam)
    counts = np.asarray(Phi.T @ np.ones(Phi.shape[0])) * np.sqrt(features.forest_.n_trees)
    sums = np.asarray(Phi.T @ y_centred) * np.sqrt(features.forest_.n_trees)
    return sums / counts / np.sqrt(features.forest_.n_trees), np.rint(counts).astype(np.int64)
