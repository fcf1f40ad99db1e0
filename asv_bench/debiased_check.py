"""The debiased Mondrian forest (Cattaneo, Klusowski & Underwood): coverage,
accuracy against the plain forests, and times.

    python asv_bench/debiased_check.py [--replicates 50] [--trees 100] [--n-jobs 2]
                                       [--large 100000] [--skip-coverage] [--noise 0.5]

1. Coverage of the 95 % intervals of ``DebiasedMondrianForestRegressor()``
   at its defaults (J = 1, a = (1, 1.5), λ by the AIMSE rule of thumb,
   ``variance='loo'``) and with ``variance='cku'`` on
   y = sin(2πx₁) (+ x₂²) + N(0, s²), s = ``--noise``, x uniform on [0, 1]^d, n = 2000, at
   50 fixed interior points (uniform on [0.1, 0.9]^d), over independent
   replicates (data and trees): the mean coverage, its standard error over
   replicates (each replicate's 50 points share data and trees, so the
   replicate means are the independent draws), and the mean interval
   width; the same for ``debias_order=0`` (the plain forest at the same λ,
   whose intervals are not valid there: bias and sd are of the same order).
2. Fit and predict times on ``--large`` synthetic rows (d = 2, the set
   of item 1) with 10⁴ test points, the RMSE to μ and the intervals'
   coverage there, and the process's peak resident memory so far.
3. Test RMSE (in units of the training targets' sd; X and y standardised
   with training statistics) of the debiased forest, of the plain forest
   (J = 0) at the same λ, and of ``MondrianForestRegressor()`` at its
   defaults (smoothed, held-out lifetime) and without smoothing, on the
   paper's CPU split and on the ``smooth`` set of mondrian_forest_check.py
   (y = sin(6x₀) + x₁ + N(0, 0.1²), 2000 + 2000 points); the debiased
   forest's fit and predict times (mean only, and with intervals) there.

Times are single runs on a shared machine: noisy.
"""
import argparse
import resource
import time

import numpy as np

from mondrian import DebiasedMondrianForestRegressor, MondrianForestRegressor


def truth(X):
    return np.sin(2 * np.pi * X[:, 0]) + (X[:, 1] ** 2 if X.shape[1] > 1 else 0.0)


def coverage(d, replicates, trees, n_jobs, order, variance="loo", noise=0.5):
    grid = np.random.default_rng(99).uniform(0.1, 0.9, (50, d))
    cov, width, lam = [], [], []
    for r in range(replicates):
        rng = np.random.default_rng(r)
        X = rng.random((2000, d))
        y = truth(X) + noise * rng.normal(size=2000)
        model = DebiasedMondrianForestRegressor(n_trees=trees, debias_order=order,
                                                random_state=r, n_jobs=n_jobs,
                                                variance=variance).fit(X, y)
        _, ci = model.predict(grid, return_ci=True)
        f = truth(grid)
        cov.append(np.mean((ci[:, 0] <= f) & (f <= ci[:, 1])))
        width.append(np.mean(ci[:, 1] - ci[:, 0]))
        lam.append(model.lifetime_)
    cov = np.asarray(cov)
    return cov.mean(), cov.std(ddof=1) / np.sqrt(replicates), np.mean(width), np.mean(lam)


def split(name):
    if name == "smooth":
        rng = np.random.default_rng(0)
        X = rng.random((4000, 2))
        y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=4000)
        Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
    else:
        from mondrian.datasets import load_cpu
        d = load_cpu()
        Xtr, ytr, Xte, yte = d.X_train, d.y_train, d.X_test, d.y_test
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    ym, ys = ytr.mean(), ytr.std()
    return (Xtr - mu) / sd, (ytr - ym) / ys, (Xte - mu) / sd, (yte - ym) / ys


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=50)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--large", type=int, default=100000)
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--noise", type=float, default=0.5)
    args = parser.parse_args()
    kw = dict(n_trees=args.trees, random_state=0, n_jobs=args.n_jobs)

    if not args.skip_coverage:
        print(f"1. coverage of 95 % intervals, n = 2000, noise sd {args.noise}, "
              f"{args.replicates} replicates x 50 points, {args.trees} trees")
        print(f"{'d':>2} {'J':>2} {'variance':>8} {'coverage':>9} {'se':>6} {'width':>7} "
              f"{'mean λ':>8}")
        for d in (1, 2):
            for order, variance in ((1, "loo"), (1, "cku"), (0, "loo")):
                c, se, w, lam = coverage(d, args.replicates, args.trees, args.n_jobs, order,
                                         variance, args.noise)
                print(f"{d:>2} {order:>2} {variance:>8} {c:>9.3f} {se:>6.3f} {w:>7.3f} "
                      f"{lam:>8.2f}", flush=True)

    n = args.large
    rng = np.random.default_rng(0)
    X = rng.random((n, 2))
    y = truth(X) + 0.5 * rng.normal(size=n)
    X_test = rng.random((10000, 2))
    model, t_fit = timed(lambda: DebiasedMondrianForestRegressor(**kw).fit(X, y))
    pred, t_pred = timed(lambda: model.predict(X_test))
    (_, ci), t_ci = timed(lambda: model.predict(X_test, return_ci=True))
    f = truth(X_test)
    print(f"\n2. {n} x 2 synthetic rows, 10000 test points: λ {model.lifetime_:.3g}, "
          f"{model.features_.forest_.n_nodes} nodes; fit {t_fit:.2f} s, predict "
          f"{t_pred:.2f} s, predict with intervals {t_ci:.2f} s; RMSE to μ "
          f"{np.sqrt(np.mean((pred - f) ** 2)):.4f}, coverage "
          f"{np.mean((ci[:, 0] <= f) & (f <= ci[:, 1])):.4f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory so far {peak:.0f} MB")

    print("\n3. test RMSE / sd(y_train), and times (s)")
    print(f"{'data':<8} {'debiased':>9} {'J=0 same λ':>11} {'MF smooth':>10} {'MF leaf':>8} "
          f"{'λ':>7} {'fit':>6} {'pred':>6} {'pred+CI':>8}")
    for name in ("smooth", "cpu"):
        Xtr, ytr, Xte, yte = split(name)
        model, t_fit = timed(lambda: DebiasedMondrianForestRegressor(**kw).fit(Xtr, ytr))
        pred, t_pred = timed(lambda: model.predict(Xte))
        _, t_ci = timed(lambda: model.predict(Xte, return_ci=True))
        plain = DebiasedMondrianForestRegressor(debias_order=0, lifetime=model.lifetime_,
                                                **kw).fit(Xtr, ytr).predict(Xte)
        smooth = MondrianForestRegressor(**kw).fit(Xtr, ytr).predict(Xte)
        leaf = MondrianForestRegressor(smoothing=False, **kw).fit(Xtr, ytr).predict(Xte)
        rmse = [np.sqrt(np.mean((p - yte) ** 2)) for p in (pred, plain, smooth, leaf)]
        print(f"{name:<8} {rmse[0]:>9.3f} {rmse[1]:>11.3f} {rmse[2]:>10.3f} {rmse[3]:>8.3f} "
              f"{model.lifetime_:>7.3g} {t_fit:>6.2f} {t_pred:>6.2f} {t_ci:>8.2f}")


if __name__ == "__main__":
    main()
