"""Defaults on small, smooth, low-noise data against tuned exact Laplace ridge.

    python asv_bench/small_smooth_check.py [--rows 100 250 500 1000]
                                           [--seeds 5]

x ~ N(0, I₅), y = sin 2x₁ + x₂²/2 + 0.1 ε (two of the five inputs matter),
2000 test points per seed.  For each size and seed: the test RMSE of
``MondrianKernelRidgeCV(random_state=seed)`` at its defaults over that of
scikit-learn's ``KernelRidge(kernel='laplacian')`` tuned by a 3-fold grid
(alpha 1e-4..10, gamma 1e-3..10 over 5, the dimension), the fit time and
the trees used (``n_trees_``, and the half forests' excess of
``path_['trees']``).  The exact ridge's best width on such data is far
wider than 1/median distance, where 1000 trees estimate the kernel too
noisily.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV

from mondrian import MondrianKernelRidgeCV


def target(X):
    return np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100, 250, 500, 1000])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    grid = {"alpha": np.logspace(-4, 1, 6), "gamma": np.logspace(-3, 1, 9) / 5}
    for n in args.rows:
        ratios = []
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            X = rng.standard_normal((n, 5))
            y = target(X) + 0.1 * rng.standard_normal(n)
            X_test = rng.standard_normal((2000, 5))
            y_test = target(X_test) + 0.1 * rng.standard_normal(2000)
            t0 = time.perf_counter()
            model = MondrianKernelRidgeCV(random_state=seed).fit(X, y)
            fit = time.perf_counter() - t0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exact = GridSearchCV(KernelRidge(kernel="laplacian"), grid, cv=3).fit(X, y)
            ours = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
            theirs = np.sqrt(np.mean((exact.predict(X_test) - y_test) ** 2))
            ratios.append(ours / theirs)
            trees = model.path_.get("trees", {})
            print(f"n={n} seed={seed}: RMSE ratio {ours / theirs:.3f}, fit {fit:.2f} s, "
                  f"{model.n_trees_} trees (half forests' excess "
                  f"{trees.get('sensitivity')})", flush=True)
        print(f"n={n}: geometric mean ratio {np.exp(np.mean(np.log(ratios))):.3f}, "
              f"largest {max(ratios):.3f}", flush=True)


if __name__ == "__main__":
    main()
