"""Rotated against axis-aligned Mondrian features on the CPU data, in one run.

    python asv_bench/rotated_timing.py [--repeat 15] [--n-jobs 1]

Times ``MondrianFeatures(n_trees=350, ...).fit_transform`` of the 6554 x 21
training data and ``transform`` of the 819 test points for: axis-aligned at
λ = 1e-6 (the paper's Mondrian), rotated at λ = 2.5e-7 (the paper's rotated
Mondrian, same width in Euclidean distance) and rotated at λ = 1e-6.  The
configurations run interleaved, repeat after repeat, so that a machine
shared with other jobs slows them alike; the minimum over the repeats is
reported (the least disturbed run), with the median beside it, and the
ratios to the axis-aligned minimum.  Also the transform alone: the
rotation's D² multiply-adds per point per tree (``Forest.transform``).
"""
import argparse
import time

import numpy as np

from mondrian import MondrianFeatures
from mondrian.datasets import load_cpu

CONFIGS = {"axis-aligned, λ = 1e-6": (None, 1e-6),
           "rotated, λ = 2.5e-7": ("uniform", 2.5e-7),
           "rotated, λ = 1e-6": ("uniform", 1e-6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--n-trees", type=int, default=350)
    args = parser.parse_args()
    data = load_cpu()
    X, X_test = data.X_train, data.X_test
    fit = {k: [] for k in CONFIGS}
    test = {k: [] for k in CONFIGS}
    cells = {}
    for r in range(args.repeat):
        for name, (rotation, lam) in CONFIGS.items():
            mf = MondrianFeatures(n_trees=args.n_trees, lifetime=lam, random_state=r,
                                  n_jobs=args.n_jobs, rotation=rotation)
            t0 = time.perf_counter()
            mf.fit_transform(X)
            fit[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            mf.transform(X_test)
            test[name].append(time.perf_counter() - t0)
            cells[name] = mf.n_cells_
    # the transform alone: every tree's rotation of the training points
    mf = MondrianFeatures(n_trees=args.n_trees, lifetime=0.0, random_state=0,
                          n_jobs=1, rotation="uniform").fit(X)
    rot = []
    for _ in range(max(3, args.repeat // 3)):
        t0 = time.perf_counter()
        for m in range(args.n_trees):
            mf.forest_.transform(X, m)
        rot.append(time.perf_counter() - t0)
    base = min(fit["axis-aligned, λ = 1e-6"])
    print(f"CPU data, {args.n_trees} trees, n_jobs={args.n_jobs}, {args.repeat} interleaved "
          f"repeats (min / median seconds):")
    for name in CONFIGS:
        print(f"  {name:24s} fit_transform {min(fit[name]):.3f} / {np.median(fit[name]):.3f}"
              f"  (x{min(fit[name]) / base:.2f})   transform(test) {min(test[name]):.3f}"
              f" / {np.median(test[name]):.3f}   cells {cells[name]}")
    print(f"  the rotations alone (350 x 6554 points x 21² multiply-adds, 1 thread): "
          f"{min(rot):.3f} / {np.median(rot):.3f}")


if __name__ == "__main__":
    main()
