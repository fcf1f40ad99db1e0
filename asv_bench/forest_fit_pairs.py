"""The forest's fit time over its trees', on a loaded machine.

    python asv_bench/forest_fit_pairs.py [--pairs 40]

Alternates ``MondrianFeatures(50, λ).fit`` (the trees alone) and
``MondrianForestRegressor(50, lifetime=λ).fit`` on the CPU data (seed 0,
all cores), λ = 1e-5 and 1e-6, and prints the minimum and median of each
and the median of the per-pair difference: what the forest adds to its
trees (statistics, λ₀, the smoothing's selection), the figure least
disturbed by other jobs' load, which hits both members of a pair alike.
"""
import argparse
import time

import numpy as np

from mondrian import MondrianFeatures, MondrianForestRegressor
from mondrian.datasets import load_cpu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=40)
    args = ap.parse_args(argv)
    d = load_cpu()
    X, y = d.X_train, d.y_train
    for lam in (1e-5, 1e-6):
        tf, tm = [], []
        for _ in range(args.pairs):
            t = time.perf_counter()
            MondrianFeatures(50, lifetime=lam, random_state=0).fit(X)
            tf.append(time.perf_counter() - t)
            t = time.perf_counter()
            MondrianForestRegressor(50, lifetime=lam, random_state=0).fit(X, y)
            tm.append(time.perf_counter() - t)
        tf, tm = np.array(tf), np.array(tm)
        print(f"lifetime {lam:g}: trees min {tf.min():.4f} median {np.median(tf):.4f}; "
              f"forest min {tm.min():.4f} median {np.median(tm):.4f}; forest - trees per "
              f"pair: median {np.median(tm - tf):.4f}, 10th percentile "
              f"{np.percentile(tm - tf, 10):.4f}")


if __name__ == "__main__":
    main()
