"""``MondrianKernelClassifierCV(random_state=0).fit`` at its defaults on the
slides' binary tasks (issue 13), and the Newton path's products.

Cases: adult (a9a), cod-rna and the covertype binary task, 10,000 training
rows drawn with seed 0 from the training part, standardised where the
features are continuous, at most 20,000 test rows -- the rows of
``asv_bench/classification_check.py``, which also runs the tuned SVC grid
search and the random-Fourier baseline.  Tracked: fit time, test accuracy,
and the accuracy minus that of ``SVC(kernel='rbf')`` tuned by a 3-fold grid
(``SVC_ACCURACY``, measured once by the check script, so that setup stays
cheap).  The issue wants the difference >= -0.3 points and the fit within a
quarter of the grid search's time.

The data are read from ``$MONDRIAN_DATA`` or ``../shared/data`` beside the
checkout (skipped when absent).  Run from ``asv_bench/``:
``asv run --python=same --bench bench_classification``.
"""
import os
from pathlib import Path

import numpy as np

try:
    from mondrian import MondrianFeatures, MondrianKernelClassifierCV
    from mondrian.path import NewtonClassifierPath
except ImportError:  # older commits
    MondrianKernelClassifierCV = NewtonClassifierPath = None

#: Test accuracy (%) of SVC(kernel='rbf') tuned by GridSearchCV (3 folds, C in
#: 10^{-1..3}, gamma in 2^{-2..2}/(D Var X)) on the same rows, from
#: ``python asv_bench/classification_check.py`` (scikit-learn 1.9.1).
SVC_ACCURACY = {"a9a": 84.64, "cod-rna": 94.70, "covertype": 81.97}


def _data_home() -> Path:
    env = os.environ.get("MONDRIAN_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


def load_case(case: str):
    """(X, y, X_test, y_test) of a case, as in classification_check.py."""
    from sklearn.preprocessing import StandardScaler

    from mondrian.datasets.shared import load_a9a, load_cod_rna, load_covertype

    home = _data_home()
    if not home.is_dir():
        raise NotImplementedError(f"no data directory {home}")
    loader, standardise = {"a9a": (load_a9a, False), "cod-rna": (load_cod_rna, True),
                           "covertype": (load_covertype, True)}[case]
    data = loader(home)
    rows = np.random.default_rng(0).choice(data.X_train.shape[0], 10_000, replace=False)
    X, y = data.X_train[rows], data.y_train[rows]
    X_te, y_te = data.X_test[:20_000], data.y_test[:20_000]
    if standardise:
        scaler = StandardScaler().fit(X)
        X, X_te = scaler.transform(X), scaler.transform(X_te)
    return X, y, X_te, y_te


def _skip_without_estimator():
    if MondrianKernelClassifierCV is None or NewtonClassifierPath is None:
        raise NotImplementedError("no Newton classifier in this commit")


class DefaultClassifier:
    """Fit time of the default classifier on 10,000 rows."""

    params = (list(SVC_ACCURACY),)
    param_names = ["case"]
    timeout = 1800
    number = 1
    rounds = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0

    def setup(self, case):
        _skip_without_estimator()
        self.X, self.y, _, _ = load_case(case)

    def time_fit(self, case):
        MondrianKernelClassifierCV(random_state=0).fit(self.X, self.y)


class DefaultClassifierAccuracy:
    """Test accuracy of the default classifier, one fit per case."""

    params = (list(SVC_ACCURACY),)
    param_names = ["case"]
    timeout = 3600

    def setup_cache(self):
        _skip_without_estimator()
        results = {}
        for case in SVC_ACCURACY:
            X, y, X_te, y_te = load_case(case)
            model = MondrianKernelClassifierCV(random_state=0).fit(X, y)
            results[case] = 100.0 * model.score(X_te, y_te)
        return results

    def track_test_accuracy(self, results, case):
        return results[case]

    def track_accuracy_minus_svc(self, results, case):
        """Accuracy minus that of the tuned RBF SVC (goal >= -0.3 points)."""
        return results[case] - SVC_ACCURACY[case]

    track_test_accuracy.unit = "%"
    track_accuracy_minus_svc.unit = "points"


class NewtonPathSolve:
    """One converged logistic solve along the path (synthetic, no data files):
    20,000 points in 4-D, 300 trees, the products in C."""

    params = ([1, 2],)
    param_names = ["n_jobs"]
    timeout = 600

    def setup(self, n_jobs):
        _skip_without_estimator()
        rng = np.random.default_rng(0)
        X = rng.random((20_000, 4))
        y = (np.sin(6 * X[:, 0]) + X[:, 1] > 1.0).astype(int)
        self.forest = MondrianFeatures(n_trees=300, lifetime=8.0, random_state=0,
                                       n_jobs=n_jobs).fit(X)
        self.y = y

    def time_solve_path(self, n_jobs):
        path = NewtonClassifierPath(self.forest, self.y, 2, np.arange(16_000),
                                    Cs=[1.0, 10.0], tol=1e-3, n_jobs=n_jobs)
        for lam in (2.0, 4.0, 8.0):
            path.solve_at(lam)
