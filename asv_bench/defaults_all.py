"""Every public estimator at its DEFAULT parameters, on a small and a large input.

    python asv_bench/defaults_all.py [--large N] [--only NAME,...]

Data: the synthetic regression set of the asv benchmarks (d = 8 standard
normal features, y = sin(x0) + x1·x2 + 0.5·cos(x3 + x4) + 0.1 noise; 2000
test rows), 600 training rows (small) and ``--large`` rows (default 10**5);
classifiers get y > median(y).  Each estimator is built with
``random_state=0`` and nothing else; one fit (after a warm-up fit on 100
rows in the same process).  Printed: fit (or fit_transform) time, the test
score (RMSE, or accuracy, or the output shape for transformers) and the
peak RSS of the process so far.
"""
import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.bench_defaults import synthetic_regression  # noqa: E402
import mondrian as M  # noqa: E402


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def regressor(make):
    def run(X, y, Xt, yt):
        model = make()
        t = time.perf_counter()
        model.fit(X, y)
        el = time.perf_counter() - t
        return el, f"RMSE {np.sqrt(np.mean((model.predict(Xt) - yt) ** 2)):.4f}"
    return run


def classifier(make):
    def run(X, y, Xt, yt):
        cut = np.median(y)
        model = make()
        t = time.perf_counter()
        model.fit(X, y > cut)
        el = time.perf_counter() - t
        return el, f"accuracy {np.mean(model.predict(Xt) == (yt > cut)):.4f}"
    return run


def transformer(make):
    def run(X, y, Xt, yt):
        model = make()
        t = time.perf_counter()
        out = model.fit_transform(X)
        el = time.perf_counter() - t
        return el, f"output {out.shape[0]} x {out.shape[1]}"
    return run


ESTIMATORS = {
    "MondrianKernelRidgeCV": regressor(lambda: M.MondrianKernelRidgeCV(random_state=0)),
    "MondrianKernelRidge": regressor(lambda: M.MondrianKernelRidge(random_state=0)),
    "MondrianKernelClassifierCV": classifier(
        lambda: M.MondrianKernelClassifierCV(random_state=0)),
    "MondrianSGDClassifier": classifier(lambda: M.MondrianSGDClassifier(random_state=0)),
    "MondrianForestRegressor": regressor(lambda: M.MondrianForestRegressor(random_state=0)),
    "MondrianForestClassifier": classifier(lambda: M.MondrianForestClassifier(random_state=0)),
    "DebiasedMondrianForestRegressor": regressor(
        lambda: M.DebiasedMondrianForestRegressor(random_state=0)),
    "SparseSpectrumGPRegressor": regressor(
        lambda: M.SparseSpectrumGPRegressor(random_state=0)),
    "MondrianFeatures": transformer(lambda: M.MondrianFeatures(random_state=0)),
    "RandomFourierFeatures": transformer(lambda: M.RandomFourierFeatures(random_state=0)),
    "RandomBinningFeatures": transformer(lambda: M.RandomBinningFeatures(random_state=0)),
    "RandomMaclaurinFeatures": transformer(lambda: M.RandomMaclaurinFeatures(random_state=0)),
    "DisentanglingEmbedding": transformer(lambda: M.DisentanglingEmbedding(random_state=0)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(ESTIMATORS)
    print(f"mondrian {M.__version__}; defaults and random_state=0; synthetic d = 8")
    for name in names:
        run = ESTIMATORS[name]
        X, y, Xt, yt = synthetic_regression(100, seed=1)
        run(X, y, Xt, yt)                                   # warm-up
        for n in (600, args.large):
            X, y, Xt, yt = synthetic_regression(n, seed=0)
            el, score = run(X, y, Xt, yt)
            print(f"{name:28s} N={n:>8d}  fit {el:8.2f} s  {score:24s} "
                  f"peak RSS {peak_gib():.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
