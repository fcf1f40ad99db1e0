"""Online aggregation (AMF, ``aggregation=True``) of the Mondrian forests
against river's AMF: speed of one online pass, test RMSE and accuracy.

    python asv_bench/amf_check.py [--trees 50] [--n-jobs 2] [--seed 0]
                                  [--batches 1 1000 100] [--prequential 100]
                                  [--repeat 3]
                                  [--river-rows N] [--rows 10000] [--no-river]

1. Speed on the CPU data (6554 x 21 training points, X and y standardised
   with the training statistics), ``--trees`` trees: ``fit`` with
   aggregation (trees grown in batch, then the points taken in order
   through them), one online pass of ``partial_fit`` over the stream in
   batches of each ``--batches`` size (ending when the points that
   ``partial_fit`` keeps aside are in the trees), and a prequential pass
   (predict each batch of ``--prequential`` points, then learn it).  Minimum over ``--repeat`` runs
   (the machine is shared: times are noisy).
2. Test RMSE (units of the training targets' sd) of
   ``MondrianForestRegressor(aggregation=True)`` at its defaults (after
   ``fit``, and after the online pass in batches of the last ``--batches``
   size), of the default forest (lifetime selected, aggregation='auto') for reference,
   and of river's ``forest.AMFRegressor(n_estimators=--trees)`` at its
   defaults (step 1), one ``learn_one`` pass over the training points in
   order (on the first ``--river-rows`` of them when given: it is pure
   Python), on the smooth synthetic set (y = sin(6x₀) + x₁ + N(0, 0.1²),
   2000 + 2000 points) and on CPU.
3. Classification on cod_rna (a seeded subset of ``--rows`` rows, 80/20
   split, X standardised): accuracy and log-loss of
   ``MondrianForestClassifier(aggregation=True)`` and of river's
   ``forest.AMFClassifier`` (defaults: step 1, dirichlet 0.5).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import log_loss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from defaults_check import data_home  # noqa: E402
from mondrian_forest_check import split  # noqa: E402

from mondrian import MondrianForestClassifier, MondrianForestRegressor  # noqa: E402


def best_time(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def online(model, X, y, batch):
    for s in range(0, len(y), batch):
        model.partial_fit(X[s:s + batch], y[s:s + batch])
    model.amf_state_  # the pass ends when the waiting points are in the trees
    return model


def prequential(model, X, y, start, every):
    """Fit on the first ``start`` points, then predict each next point
    before learning it, in batches of ``every`` (predict a batch, then
    partial_fit it): the squared errors of the predictions."""
    model.fit(X[:start], y[:start])
    errors = []
    for s in range(start, len(y), every):
        errors.append((model.predict(X[s:s + every]) - y[s:s + every]) ** 2)
        model.partial_fit(X[s:s + every], y[s:s + every])
    return np.concatenate(errors)


def river_pass(model, X, y, Xte):
    t0 = time.perf_counter()
    for xi, yi in zip(X, y):
        model.learn_one(dict(enumerate(xi)), yi.item())
    learn = time.perf_counter() - t0
    return learn, [model.predict_one(dict(enumerate(xi))) for xi in Xte]


def river_proba(model, X, y, Xte, classes):
    t0 = time.perf_counter()
    for xi, yi in zip(X, y):
        model.learn_one(dict(enumerate(xi)), yi.item())
    learn = time.perf_counter() - t0
    proba = np.zeros((len(Xte), len(classes)))
    for i, xi in enumerate(Xte):
        p = model.predict_proba_one(dict(enumerate(xi)))
        proba[i] = [p.get(c.item(), 0.0) for c in classes]
    return learn, proba


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batches", type=int, nargs="*", default=[1, 1000, 100])
    ap.add_argument("--prequential", type=int, nargs="*", default=[100],
                    help="batch sizes of a predict-then-learn pass (each prediction "
                         "inserts the waiting points: a pass over the nodes per batch)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--river-rows", type=int, default=None)
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--no-river", action="store_true")
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args(argv)
    home = data_home(args.data_home)
    try:
        from river import forest as river_forest
    except ImportError:
        river_forest = None
    if args.no_river:
        river_forest = None

    def amf(**kw):
        return MondrianForestRegressor(n_trees=args.trees, random_state=args.seed,
                                       n_jobs=args.n_jobs, aggregation=True, **kw)

    # 1. speed
    Xtr, ytr, Xte, yte = split("cpu", args.seed, home)
    print(f"CPU {Xtr.shape[0]}x{Xtr.shape[1]}, {args.trees} trees, n_jobs={args.n_jobs}, "
          f"min of {args.repeat} runs (shared machine: noisy)")
    fit_s, model = best_time(lambda: amf().fit(Xtr, ytr), args.repeat)
    nodes = model.forest_.n_nodes / args.trees
    print(f"  fit (grow + one ordered pass)      {fit_s:7.3f} s   "
          f"{nodes:.0f} nodes/tree, lifetime {model.max_lifetime_:.3g}, step {model.step_:.3g}")
    for b in args.batches:
        pass_s, _ = best_time(lambda: online(amf(), Xtr, ytr, b), args.repeat)
        print(f"  online pass, batches of {b:5d}      {pass_s:7.3f} s")
    for every in args.prequential:
        secs, err = best_time(lambda: prequential(amf(), Xtr, ytr, 1000, every), 1)
        print(f"  prequential from 1000, batches of {every:4d}  {secs:7.3f} s   "
              f"rmse of the predictions before learning {np.sqrt(np.mean(err)):.4f}")

    # 2. regression accuracy
    print(f"\n{'data':7s} {'model':44s} {'rmse':>7s} {'learn s':>8s}  notes")
    for name in ("smooth", "cpu"):
        Xtr, ytr, Xte, yte = split(name, args.seed, home)

        def report(label, mean, secs, notes=""):
            rmse = float(np.sqrt(np.mean((np.asarray(mean) - yte) ** 2)))
            print(f"{name:7s} {label:44s} {rmse:7.4f} {secs:8.2f}  {notes}", flush=True)

        secs, m = best_time(lambda: amf().fit(Xtr, ytr), 1)
        mean, std = m.predict(Xte, return_std=True)
        cover = float(np.mean(np.abs(mean - yte) <= 1.96 * std))
        report("MondrianForest aggregation=True, fit", mean, secs,
               f"step {m.step_:.3g}, 95% coverage of return_std {cover:.3f}")
        b = args.batches[-1]
        secs, m = best_time(lambda: online(amf(), Xtr, ytr, b), 1)
        report(f"MondrianForest aggregation=True, online {b}", m.predict(Xte), secs,
               f"step {m.step_:.3g} (re-estimated after each insertion)")
        secs, m = best_time(lambda: MondrianForestRegressor(
            n_trees=args.trees, random_state=args.seed, n_jobs=args.n_jobs).fit(Xtr, ytr), 1)
        report("MondrianForest defaults (aggregation='auto')", m.predict(Xte), secs)
        if river_forest is not None:
            rows = len(ytr) if args.river_rows is None else min(args.river_rows, len(ytr))
            model = river_forest.AMFRegressor(n_estimators=args.trees, seed=args.seed)
            secs, pred = river_pass(model, Xtr[:rows], ytr[:rows], Xte)
            report("river AMFRegressor (defaults)", pred, secs,
                   f"learn_one on the first {rows} training points")

    # 3. classification
    data = np.loadtxt(home / "cod_rna" / "cod-rna.train.csv", delimiter=",")
    rows = np.random.default_rng(args.seed).permutation(data.shape[0])[:args.rows]
    X, y = data[rows, 1:], data[rows, 0].astype(int)
    n_test = len(y) // 5
    Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    print(f"\n{'data':7s} {'model':44s} {'acc':>7s} {'logloss':>7s} {'learn s':>8s}")

    def creport(label, proba, classes, secs):
        acc = float(np.mean(classes[np.argmax(proba, 1)] == yte))
        loss = log_loss(yte, np.clip(proba, 1e-15, 1), labels=classes)
        print(f"{'cod_rna':7s} {label:44s} {acc:7.4f} {loss:7.4f} {secs:8.2f}", flush=True)

    for label, kw in (("MondrianForest aggregation=True, fit", dict(aggregation=True)),
                      ("MondrianForest defaults (smoothed)", {})):
        secs, m = best_time(lambda: MondrianForestClassifier(
            n_trees=args.trees, random_state=args.seed, n_jobs=args.n_jobs, **kw).fit(Xtr, ytr),
            1)
        creport(label, m.predict_proba(Xte), m.classes_, secs)
    if river_forest is not None:
        classes = np.unique(ytr)
        model = river_forest.AMFClassifier(n_estimators=args.trees, seed=args.seed)
        secs, proba = river_proba(model, Xtr, ytr, Xte, classes)
        creport(f"river AMFClassifier (defaults), {len(ytr)} pts", proba, classes, secs)


if __name__ == "__main__":
    main()
