"""fig5, fig6 and slides-table run with --quick and write sensible CSVs."""
import csv
import os
from pathlib import Path

import numpy as np
import pytest

from mondrian.cli import main as cli_main
from mondrian.datasets.shared import data_home_path


def run_experiment(name, out, *extra):
    assert cli_main(["experiment", name, "--quick", "--out", str(out), *extra]) == 0


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_fig5(tmp_path):
    run_experiment("fig5", tmp_path)
    rows = read_rows(tmp_path / "fig5.csv")
    methods = {r["method"] for r in rows}
    assert methods == {"mondrian", "binning", "fourier"}
    err = {(r["method"], int(r["nonzeros_per_point"]), int(r["repeat"])): float(r["max_abs_error"])
           for r in rows}
    assert all(0 <= e <= 2 for e in err.values())
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
    errs = np.array([float(r["test_error_percent"]) for r in feats])
    assert np.all(np.isfinite(errs)) and np.all(errs > 0)
    # At M = 10 every map is far better than the mean predictor (about 24 %).
    at10 = [float(r["test_error_percent"]) for r in feats if r["nonzeros_per_point"] == "10"]
    assert len(at10) == 3 and max(at10) < 15.0


def test_slides_table(tmp_path):
    home = _shared_home()
    if not (home / "nursery" / "nursery.data").is_file() or not (home / "cod_rna").is_dir():
        pytest.skip(f"shared datasets not found under {home}")
    run_experiment("slides-table", tmp_path, "--datasets", "nursery", "cod-rna",
                   "--data-home", str(home))
    rows = read_rows(tmp_path / "slides_table.csv")
    assert {r["dataset"] for r in rows} == {"nursery", "cod-rna"}
    methods = {r["method"] for r in rows}
    assert methods == {"svc-exponential", "svc-gaussian", "fourier+linearsvc", "h01+linearsvc"}
    for r in rows:
        assert 50.0 < float(r["accuracy_percent"]) <= 100.0
        assert float(r["train_seconds"]) > 0
        assert "subsample" in r["note"] or r["note"] == "all training points"
    assert any("subsample 500" in r["note"] for r in rows)


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
