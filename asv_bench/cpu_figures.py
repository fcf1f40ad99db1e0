"""Print the foundation's performance figures on the CPU data, in one run.

    python asv_bench/cpu_figures.py [--repeat 15]

Medians over repeats of: ``MondrianFeatures(350, 1e-6).fit_transform`` of the
6554 x 21 training data (1 and 2 threads), ``transform`` of the 819 test
points, and the reference ``ExtraTreesRegressor(n_estimators=350,
max_features=1, max_leaf_nodes=15, bootstrap=False, n_jobs=2)`` fit, plus
the peak memory of the feature matrix.  The asv suite (``bench_features.py``)
tracks the same quantities across commits.
"""
import argparse
import time
import tracemalloc

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor

from mondrian import MondrianFeatures
from mondrian.datasets import load_cpu


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    d = load_cpu()
    X, y, X_test = d.X_train, d.y_train, d.X_test
    for n_trees in (50, 350):
        for n_jobs in (1, 2):
            make = lambda: MondrianFeatures(n_trees=n_trees, lifetime=1e-6, random_state=0,
                                            n_jobs=n_jobs)
            t_ft = median_time(lambda: make().fit_transform(X), args.repeat)
            mf = make().fit(X)
            t_tr = median_time(lambda: mf.transform(X_test), 3 * args.repeat)
            print(f"MondrianFeatures(n_trees={n_trees}, n_jobs={n_jobs}): "
                  f"fit_transform {1e3 * t_ft:7.1f} ms, transform(819 test) {1e3 * t_tr:6.2f} ms, "
                  f"{mf.n_cells_} columns")
    tracemalloc.start()
    Phi = MondrianFeatures(n_trees=350, lifetime=1e-6, random_state=0).fit_transform(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    phi_bytes = Phi.data.nbytes + Phi.indices.nbytes + Phi.indptr.nbytes
    print(f"peak traced memory of fit_transform (M=350): {peak / 2**20:.1f} MiB "
          f"(the CSR matrix itself: {phi_bytes / 2**20:.1f} MiB; N*M = {X.shape[0] * 350})")
    et = lambda: ExtraTreesRegressor(n_estimators=350, max_features=1, max_leaf_nodes=15,
                                     bootstrap=False, n_jobs=2, random_state=0).fit(X, y)
    print(f"ExtraTreesRegressor(350, max_features=1, max_leaf_nodes=15, n_jobs=2) fit: "
          f"{1e3 * median_time(et, max(3, args.repeat // 3)):7.1f} ms")


if __name__ == "__main__":
    main()
