"""Online learning on the CPU stream: the issue's figures, measured.

    python asv_bench/online_cpu.py [--repeat 3]

1. One pass of the 6554 x 21 CPU training points, in arrival order, into 50
   trees at lambda = 1e-6 (MondrianFeatures.partial_fit: a fit on the first
   point, every other point inserted), per batch size, with river's AMFRegressor on the same stream
   when river is installed (learn_one per point).
2. Exact online ridge over the whole stream with 350 trees (alpha = 0.1)
   against the batch fit on all points: times, their ratio, and the
   largest difference of the final test predictions from a batch ridge
   solve on the online model's own trees (the exactness claim).
3. store_points=False with max_nodes=255: 10^6 points (the CPU rows resampled
   with small noise) streamed into 50 trees in batches of 10^4; the resident
   memory (RSS, /proc/self/statm) after 10^5 and after 10^6 points.
Times are the minimum over --repeat runs (the machine is shared: noisy).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as la

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks._cpu import cpu_arrays, relative_error  # noqa: E402
from mondrian import MondrianFeatures, MondrianKernelRidge  # noqa: E402


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def stream(model, X, y, batch_size, first=None):
    """partial_fit over the stream in batches; ``first``: size of the first
    batch (a fit), default ``batch_size``."""
    first = batch_size if first is None else first
    if y is None:
        model.partial_fit(X[:first])
    else:
        model.partial_fit(X[:first], y[:first])
    for a in range(first, X.shape[0], batch_size):
        if y is None:
            model.partial_fit(X[a:a + batch_size])
        else:
            model.partial_fit(X[a:a + batch_size], y[a:a + batch_size])
    return model


def rss_mb() -> float:
    """Current resident memory of this process in MB (Linux)."""
    import os

    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def bounded_stream(X) -> None:
    rng = np.random.default_rng(0)
    scale = 0.01 * X.std(axis=0)
    mf = MondrianFeatures(50, 1e-6, random_state=0, store_points=False, max_nodes=255)
    mf.partial_fit(X)
    seen = X.shape[0]
    for k in range(100):
        rows = X[rng.integers(0, X.shape[0], 10_000)]
        batch = rows + scale * rng.standard_normal(rows.shape)
        mf.partial_fit(batch)
        seen += batch.shape[0]
        if k in (9, 99):
            print(f"store_points=False, max_nodes=255, 50 trees: {seen} points streamed, "
                  f"{mf.forest_.n_nodes} nodes, {mf.n_cells_} cells, RSS {rss_mb():.1f} MB",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ridge-batches", default="1000,2000")
    parser.add_argument("--only", choices=("insert", "ridge", "memory"), default=None)
    parser.add_argument("--skip-river", action="store_true",
                        help="do not time river's AMFRegressor (about 100 s)")
    args = parser.parse_args()
    X, y, X_test, y_test = cpu_arrays()
    print(f"CPU stream: {X.shape[0]} x {X.shape[1]}")
    if args.only in (None, "memory"):
        bounded_stream(X)
    if args.only in (None, "insert"):
        insertion(X, y, args)
    if args.only in (None, "ridge"):
        ridge(X, y, X_test, y_test, args)


def insertion(X, y, args) -> None:
    for n_jobs in (1, 2):
        for bs in (1, 64, 256, 1024, 6554):
            # fit on the first point, every other point inserted
            t, mf = best(lambda: stream(MondrianFeatures(50, 1e-6, random_state=0,
                                                         n_jobs=n_jobs), X, None, bs, 1),
                         1 if bs == 1 else args.repeat)
            print(f"insert, 50 trees, n_jobs={n_jobs}, fit on 1 point then batches of {bs}: "
                  f"{t:.3f} s ({mf.n_cells_} cells)", flush=True)
    t, _ = best(lambda: MondrianFeatures(50, 1e-6, random_state=0).fit(X), args.repeat)
    print(f"batch fit, 50 trees: {t:.3f} s")
    try:
        if args.skip_river:
            raise ImportError
        from river import forest
    except ImportError:
        print("river not installed (or --skip-river): AMFRegressor not measured")
    else:
        rows = [dict(enumerate(map(float, r))) for r in X]
        amf = forest.AMFRegressor(n_estimators=50, seed=0)
        t0 = time.perf_counter()
        for x, target in zip(rows, y):
            amf.learn_one(x, float(target))
        print(f"river AMFRegressor(n_estimators=50), learn_one over the stream: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


def ridge(X, y, X_test, y_test, args) -> None:
    tb, batch = best(lambda: MondrianKernelRidge(350, 1e-6, alpha=0.1, random_state=0)
                     .fit(X, y), args.repeat)
    print(f"batch ridge fit, 350 trees: {tb:.2f} s, {batch.coef_.shape[0]} columns, "
          f"test error {relative_error(y_test, batch.predict(X_test)):.2f} %", flush=True)
    for bs in (int(b) for b in args.ridge_batches.split(",")):
        to, model = best(lambda: stream(MondrianKernelRidge(350, 1e-6, alpha=0.1,
                                                            random_state=0), X, y, bs),
                         args.repeat)
        f = model.features_
        G = f.gram()
        G[np.diag_indices_from(G)] += 0.1
        Phi = f.training_features()
        w = la.solve(G, Phi.T @ (y - y.mean()), assume_a="pos")
        pred, ref = model.predict(X_test), f.transform(X_test) @ w + y.mean()
        print(f"online ridge, batches of {bs}: {to:.2f} s = {to / tb:.1f} x batch; "
              f"{model.coef_.shape[0]} columns; test error "
              f"{relative_error(y_test, pred):.2f} %; max |online - batch solve on its trees| "
              f"/ max |pred| = {np.abs(pred - ref).max() / np.abs(ref).max():.1e}", flush=True)


if __name__ == "__main__":
    main()
