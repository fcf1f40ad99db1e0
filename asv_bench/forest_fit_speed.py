"""Batch fit time of MondrianForestRegressor on the CPU data (issue 15's target:
50 trees on 6554 x 21 points in <= 0.05 s), with where the time goes.

    python asv_bench/forest_fit_speed.py [--repeat 15] [--n-jobs ...] [--river-points 500]

Prints the minimum over ``--repeat`` runs (wall clock, a shared machine:
noisy, the minimum is the least disturbed run) of

* ``MondrianFeatures(50, lifetime).fit`` alone (the trees: the floor);
* ``MondrianForestRegressor(50, lifetime=...)`` at its defaults otherwise
  (smoothing hyperparameters selected by leave-one-out), for lifetime 1e-5,
  1e-6 and 'auto' (held-out selection of the lifetime, then insertion of the
  held-out points), and without smoothing;
* the parts of the 1e-5 fit: λ₀ (``lifetime_scale``), the node statistics,
  the leave-one-out selection (8 candidates in two calls);

and, when river is installed, its ``forest.AMFRegressor(n_estimators=50)``
(learn_one) on the first ``--river-points`` points of the stream (about 100
s on all of them), with the time per point.  onelearn is timed if installed
(classification only, so not here: it is reported as absent or skipped).
"""
import argparse
import time

import numpy as np

from mondrian import MondrianFeatures, MondrianForestRegressor
from mondrian.datasets import load_cpu
from mondrian.path.search import lifetime_scale


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--n-jobs", type=int, nargs="*", default=[None, 1],
                    help="thread counts (None: all cores)")
    ap.add_argument("--river-points", type=int, default=500)
    args = ap.parse_args(argv)
    d = load_cpu()
    X, y = d.X_train, d.y_train
    print(f"CPU data {X.shape[0]} x {X.shape[1]}; min of {args.repeat} runs (wall clock, s)")
    for n_jobs in args.n_jobs:
        tag = f"n_jobs={n_jobs}"
        for lam in (1e-5, 1e-6):
            t, _ = best(lambda: MondrianFeatures(50, lifetime=lam, random_state=0,
                                                 n_jobs=n_jobs).fit(X), args.repeat)
            print(f"{tag:10s} MondrianFeatures(50, {lam:g}).fit            {t:.4f}")
            t, m = best(lambda: MondrianForestRegressor(50, lifetime=lam, random_state=0,
                                                        n_jobs=n_jobs).fit(X, y), args.repeat)
            print(f"{tag:10s} MondrianForestRegressor(50, {lam:g}).fit     {t:.4f}  "
                  f"(hyper {m.hyper_})")
        t, _ = best(lambda: MondrianForestRegressor(50, lifetime=1e-5, random_state=0,
                                                    n_jobs=n_jobs, smoothing=False).fit(X, y),
                    args.repeat)
        print(f"{tag:10s}   ... lifetime 1e-5, smoothing=False           {t:.4f}")
        t, m = best(lambda: MondrianForestRegressor(50, random_state=0, n_jobs=n_jobs)
                    .fit(X, y), max(3, args.repeat // 5))
        print(f"{tag:10s} MondrianForestRegressor(50) (lifetime='auto') {t:.4f}  "
              f"(lifetime {m.lifetime_:.3g} of Lambda {m.max_lifetime_:.3g})")
    m = MondrianForestRegressor(50, lifetime=1e-5, random_state=0).fit(X, y)
    t, _ = best(lambda: lifetime_scale(X, np.random.default_rng(0)), args.repeat)
    print(f"parts of the 1e-5 fit: lifetime_scale {t:.4f}", end="")
    t, _ = best(m._compute_stats, args.repeat)
    print(f", node statistics {t:.4f}", end="")
    t, _ = best(lambda: m._select_in_sample(m._hyper_grid(), (0.03, 1.0)), args.repeat)
    print(f", leave-one-out selection {t:.4f}")
    try:
        from river import forest
    except ImportError:
        print("river not installed: AMFRegressor not timed")
    else:
        n = min(args.river_points, X.shape[0])
        rows = [dict(enumerate(map(float, r))) for r in X[:n]]
        amf = forest.AMFRegressor(n_estimators=50, seed=0)
        t0 = time.perf_counter()
        for x, target in zip(rows, y[:n]):
            amf.learn_one(x, float(target))
        t = time.perf_counter() - t0
        print(f"river AMFRegressor(n_estimators=50), learn_one on the first {n} points: "
              f"{t:.2f} s ({1e3 * t / n:.2f} ms per point; the cost per point grows with "
              f"the trees, so all {X.shape[0]} points take more than "
              f"{t * X.shape[0] / n:.0f} s)")
    try:
        import onelearn  # noqa: F401
    except ImportError:
        print("onelearn not installed: not timed")
    else:
        print("onelearn installed, but it has no regressor: not timed")


if __name__ == "__main__":
    main()
