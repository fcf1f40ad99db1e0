"""The estimators changed in issues 11, 15 and 17 at their DEFAULT parameters
(only ``random_state=0``), on a small and a larger input, in one process.

    python asv_bench/review_defaults.py

* small: the CPU data (6554 train / 819 test, raw features; the paper's
  metric 100·‖ŷ - y‖/‖y‖ and RMSE/std(y)); Abalone for the SSGP (2927 / 1250).
* larger: a smooth synthetic set, x ~ U[0,1]^8, y = sin(2πx₁) + x₂x₃ + 0.1ε,
  3·10⁴ training rows (10⁶ for the SSGP is in ``asv_bench/ssgp_scale.py``).
Each line: fit time, predict time, test error; wall seconds on 2 cores.
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.bench_ssgp import abalone_arrays  # noqa: E402

from mondrian import (DebiasedMondrianForestRegressor, MondrianForestClassifier,  # noqa: E402
                      MondrianForestRegressor, MondrianSGDClassifier)
from mondrian.datasets import load_cpu  # noqa: E402
from mondrian.gp import SparseSpectrumGPRegressor  # noqa: E402


def synthetic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 8))
    y = np.sin(2 * np.pi * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


def run(name, model, X, y, Xt, yt, classify=False):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = model.predict(Xt)
    pt = time.perf_counter() - t0
    if classify:
        err = f"accuracy {np.mean(pred == yt):.4f}"
    else:
        rmse = float(np.sqrt(np.mean((pred - yt) ** 2)))
        err = (f"RMSE {rmse:.4f} ({rmse / np.std(yt):.3f} std), "
               f"paper metric {100 * np.linalg.norm(pred - yt) / np.linalg.norm(yt):.2f} %")
    print(f"{name}: fit {fit:.2f} s, predict {pt:.2f} s, {err}", flush=True)


def main():
    d = load_cpu()
    cpu = (d.X_train, d.y_train, d.X_test, d.y_test)
    Xs, ys = synthetic(30_000, 0)
    Xst, yst = synthetic(10_000, 1)
    big = (Xs, ys, Xst, yst)
    for label, data in (("CPU", cpu), ("synthetic 3e4", big)):
        run(f"MondrianForestRegressor() [{label}]", MondrianForestRegressor(random_state=0), *data)
        run(f"MondrianForestRegressor(aggregation=True) [{label}]",
            MondrianForestRegressor(aggregation=True, random_state=0), *data)
        run(f"DebiasedMondrianForestRegressor() [{label}]",
            DebiasedMondrianForestRegressor(random_state=0), *data)
    for label, data in (("CPU", cpu), ("synthetic 3e4", big)):
        X, y, Xt, yt = data
        cut = np.median(y)
        c, ct = (y > cut).astype(int), (yt > cut).astype(int)
        run(f"MondrianForestClassifier() [{label}, y > median]",
            MondrianForestClassifier(random_state=0), X, c, Xt, ct, classify=True)
        run(f"MondrianForestClassifier(aggregation=True) [{label}, y > median]",
            MondrianForestClassifier(aggregation=True, random_state=0), X, c, Xt, ct,
            classify=True)
        run(f"MondrianSGDClassifier() [{label}, y > median, standardised X]",
            MondrianSGDClassifier(random_state=0), (X - X.mean(0)) / X.std(0), c,
            (Xt - X.mean(0)) / X.std(0), ct, classify=True)
    Xa, ya, Xat, yat = abalone_arrays()
    run("SparseSpectrumGPRegressor() [Abalone]", SparseSpectrumGPRegressor(random_state=0),
        Xa, ya, Xat, yat)
    run("SparseSpectrumGPRegressor() [synthetic 3e4]", SparseSpectrumGPRegressor(random_state=0),
        *big)


if __name__ == "__main__":
    main()
