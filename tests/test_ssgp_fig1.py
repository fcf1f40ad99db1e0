"""The SSGP paper's Fig. 1 experiment (abalone), run small through the CLI."""
import csv
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from mondrian.cli import main as cli_main
from mondrian.datasets.shared import data_home_path
from mondrian.experiments.ssgp_fig1 import HEADER, load_abalone
from mondrian.gp import SparseSpectrumGPRegressor


def _have_abalone():
    try:
        load_abalone()
    except FileNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _have_abalone(),
                                reason=f"abalone not found under {data_home_path()}")


def test_load_abalone_is_the_authors_split():
    """2927 + 1250 rows (abalone.train / abalone.test), sex one-hot (exactly
    one 1 per row) and 7 measurements; rings are integers from 1 to 29."""
    data = load_abalone()
    assert data.X_train.shape == (2927, 10) and data.X_test.shape == (1250, 10)
    for X in (data.X_train, data.X_test):
        np.testing.assert_array_equal(X[:, :3].sum(axis=1), 1.0)
    y = np.concatenate([data.y_train, data.y_test])
    np.testing.assert_array_equal(y, np.round(y))
    assert y.min() == 1 and y.max() == 29
    # The first training row of abalone.data: M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15
    np.testing.assert_array_equal(data.X_train[0], [1, 0, 0, 0.455, 0.365, 0.095, 0.514,
                                                    0.2245, 0.101, 0.15])
    assert data.y_train[0] == 15.0


def test_quick_run_writes_csv_and_png(tmp_path):
    assert cli_main(["experiment", "ssgp-fig1", "--quick", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "ssgp_fig1.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == HEADER
        rows = list(reader)
    assert (tmp_path / "ssgp_fig1.png").stat().st_size > 0
    ssgp = [r for r in rows if r["method"] != "exact-gp"]
    assert {(r["method"], r["p"]) for r in ssgp} == {(m, p) for m in ("ssgp", "ssgp-embedding")
                                                     for p in ("4", "8")}
    for method in ("ssgp", "ssgp-embedding"):
        for p in ("4", "8"):
            run = [r for r in ssgp if (r["method"], r["p"]) == (method, p)]
            # One row per L-BFGS-B iteration (--quick: at most 5), numbered
            # 1, 2, ..., the last one flagged final.
            its = [int(r["iteration"]) for r in run]
            assert its == list(range(1, len(its) + 1)) and 1 <= len(its) <= 5
            assert [r["final"] for r in run] == ["0"] * (len(run) - 1) + ["1"]
            assert all(r["n_train"] == "300" and r["n_test"] == "200" for r in run)
    exact = [r for r in rows if r["method"] == "exact-gp"]
    assert len(exact) == 1 and exact[0]["final"] == "1"
    for r in rows:
        assert np.isfinite(float(r["test_rmse"])) and float(r["test_rmse"]) > 0
        assert np.isfinite(float(r["test_nlpd"]))
    # The final row is the fitted regressor's score: refit the vanilla SSGP
    # at p = 4 on the --quick subsample with the same seed and compare
    # (the same computation, so equal to rounding).
    data = load_abalone()
    keep = np.random.default_rng(0).choice(2927, 300, replace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)     # 5 iterations
        gp = SparseSpectrumGPRegressor(n_components=4, max_iter=5, random_state=0,
                                       optimize_frequencies=False).fit(
            data.X_train[keep], data.y_train[keep])
    mean = gp.predict(data.X_test[:200])
    rmse = np.sqrt(np.mean((mean - data.y_test[:200]) ** 2))
    final = [r for r in ssgp if (r["method"], r["p"], r["final"]) == ("ssgp", "4", "1")]
    np.testing.assert_allclose(float(final[0]["test_rmse"]), rmse, rtol=1e-12)


def test_scores_are_rmse_and_gaussian_nlpd(rng):
    """_scores: RMSE of the predictive mean and the mean of -log N(y; μ, σ²),
    checked against scipy's normal log-density."""
    from scipy.stats import norm

    from mondrian.experiments.ssgp_fig1 import _scores

    mean, std, y = rng.normal(size=50), rng.uniform(0.5, 2.0, 50), rng.normal(size=50)

    class Fixed:
        def predict(self, X, return_std=False):
            assert return_std
            return mean, std

    rmse, nlpd = _scores(Fixed(), np.zeros((50, 1)), y)
    np.testing.assert_allclose(rmse, np.sqrt(np.mean((mean - y) ** 2)), rtol=1e-14)
    np.testing.assert_allclose(nlpd, -np.mean(norm.logpdf(y, mean, std)), rtol=1e-12)
