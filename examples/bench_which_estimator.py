"""Measure the trade-offs quoted in the documentation's "Which estimator should I use?".

Not a gallery example (it is not executed when the documentation is built):
run it with the package installed, from anywhere::

    python examples/bench_which_estimator.py            # every method, seed 0
    python examples/bench_which_estimator.py --methods exact,hgb --seeds 0,1

On the bundled CPU data (6554 training and 819 test rows, 21 raw features)
each method is fitted in a fresh subprocess, so that its peak resident
memory (``ru_maxrss``) is its own: the interpreter, the imports and the data
(the "baseline" row) plus what the fit and the prediction add.  Printed per
method: the paper's test error 100·‖ŷ - y‖/‖y‖, the fit time (predictions
not included), the prediction time for the 819 test rows and the peak RSS.
Kernel methods use the paper's setting where a width is fixed (Laplace
kernel, λ = γ = 1e-6 on the raw features, α = 0.1); ``MondrianKernelRidgeCV``
chooses its own.  Times are wall-clock seconds with all cores available.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

LIFETIME, ALPHA = 1e-6, 0.1

METHODS = {
    "baseline": "interpreter, imports and data only",
    "mondrian_cv": "MondrianKernelRidgeCV() at its defaults (width, alpha, trees chosen)",
    "mondrian_fixed": "MondrianKernelRidge(350 trees, lifetime 1e-6, alpha 0.1)",
    "exact": "exact Laplace kernel ridge, sklearn KernelRidge(kernel='laplacian')",
    "rff": "RandomFourierFeatures(laplace, 2000) + ridge_solve",
    "nystroem": "sklearn Nystroem(laplacian, 2000 components) + Ridge",
    "hgb": "sklearn HistGradientBoostingRegressor() at its defaults",
    "random_forest": "sklearn RandomForestRegressor(300 trees, n_jobs=-1)",
}


def _fit(method: str, seed: int):
    """(fit, predict) closures of ``method``; predict returns the test predictions."""
    import numpy as np

    from mondrian.datasets import load_cpu

    data = load_cpu()
    X, y, X_test = data.X_train, data.y_train, data.X_test
    if method == "baseline":
        return data, (lambda: None), (lambda _: np.full(len(X_test), y.mean()))
    if method == "mondrian_cv":
        from mondrian import MondrianKernelRidgeCV
        model = MondrianKernelRidgeCV(random_state=seed)
    elif method == "mondrian_fixed":
        from mondrian import MondrianKernelRidge
        model = MondrianKernelRidge(n_trees=350, lifetime=LIFETIME, alpha=ALPHA,
                                    random_state=seed)
    elif method == "exact":
        from sklearn.kernel_ridge import KernelRidge
        model = KernelRidge(kernel="laplacian", gamma=LIFETIME, alpha=ALPHA)
    elif method == "rff":
        from mondrian import RandomFourierFeatures, ridge_solve

        class RFFRidge:
            def fit(self, X, y):
                self.map = RandomFourierFeatures(kernel="laplace", lifetime=LIFETIME,
                                                 n_components=2000, random_state=seed)
                self.mean = y.mean()
                self.coef = ridge_solve(self.map.fit_transform(X), y - self.mean, ALPHA).coef
                return self

            def predict(self, X):
                return self.map.transform(X) @ self.coef + self.mean
        model = RFFRidge()
    elif method == "nystroem":
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
        model = make_pipeline(Nystroem(kernel="laplacian", gamma=LIFETIME, n_components=2000,
                                       random_state=seed), Ridge(alpha=ALPHA))
    elif method == "hgb":
        from sklearn.ensemble import HistGradientBoostingRegressor
        model = HistGradientBoostingRegressor(random_state=seed)
    elif method == "random_forest":
        from sklearn.ensemble import RandomForestRegressor
        model = RandomForestRegressor(n_estimators=300, n_jobs=-1, random_state=seed)
    else:
        raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")
    return data, (lambda: model.fit(X, y)), (lambda _: model.predict(X_test))


def run_one(method: str, seed: int) -> dict:
    """Fit and predict ``method`` in this process; the measurements as a dict."""
    from mondrian.metrics import relative_error

    data, fit, predict = _fit(method, seed)
    t0 = time.perf_counter()
    fit()
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = predict(None)
    t_pred = time.perf_counter() - t0
    return {"method": method, "seed": seed, "error": relative_error(data.y_test, pred),
            "fit_s": t_fit, "predict_s": t_pred,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if args.one:
        print(json.dumps(run_one(methods[0], seeds[0])))
        return 0
    print(f"{'method':16s} {'seed':>4s} {'error %':>8s} {'fit s':>8s} {'predict s':>10s} "
          f"{'peak MiB':>9s}")
    for method in methods:
        if method not in METHODS:
            parser.error(f"unknown method {method!r}")
        for seed in seeds:
            proc = subprocess.run([sys.executable, __file__, "--one", "--methods", method,
                                   "--seeds", str(seed)], capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
                print(f"{method:16s} {seed:4d} failed: {last}", flush=True)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{method:16s} {seed:4d} {r['error']:8.2f} {r['fit_s']:8.2f} "
                  f"{r['predict_s']:10.3f} {r['peak_mib']:9.0f}", flush=True)
    print()
    for method in methods:
        print(f"{method:16s} {METHODS[method]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
