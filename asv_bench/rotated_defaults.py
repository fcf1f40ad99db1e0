"""MondrianKernelRidgeCV at its defaults with and without rotations, on real data.

    python asv_bench/rotated_defaults.py [--data-home DIR]

For energy, concrete and ccpp (``../shared/data``, loaded as in
``defaults_check.py``): a random permutation (seed 0), 20 % of the rows for
testing, inputs and target standardised with the training statistics;
``MondrianKernelRidgeCV(random_state=0, rotation=...)`` fitted, test RMSE
reported in the target's units.  For CPU: the bundled train/test split, raw
inputs, the paper's relative error.  The figures of ``doc/rotated.rst``.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from defaults_check import data_home, load_ccpp, load_concrete, load_energy  # noqa: E402

from mondrian import MondrianKernelRidgeCV  # noqa: E402
from mondrian.datasets import load_cpu  # noqa: E402
from mondrian.metrics import relative_error  # noqa: E402

SETS = {"energy": load_energy, "concrete": load_concrete, "ccpp": load_ccpp}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    home = data_home(args.data_home)
    for name, load in SETS.items():
        X, y = load(home)
        order = np.random.default_rng(0).permutation(y.shape[0])
        n_test = y.shape[0] // 5
        test, train = order[:n_test], order[n_test:]
        mu, sd = X[train].mean(axis=0), X[train].std(axis=0)
        sd[sd == 0] = 1.0
        X_tr, X_te = (X[train] - mu) / sd, (X[test] - mu) / sd
        y_mu, y_sd = y[train].mean(), y[train].std()
        for rotation in (None, "uniform"):
            t0 = time.perf_counter()
            model = MondrianKernelRidgeCV(random_state=0, rotation=rotation)
            model.fit(X_tr, (y[train] - y_mu) / y_sd)
            pred = model.predict(X_te) * y_sd + y_mu
            rmse = float(np.sqrt(np.mean((pred - y[test]) ** 2)))
            print(f"{name:9s} rotation={rotation!s:8s} test RMSE {rmse:.4f}  "
                  f"lifetime {model.lifetime_:.3g} (λ₀ {model.path_['scale']:.3g}, "
                  f"{model.path_['stop_reason']})  {model.solver_}, {model.n_trees_} trees, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    data = load_cpu()
    for rotation in (None, "uniform"):
        t0 = time.perf_counter()
        model = MondrianKernelRidgeCV(random_state=0, rotation=rotation)
        model.fit(data.X_train, data.y_train)
        err = relative_error(data.y_test, model.predict(data.X_test))
        print(f"cpu (raw) rotation={rotation!s:8s} relative test error {err:.2f} %  "
              f"lifetime {model.lifetime_:.3g}  {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
