#!/usr/bin/env python
"""Defaults on synthetic sets shaped like common small UCI regression sets.

    python asv_bench/shaped_sets_check.py [--sets yacht,airfoil,...] [--seeds 0,1]

The accuracy check (``defaults_check.py``) runs on the real sets we have;
the defaults are also judged on sets we do not have.  These generators copy
the *shape* of some well-known ones -- sizes, discrete design variables,
steep or smooth responses, noise level -- not their data:

``tiny``     120 rows, 4 inputs, y = sin 2x₁ + x₂² + 0.1ε (low noise, few rows);
``yacht``    308 rows, 5 discrete design inputs and one with 14 levels on
             which y grows exponentially, noise 0.3 on a range of ~50;
``binary``   600 rows, 20 binary inputs, interactions, noise 0.3;
``highdim``  800 rows, Friedman #1 with 35 irrelevant inputs (40 in all);
``wine``     1599 rows, 11 skewed inputs, a rounded (integer) noisy target;
``airfoil``  1503 rows, 5 inputs (log-spread frequency, discrete angle, chord
             and velocity), a smooth response, noise 0.5 on a range of ~30.

Each set is split 75/25 (seeded), X and y standardised with the training
statistics.  For each set and seed: the test RMSE of
``MondrianKernelRidgeCV(random_state=seed)`` at its defaults over that of
exact Laplace kernel ridge tuned by ``defaults_check.tuned_laplace_krr``
(3-fold grid, widened at an edge), the two times, the selection, and
``HistGradientBoostingRegressor``'s ratio.  The defaults aim at a ratio of
at most 1.10.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults_check as dc  # noqa: E402

from mondrian import MondrianKernelRidgeCV  # noqa: E402


def _tiny(r):
    X = r.standard_normal((120, 4))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * r.standard_normal(120)


def _yacht(r):
    n = 308
    X = np.column_stack([r.choice([-5, -2.3, 0], n), r.choice(np.linspace(.53, .6, 5), n),
                         r.choice(np.linspace(4.3, 5.1, 6), n),
                         r.choice(np.linspace(2.8, 5.1, 6), n),
                         r.choice(np.linspace(3.0, 4.4, 5), n),
                         r.choice(np.linspace(.125, .45, 14), n)])
    y = 50 * np.exp(12 * (X[:, 5] - .45)) * (1 + .05 * X[:, 0]) + 0.3 * r.standard_normal(n)
    return X, y


def _binary(r):
    X = r.integers(0, 2, (600, 20)).astype(float)
    y = (X[:, 0] * X[:, 1] + X[:, 2] - 2 * X[:, 3] * X[:, 4] + .5 * X[:, 5]
         + .3 * r.standard_normal(600))
    return X, y


def _highdim(r):
    X = r.uniform(size=(800, 40))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - .5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + r.standard_normal(800))
    return X, y


def _wine(r):
    n = 1599
    X = r.standard_normal((n, 11))
    X[:, 3] = np.exp(X[:, 3])
    X[:, 4] = np.exp(.5 * X[:, 4])
    y = np.round(5.6 + .4 * X[:, 10] - .3 * X[:, 1] + .2 * X[:, 9]
                 + .15 * np.tanh(X[:, 0] * X[:, 2]) + .65 * r.standard_normal(n))
    return X, y


def _airfoil(r):
    n = 1503
    X = np.column_stack([np.exp(r.uniform(np.log(200), np.log(20000), n)),
                         r.choice([0, 2, 4, 8, 12, 16, 22], n),
                         r.choice([.025, .05, .1, .15, .2, .3], n),
                         r.choice([31.7, 39.6, 55.5, 71.3], n),
                         np.exp(r.uniform(np.log(.0004), np.log(.058), n))])
    f = np.log(X[:, 0])
    y = (130 - 3 * (f - 7.5) ** 2 + 0.2 * X[:, 1] - 20 * X[:, 2] + 0.05 * X[:, 3]
         - 50 * X[:, 4] + 2 * np.sin(2 * f) + 0.5 * r.standard_normal(n))
    return X, y


SETS = {"tiny": _tiny, "yacht": _yacht, "binary": _binary, "highdim": _highdim,
        "wine": _wine, "airfoil": _airfoil}


def make(name: str, seed: int) -> dc.Split:
    """The seeded 75/25 split of set ``name``, standardised."""
    r = np.random.default_rng(seed)
    X, y = SETS[name](r)
    idx = r.permutation(X.shape[0])
    tr, te = idx[:int(.75 * X.shape[0])], idx[int(.75 * X.shape[0]):]
    mx, sx = X[tr].mean(0), X[tr].std(0)
    sx[sx == 0] = 1.0
    my, sy = y[tr].mean(), y[tr].std()
    return dc.Split((X[tr] - mx) / sx, (y[tr] - my) / sy, (X[te] - mx) / sx, (y[te] - my) / sy)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seeds", default="0,1")
    args = ap.parse_args(argv)
    ratios = []
    for name in args.sets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            sp = make(name, seed)
            t0 = time.perf_counter()
            model = MondrianKernelRidgeCV(random_state=seed).fit(sp.X_train, sp.y_train)
            fit = time.perf_counter() - t0
            ours = dc.rmse(sp.y_test, model.predict(sp.X_test))
            exact = dc.tuned_laplace_krr(sp)
            hgb = dc.hist_gradient_boosting(sp, seed)
            ratios.append(ours / exact["rmse"])
            print(f"{name:8s} seed {seed} n={sp.X_train.shape[0]:5d}: ratio {ours / exact['rmse']:.3f} "
                  f"(rmse {ours:.4f} vs {exact['rmse']:.4f}), fit {fit:.2f} s vs grid "
                  f"{exact['time']:.2f} s, lifetime/scale "
                  f"{model.lifetime_ / model.path_['scale']:.3g}, alpha {model.alpha_:.2g}, "
                  f"{model.n_trees_} trees (excess {model.path_['trees'].get('sensitivity')}); "
                  f"exact gamma/g0 {exact['gamma_over_g0']:.3g}; hgb ratio "
                  f"{hgb['rmse'] / exact['rmse']:.3f}", flush=True)
    print(f"geometric mean ratio {np.exp(np.mean(np.log(ratios))):.3f}, largest {max(ratios):.3f}")


if __name__ == "__main__":
    main()
