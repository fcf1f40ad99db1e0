"""The default MondrianKernelRidgeCV on the raw CPU data, seeds 0-4.

    python asv_bench/cpu_defaults.py

Prints, per seed, the paper's test error 100·‖ŷ - y‖/‖y‖, the fit time and
what the estimator chose; then the medians (the issue's goal: error
<= 6.2 %, fit <= 3 s on this 2-core machine).
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.bench_defaults import cpu_arrays  # noqa: E402
from mondrian import MondrianKernelRidgeCV  # noqa: E402
from mondrian.metrics import relative_error  # noqa: E402


def main() -> None:
    X, y, X_test, y_test = cpu_arrays()
    errors, times = [], []
    for seed in range(5):
        t0 = time.perf_counter()
        model = MondrianKernelRidgeCV(random_state=seed).fit(X, y)
        elapsed = time.perf_counter() - t0
        error = relative_error(y_test, model.predict(X_test))
        errors.append(error)
        times.append(elapsed)
        print(f"seed {seed}: error {error:.2f} % fit {elapsed:.2f} s trees {model.n_trees_} "
              f"solver {model.solver_} lifetime {model.lifetime_:.3g} alpha {model.alpha_:.3g}",
              flush=True)
    print(f"median error {np.median(errors):.2f} %, median fit {np.median(times):.2f} s")


if __name__ == "__main__":
    main()
