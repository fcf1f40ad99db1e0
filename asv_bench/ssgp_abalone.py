"""SSGP on Abalone (issue 11): wall and CPU time and test RMSE of each fit.

    python asv_bench/ssgp_abalone.py

``SparseSpectrumGPRegressor(p, n_restarts=r, random_state=seed)`` at its
other defaults, for p = 16, 32, 64, r = 0 and 2, seeds 0 and 1, on the SSGP
paper's split (2927 training and 1250 test rows; sex one-hot and the seven
measurements, standardised with the training statistics), read from
``$MONDRIAN_DATA`` or ``../shared/data``.
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.bench_ssgp import abalone_arrays  # noqa: E402

from mondrian.gp import SparseSpectrumGPRegressor  # noqa: E402


def main():
    X, y, X_test, y_test = abalone_arrays()
    for p in (16, 32, 64):
        for restarts in (0, 2):
            for seed in (0, 1):
                t0, c0 = time.perf_counter(), time.process_time()
                model = SparseSpectrumGPRegressor(p, n_restarts=restarts,
                                                  random_state=seed).fit(X, y)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
                print(f"p={p} n_restarts={restarts} seed={seed}: wall {wall:.2f} s, "
                      f"CPU {cpu:.2f} s, test RMSE {rmse:.3f}, {model.n_iter_} iterations",
                      flush=True)


if __name__ == "__main__":
    main()
