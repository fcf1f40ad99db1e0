"""SSGP on Abalone (issue 11): wall and CPU time and test RMSE of each fit.

    python asv_bench/ssgp_abalone.py [--seeds 2] [--restarts auto 0 4]
                                     [--race-iterations 10]

``SparseSpectrumGPRegressor(p, n_restarts=r, race_iterations=k,
random_state=seed)`` at its other defaults, for p = 16, 32, 64, each
``--restarts`` r and seeds 0 .. ``--seeds`` - 1, on the SSGP paper's split
(2927 training and 1250 test rows; sex one-hot and the seven measurements,
standardised with the training statistics), read from ``$MONDRIAN_DATA`` or
``../shared/data``.  Each fit is printed, then per (p, r) the mean and worst
test RMSE over the seeds, how many fits were above 1.96 (the issue's bound)
and the median and largest wall time.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.bench_ssgp import abalone_arrays  # noqa: E402

from mondrian.gp import SparseSpectrumGPRegressor  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--restarts", type=lambda v: v if v == "auto" else int(v), nargs="+",
                    default=["auto"], help="n_restarts values: integers or 'auto'")
    ap.add_argument("--race-iterations", type=int, default=10)
    args = ap.parse_args(argv)
    X, y, X_test, y_test = abalone_arrays()
    for p in (16, 32, 64):
        for restarts in args.restarts:
            rmses, walls = [], []
            for seed in range(args.seeds):
                t0, c0 = time.perf_counter(), time.process_time()
                model = SparseSpectrumGPRegressor(
                    p, n_restarts=restarts, race_iterations=args.race_iterations,
                    random_state=seed).fit(X, y)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                rmse = float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))
                rmses.append(rmse)
                walls.append(wall)
                print(f"p={p} n_restarts={restarts} seed={seed}: wall {wall:.2f} s, "
                      f"CPU {cpu:.2f} s, test RMSE {rmse:.3f}, {model.n_iter_} iterations",
                      flush=True)
            rmses = np.array(rmses)
            print(f"p={p} n_restarts={restarts}: test RMSE mean {rmses.mean():.4f}, worst "
                  f"{rmses.max():.4f}, {int(np.sum(rmses > 1.96))} of {rmses.size} above "
                  f"1.96; wall median {np.median(walls):.2f} s, largest {max(walls):.2f} s",
                  flush=True)


if __name__ == "__main__":
    main()
