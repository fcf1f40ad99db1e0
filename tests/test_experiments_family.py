"""The experiments run with --quick; their CSVs hold the numbers they claim."""
import csv
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mondrian import RandomFourierFeatures
from mondrian.cli import main as cli_main
from mondrian.datasets import load_cpu
from mondrian.datasets.shared import data_home_path
from mondrian.experiments._family import METHODS, prefix_maps
from mondrian.experiments.fig7 import sample_laplace_gp
from mondrian.metrics import relative_error
from mondrian.width_search import ridge_scorer


def run_experiment(name, out, *extra):
    assert cli_main(["experiment", name, "--quick", "--out", str(out), *extra]) == 0


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("method", METHODS)
def test_prefix_maps_are_rescaled_maps_of_m_components(rng, method):
    """The first M trees / grids / frequencies, rescaled by √(m_max/M), are a
    map of M components: every training point has M stored entries (Fourier:
    M columns, two per frequency) and unit self-kernel k̂(x, x) = 1 exactly,
    as a freshly drawn map of M components has."""
    X, X_te = rng.random((30, 2)), rng.random((7, 2)) * 1.5
    m_max = 8
    steps = list(prefix_maps(method, X, X_te, 2.0, m_max, 0))
    Ms = [M for M, _, _ in steps]
    assert Ms == (list(range(2, m_max + 1, 2)) if method == "fourier" else
                  list(range(1, m_max + 1)))
    for M, Phi, Phi_te in steps:
        assert Phi.shape[1] == Phi_te.shape[1]
        if method == "fourier":
            assert Phi.shape[1] == M
        else:
            assert sp.issparse(Phi) and np.array_equal(np.diff(Phi.indptr), np.full(30, M))
        diag = np.asarray((Phi.multiply(Phi) if sp.issparse(Phi) else Phi * Phi).sum(axis=1))
        np.testing.assert_allclose(diag.ravel(), 1.0, rtol=1e-12)


def test_fig5(tmp_path):
    run_experiment("fig5", tmp_path)
    rows = read_rows(tmp_path / "fig5.csv")
    methods = {r["method"] for r in rows}
    assert methods == {"mondrian", "binning", "fourier"}
    err = {(r["method"], int(r["nonzeros_per_point"]), int(r["repeat"])): float(r["max_abs_error"])
           for r in rows}
    # Mondrian and binning estimates lie in [0, 1], as the kernel does.
    assert all(0 <= e <= 1 for (m, _, _), e in err.items() if m != "fourier")
    # Mondrian and binning give every M = 1..10, Fourier the even ones (cos/sin pairs).
    assert {M for (m, M, _) in err if m == "mondrian"} == set(range(1, 11))
    assert {M for (m, M, _) in err if m == "fourier"} == {2, 4, 6, 8, 10}
    # More features approximate better: at M = 10 the mean error is below M = 1's.
    for m in ("mondrian", "binning"):
        assert np.mean([err[(m, 10, r)] for r in range(2)]) < np.mean([err[(m, 1, r)] for r in range(2)])


def test_fig6(tmp_path):
    run_experiment("fig6", tmp_path)
    rows = read_rows(tmp_path / "fig6.csv")
    exact = [float(r["test_error_percent"]) for r in rows if r["method"] == "exact"]
    assert len(exact) == 1 and 2.0 < exact[0] < 6.0    # 3.12 % on all data; --quick subsamples
    feats = [r for r in rows if r["method"] != "exact"]
    assert {r["method"] for r in feats} == {"mondrian", "binning", "fourier"}
    # At M = 10 every map is far better than the mean predictor (24.5 % on
    # the test data), by at least a third.
    data = load_cpu()
    constant = relative_error(data.y_test, data.y_train.mean())
    at10 = [float(r["test_error_percent"]) for r in feats if r["nonzeros_per_point"] == "10"]
    assert len(at10) == 3 and max(at10) < constant * 2 / 3


def test_fig7(tmp_path, capsys):
    run_experiment("fig7", tmp_path)
    rows = read_rows(tmp_path / "fig7.csv")
    out = capsys.readouterr().out
    # --quick: 200 points per set from the seed-0 Laplace GP (λ₀ = 10, noise 1e-4).
    X, y = sample_laplace_gp(600, 2, 10.0, 1e-4, np.random.default_rng(0))
    y_tr, y_val = y[:200], y[200:400]
    for lam_max in (20.0, 100.0):
        sel = [r for r in rows if float(r["max_lifetime"]) == lam_max]
        lams = np.array([float(r["lifetime"]) for r in sel])
        err = np.array([float(r["validation_error_percent"]) for r in sel])
        assert lams[0] == 0.0 and lams[-1] <= lam_max
        # At λ = 0 each tree is one cell and the centred target is orthogonal
        # to it: the ridge weights vanish and the prediction is the training
        # mean, so the error is the constant predictor's (to CG rounding).
        assert err[0] == pytest.approx(relative_error(y_val, y_tr.mean()), rel=1e-9)
        # The printed selection is the CSV's minimum.
        assert f"Lambda = {lam_max:g}: selected lifetime {lams[np.argmin(err)]:.3f}" in out


def test_fig8(tmp_path):
    run_experiment("fig8", tmp_path)
    rows = read_rows(tmp_path / "fig8.csv")
    data = load_cpu()
    perm = np.random.default_rng(0).permutation(data.X_train.shape[0])
    val, tr = perm[:data.X_train.shape[0] // 5], perm[data.X_train.shape[0] // 5:]
    X_tr, y_tr = data.X_train[tr], data.y_train[tr]
    X_val, y_val = data.X_train[val], data.y_train[val]
    mondrian = [r for r in rows if r["method"] == "mondrian"]
    assert float(mondrian[0]["lifetime"]) == 0.0
    assert float(mondrian[0]["validation_error_percent"]) == pytest.approx(
        relative_error(y_val, y_tr.mean()), rel=1e-9)
    fourier = [r for r in rows if r["method"] == "Fourier features"]
    # The search starts at λ = 1 and then doubles or halves: powers of two.
    lams = [float(r["lifetime"]) for r in fourier]
    assert lams[0] == 1.0 and np.log2(lams[1]) in (-1.0, 1.0)
    # Each recorded error is the scorer's at that lifetime (--quick: 20
    # frequencies, seed 0, alpha 0.1): the same map gives the same number.
    for r in (fourier[0], fourier[-1]):
        fmap = RandomFourierFeatures(kernel="laplace", lifetime=float(r["lifetime"]),
                                     n_components=20, random_state=0)
        expected = ridge_scorer(0.1)(fmap.fit_transform(X_tr), y_tr, fmap.transform(X_val),
                                     y_val)
        assert float(r["validation_error_percent"]) == pytest.approx(expected, rel=1e-12)


def test_slides_table(tmp_path):
    home = _shared_home()
    if not (home / "nursery" / "nursery.data").is_file() or not (home / "cod_rna").is_dir():
        pytest.skip(f"shared datasets not found under {home}")
    run_experiment("slides-table", tmp_path, "--datasets", "nursery", "cod-rna",
                   "--data-home", str(home))
    rows = read_rows(tmp_path / "slides_table.csv")
    assert {r["dataset"] for r in rows} == {"nursery", "cod-rna"}
    methods = {r["method"] for r in rows}
    assert methods == {"svc-exponential", "svc-gaussian", "fourier+linearsvc", "h01+linearsvc",
                       "mondrian-classifier"}
    for r in rows:
        assert 50.0 < float(r["accuracy_percent"]) <= 100.0
        assert "subsample" in r["note"] or r["note"] == "all training points"
    assert any("subsample 500" in r["note"] for r in rows)
    # Speed-ups are the exact SVM's (the first method) time over each method's,
    # on the same subsample.  The CSV rounds times to 1 ms and speed-ups to
    # 0.1, so the ratio of the printed times is off by at most the sum of the
    # rounding errors, propagated: a speed-up of another pair of rows is not.
    for name in ("nursery", "cod-rna"):
        sub = [r for r in rows if r["dataset"] == name and r["train_speedup"]]
        ref = next(r for r in rows if r["dataset"] == name and r["method"] == "svc-exponential")
        assert len(sub) == 4   # three random-feature methods and the Mondrian classifier
        t_ref = float(ref["train_seconds"])
        for r in sub:
            t = float(r["train_seconds"])
            slack = 0.05 + (t_ref / t) * (5e-4 / t_ref + 5e-4 / t) / (1 - 5e-4 / t)
            assert abs(float(r["train_speedup"]) - t_ref / t) <= slack


def _shared_home():
    return data_home_path(os.environ.get("MONDRIAN_DATA") or
                          Path(__file__).resolve().parents[2] / "shared" / "data")


def test_shared_loaders():
    from mondrian.datasets.shared import load_a9a, load_cod_rna, load_covertype, load_nursery

    home = _shared_home()
    if not home.is_dir():
        pytest.skip(f"shared datasets not found under {home}")
    # Sizes and label sets documented in each PROVENANCE.md.
    expect = {load_nursery: (12960, 8, {0, 1, 2, 3, 4}), load_cod_rna: (59535, 8, {-1, 1}),
              load_a9a: (48842, 123, {-1, 1}), load_covertype: (100000, 54, {-1, 1})}
    for load, (n, d, labels) in expect.items():
        data = load(home)
        assert data.X_train.shape[0] + data.X_test.shape[0] == n
        assert data.X_train.shape[1] == data.X_test.shape[1] == d
        assert set(np.unique(np.concatenate([data.y_train, data.y_test]))) == labels
        assert data.X_train.dtype == np.float64 and np.all(np.isfinite(data.X_train))
    a9a = load_a9a(home)
    assert a9a.X_train.shape[0] == 32561 and set(np.unique(a9a.X_train)) == {0.0, 1.0}
    nursery = load_nursery(home, test_fraction=0.25, random_state=1)
    assert nursery.X_test.shape[0] == 3240
    assert np.array_equal(load_nursery(home, random_state=1).y_train,
                          load_nursery(home, random_state=1).y_train)


def test_missing_data_home(tmp_path):
    from mondrian.datasets.shared import load_nursery

    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        load_nursery(tmp_path)
    # The split fraction is checked before any file is read.
    with pytest.raises(ValueError, match="test_fraction"):
        load_nursery(tmp_path, test_fraction=1.0)
