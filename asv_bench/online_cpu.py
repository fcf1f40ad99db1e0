"""Online learning on the CPU stream: the issue's figures, measured.

    python asv_bench/online_cpu.py [--repeat 3]

1. One pass of the 6554 x 21 CPU training points, in arrival order, into 50
   trees at lambda = 1e-6 (MondrianFeatures.partial_fit; the first batch is
   a fit), per batch size, with river's AMFRegressor on the same stream
   when river is installed (learn_one per point).
2. Exact online ridge over the whole stream with 350 trees (alpha = 0.1)
   against the batch fit on all points: times, their ratio, and the
   largest difference of the final test predictions from a batch ridge
   solve on the online model's own trees (the exactness claim).
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


def stream(model, X, y, batch_size):
    for a in range(0, X.shape[0], batch_size):
        if y is None:
            model.partial_fit(X[a:a + batch_size])
        else:
            model.partial_fit(X[a:a + batch_size], y[a:a + batch_size])
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ridge-batches", default="1000,2000")
    args = parser.parse_args()
    X, y, X_test, y_test = cpu_arrays()
    print(f"CPU stream: {X.shape[0]} x {X.shape[1]}")
    for n_jobs in (1, 2):
        for bs in (1, 64, 256, 1024, 6554):
            t, mf = best(lambda: stream(MondrianFeatures(50, 1e-6, random_state=0,
                                                         n_jobs=n_jobs), X, None, bs),
                         1 if bs == 1 else args.repeat)
            print(f"insert, 50 trees, n_jobs={n_jobs}, batches of {bs}: {t:.3f} s "
                  f"({mf.n_cells_} cells)", flush=True)
    t, _ = best(lambda: MondrianFeatures(50, 1e-6, random_state=0).fit(X), args.repeat)
    print(f"batch fit, 50 trees: {t:.3f} s")
    try:
        from river import forest
    except ImportError:
        print("river is not installed: AMFRegressor not measured")
    else:
        rows = [dict(enumerate(map(float, r))) for r in X]
        amf = forest.AMFRegressor(n_estimators=50, seed=0)
        t0 = time.perf_counter()
        for x, target in zip(rows, y):
            amf.learn_one(x, float(target))
        print(f"river AMFRegressor(n_estimators=50), learn_one over the stream: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)

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
