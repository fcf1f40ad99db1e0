"""Mondrian forests at their defaults against scikit-learn's tree ensembles.

    python asv_bench/mondrian_forest_check.py [--data cpu ccpp concrete energy protein]
                                              [--trees 100] [--n-jobs 2] [--seed 0]

For each dataset (``smooth``: y = sin(6x₀) + x₁ + N(0, 0.1²) on the unit
square, 2000 + 2000 points; the paper's CPU split; otherwise a random 80/20
split of ``../shared/data/<name>``, seeded), X and y standardised with the training
statistics: test RMSE (in units of the training targets' sd), fit and
predict times, for

* ``MondrianForestRegressor()`` at its defaults (lifetime and smoothing
  selected on 20 % held-out points, then inserted), with the coverage of the
  ±1.96·std intervals of ``predict(X, return_std=True)`` and their mean
  width;
* the same forest without smoothing (the paper's Sec. 8.3 "forest") at its
  selected lifetime;
* ``RandomForestRegressor`` and ``ExtraTreesRegressor`` with as many trees;

and for classification (``--classify``, default cod_rna: a seeded subset of
``--rows`` rows of its 59535, 80/20 split, X standardised) test accuracy and
log-loss of ``MondrianForestClassifier()`` against ``RandomForestClassifier``
and ``ExtraTreesClassifier``.

Every estimator gets the same ``n_jobs``.  Times are single runs on a
shared machine: noisy.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.metrics import log_loss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from defaults_check import (data_home, load_ccpp, load_concrete, load_energy,  # noqa: E402
                            load_protein)

from mondrian import MondrianForestClassifier, MondrianForestRegressor  # noqa: E402

LOADERS = {"ccpp": load_ccpp, "concrete": load_concrete, "energy": load_energy,
           "protein": load_protein}


def split(name, seed, home):
    if name == "smooth":
        # y = sin(6 x0) + x1 + N(0, 0.1²) on the unit square, 2000 + 2000
        rng = np.random.default_rng(seed)
        X = rng.random((4000, 2))
        y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=4000)
        Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
    elif name == "cpu":
        from mondrian.datasets import load_cpu
        d = load_cpu()
        Xtr, ytr, Xte, yte = d.X_train, d.y_train, d.X_test, d.y_test
    else:
        X, y = LOADERS[name](home)
        perm = np.random.default_rng(seed).permutation(len(y))
        n_test = len(y) // 5
        te, tr = perm[:n_test], perm[n_test:]
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    ym, ys = ytr.mean(), ytr.std()
    return ((Xtr - mu) / sd, (ytr - ym) / ys, (Xte - mu) / sd, (yte - ym) / ys)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="*", default=["smooth", "cpu", "ccpp", "concrete", "energy"])
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--classify", nargs="*", default=["cod_rna"])
    ap.add_argument("--rows", type=int, default=10000)
    args = ap.parse_args(argv)
    home = data_home(args.data_home)
    print(f"{'data':9s} {'n x d':>10s} {'model':28s} {'rmse':>7s} {'fit s':>7s} "
          f"{'pred s':>7s}  notes")
    for name in args.data:
        Xtr, ytr, Xte, yte = split(name, args.seed, home)
        shape = f"{Xtr.shape[0]}x{Xtr.shape[1]}"

        def report(label, fit_s, pred_s, mean, notes=""):
            rmse = float(np.sqrt(np.mean((mean - yte) ** 2)))
            print(f"{name:9s} {shape:>10s} {label:28s} {rmse:7.4f} {fit_s:7.2f} "
                  f"{pred_s:7.2f}  {notes}", flush=True)

        mf = MondrianForestRegressor(n_trees=args.trees, random_state=args.seed,
                                     n_jobs=args.n_jobs)
        fit_s, _ = timed(lambda: mf.fit(Xtr, ytr))
        pred_s, (mean, std) = timed(lambda: mf.predict(Xte, return_std=True))
        cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
        report("MondrianForest (defaults)", fit_s, pred_s, mean,
               f"lifetime {mf.lifetime_:.3g} (max {mf.max_lifetime_:.3g}), "
               f"hyper {mf.hyper_}, 95% coverage {cover:.3f}, mean std {std.mean():.3f}")
        raw = MondrianForestRegressor(n_trees=args.trees, random_state=args.seed,
                                      n_jobs=args.n_jobs, smoothing=False,
                                      lifetime=mf.lifetime_)
        fit_s, _ = timed(lambda: raw.fit(Xtr, ytr))
        pred_s, mean = timed(lambda: raw.predict(Xte))
        report("MondrianForest (no smooth.)", fit_s, pred_s, mean,
               "at the defaults' lifetime, grown to it on all points")
        for label, cls in (("RandomForest", RandomForestRegressor),
                           ("ExtraTrees", ExtraTreesRegressor)):
            model = cls(n_estimators=args.trees, random_state=args.seed, n_jobs=args.n_jobs)
            fit_s, _ = timed(lambda: model.fit(Xtr, ytr))
            pred_s, mean = timed(lambda: model.predict(Xte))
            report(label, fit_s, pred_s, mean)
    for name in args.classify:
        classify(name, args, home)


def classify(name, args, home):
    if name != "cod_rna":
        raise ValueError(f"unknown classification set {name!r}")
    data = np.loadtxt(home / "cod_rna" / "cod-rna.train.csv", delimiter=",")
    rng = np.random.default_rng(args.seed)
    rows = rng.permutation(data.shape[0])[:args.rows]
    X, y = data[rows, 1:], data[rows, 0].astype(int)
    n_test = len(y) // 5
    Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    shape = f"{Xtr.shape[0]}x{Xtr.shape[1]}"
    print(f"\n{'data':9s} {'n x d':>10s} {'model':28s} {'acc':>7s} {'logloss':>7s} "
          f"{'fit s':>7s}  notes")
    models = [("MondrianForest (defaults)",
               MondrianForestClassifier(n_trees=args.trees, random_state=args.seed,
                                        n_jobs=args.n_jobs)),
              ("RandomForest", RandomForestClassifier(n_estimators=args.trees,
                                                      random_state=args.seed,
                                                      n_jobs=args.n_jobs)),
              ("ExtraTrees", ExtraTreesClassifier(n_estimators=args.trees,
                                                  random_state=args.seed, n_jobs=args.n_jobs))]
    for label, model in models:
        fit_s, _ = timed(lambda: model.fit(Xtr, ytr))
        proba = model.predict_proba(Xte)
        acc = float(np.mean(model.classes_[np.argmax(proba, 1)] == yte))
        loss = log_loss(yte, np.clip(proba, 1e-15, 1), labels=model.classes_)
        notes = (f"lifetime {model.lifetime_:.3g}, discount {model.hyper_}"
                 if hasattr(model, "lifetime_") else "")
        print(f"{name:9s} {shape:>10s} {label:28s} {acc:7.4f} {loss:7.4f} {fit_s:7.2f}  {notes}",
              flush=True)


if __name__ == "__main__":
    main()
