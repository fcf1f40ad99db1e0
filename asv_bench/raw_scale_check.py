"""The automatic estimators on raw inputs, with and without the features' scales.

    python asv_bench/raw_scale_check.py [--seeds 0,1,2] [--sets cpu,units,mixed,outlier]

Fits each estimator at its defaults (``feature_scale='auto'``: the features
divided by their standard deviations, the robust IQR/1.349 of an extreme
tail, at least half the gap of a two-valued column) and with
``feature_scale=None`` (the inputs as given), and prints the test error:

* ``cpu``: the package's CPU data, the paper's split, raw features (the
  paper's metric 100·‖ŷ - y‖/‖y‖, and the share of test targets within
  ±1.96 predictive std for the forest regressor);
* ``units``: five uniform features z in units 10⁻⁶ .. 10⁶,
  y = sin 2πz₀ + z₄ + N(0, 0.1²), 1600 training and 400 test rows (R²);
* ``mixed``: three N(0, 1) features, two uniform ones in units of 10⁶ and
  three 0/1 columns, y = sin x₀ + x₁x₂ + N(0, 0.1²), 2000 rows, 80/20
  (RMSE over the test targets' sd);
* ``outlier``: four N(0, 1) features with one training value set to 10⁹,
  y as in ``mixed`` on the clipped inputs, 1500 rows, 80/20 (RMSE/sd).
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.bench_defaults import cpu_arrays  # noqa: E402
from mondrian import (DebiasedMondrianForestRegressor, MondrianForestRegressor,  # noqa: E402
                      MondrianKernelRidgeCV)
from mondrian.metrics import relative_error  # noqa: E402

ESTIMATORS = {"kernel ridge": MondrianKernelRidgeCV, "forest": MondrianForestRegressor,
              "debiased forest": DebiasedMondrianForestRegressor}


def _synthetic(name: str, seed: int):
    rng = np.random.default_rng(seed)
    if name == "units":
        Z = rng.random((2000, 5))
        y = np.sin(2 * np.pi * Z[:, 0]) + Z[:, 4] + 0.1 * rng.standard_normal(2000)
        return Z * 10.0 ** np.array([-6, -3, 0, 3, 6]), y, 1600
    if name == "mixed":
        X = np.c_[rng.standard_normal((2000, 3)), 1e6 * rng.random((2000, 2)),
                  rng.integers(0, 2, (2000, 3))]
    else:
        X = rng.standard_normal((1500, 4))
    Xc = np.clip(X, -5, 5) if name == "outlier" else X
    y = np.sin(Xc[:, 0]) + Xc[:, 1] * Xc[:, 2] + 0.1 * rng.standard_normal(X.shape[0])
    if name == "outlier":
        X[0, 0] = 1e9
    return X, y, int(0.8 * X.shape[0])


def _fit(cls, seed, scale, X, y):
    with warnings.catch_warnings():
        # raw units can leave the debiased forest's cells with one point each
        warnings.simplefilter("ignore", UserWarning)
        t0 = time.perf_counter()
        model = cls(random_state=seed, feature_scale=scale).fit(X, y)
    return model, time.perf_counter() - t0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sets", default="cpu,units,mixed,outlier")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.sets.split(","):
        for label, cls in ESTIMATORS.items():
            for scale in ("auto", None):
                cells = []
                for seed in seeds:
                    if name == "cpu":
                        X, y, X_test, y_test = cpu_arrays()
                    else:
                        X_all, y_all, n = _synthetic(name, seed)
                        X, y, X_test, y_test = X_all[:n], y_all[:n], X_all[n:], y_all[n:]
                    model, elapsed = _fit(cls, seed, scale, X, y)
                    if name == "cpu":
                        pred = model.predict(X_test)
                        cell = f"{relative_error(y_test, pred):.2f} %"
                        if cls is MondrianForestRegressor:
                            std = model.predict(X_test, return_std=True)[1]
                            cell += f" (cover {np.mean(np.abs(pred - y_test) <= 1.96 * std):.3f})"
                    else:
                        pred = model.predict(X_test)
                        mse = np.mean((pred - y_test) ** 2)
                        cell = (f"R² {1 - mse / np.var(y_test):.3f}" if name == "units"
                                else f"RMSE/sd {np.sqrt(mse) / np.std(y_test):.3f}")
                    cells.append(f"{cell} in {elapsed:.2f} s")
                print(f"{name:8s} {label:16s} feature_scale={scale!s:5s}: " + "; ".join(cells),
                      flush=True)


if __name__ == "__main__":
    main()
