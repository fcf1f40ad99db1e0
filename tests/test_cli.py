"""The main job: ``python -m mondrian``."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mondrian.cli import main, relative_error


def test_relative_error_is_the_papers_metric():
    assert relative_error([3.0, 4.0], [3.0, 4.0]) == 0.0
    assert relative_error([3.0, 4.0], [0.0, 0.0]) == pytest.approx(100.0)
    assert relative_error([1.0, 0.0], [1.0, 1.0]) == pytest.approx(100.0)


def test_fit_on_bundled_cpu_data(capsys):
    assert main(["fit", "--n-trees", "20", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "cpu: 6554 train, 819 test, 21 features" in out
    err = float(out.split("||y||:")[1].split("%")[0])
    # Mean prediction scores ~24 %; 20 trees at the paper's lifetime do far better.
    assert 4.0 < err < 15.0


def test_fit_on_a_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    y = 10 + np.sin(6 * X[:, 0]) + X[:, 1]
    path = tmp_path / "data.csv"
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", header="y,a,b", comments="")
    assert main(["fit", "--dataset", str(path), "--target", "0", "--n-trees", "50",
                 "--alpha", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "data: 240 train, 60 test, 2 features" in out
    assert "10 / L1 diameter" in out
    err = float(out.split("||y||:")[1].split("%")[0])
    assert err < 5.0  # y ~ 11 +- 0.8: the fit explains most of the variation


def test_bad_dataset_is_reported(tmp_path, capsys):
    assert main(["fit", "--dataset", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "--n-trees", "0"])
    with pytest.raises(SystemExit):
        main(["fit", "--lifetime", "-1"])


def test_module_entry_point_help():
    # Run from the checkout's root, as the README does: the source tree comes first on
    # sys.path there, and must defer to the installed package (or editable build).
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "mondrian", "--help"], capture_output=True,
                         text=True, check=True, cwd=root).stdout
    assert "fit" in out and "experiment" in out
