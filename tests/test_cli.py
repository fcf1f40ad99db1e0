"""The command line (``python -m mondrian``) and the paper's metric."""
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mondrian import MondrianKernelRidge, MondrianKernelRidgeCV
from mondrian.cli import main
from mondrian.cli.path import progress_verbosity
from mondrian.datasets import load_cpu, load_csv
from mondrian.metrics import relative_error, relative_error_from_mse


def printed(out: str, label: str) -> float:
    """The number printed after ``label`` in the command's output."""
    match = re.search(re.escape(label) + r"\s*([-+0-9.eE]+)", out)
    assert match, f"{label!r} not in output:\n{out}"
    return float(match.group(1))


def test_relative_error_is_the_papers_metric():
    assert relative_error([3.0, 4.0], [3.0, 4.0]) == 0.0
    assert relative_error([3.0, 4.0], [0.0, 0.0]) == 100.0
    assert relative_error([3.0, 4.0], [3.0, 0.0]) == 80.0
    assert relative_error([3.0, 4.0], 0.0) == 100.0   # the zero predictor, broadcast
    # Scale-free: multiplying targets and predictions by c changes nothing.
    rng = np.random.default_rng(0)
    y, pred = rng.normal(size=50), rng.normal(size=50)
    assert relative_error(7.0 * y, 7.0 * pred) == pytest.approx(relative_error(y, pred),
                                                                rel=1e-14)


def test_relative_error_from_mse_equals_the_direct_metric():
    rng = np.random.default_rng(1)
    y = rng.normal(3.0, 1.0, size=40)
    preds = y + rng.normal(size=(5, 40))
    mse = np.mean((preds - y) ** 2, axis=1)
    direct = [relative_error(y, p) for p in preds]
    np.testing.assert_allclose(relative_error_from_mse(mse, y), direct, rtol=1e-13)
    assert isinstance(relative_error_from_mse(mse[0], y), float)
    # The path marks skipped (lifetime, alpha) pairs with NaN: kept, same shape.
    grid = relative_error_from_mse(np.array([[mse[0], np.nan]]), y)
    assert grid.shape == (1, 2) and np.isnan(grid[0, 1])
    assert grid[0, 0] == pytest.approx(direct[0], rel=1e-13)


def test_fit_on_bundled_cpu_data(capsys):
    assert main(["fit", "--n-trees", "20", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "cpu: 6554 train, 819 test, 21 features" in out
    # The printed error is the paper's metric of the paper's model (λ = 1e-6,
    # the default alpha 0.1 and seed 0), to the two printed decimals.
    data = load_cpu()
    model = MondrianKernelRidge(n_trees=20, lifetime=1e-6, alpha=0.1, random_state=0,
                                n_jobs=1).fit(data.X_train, data.y_train)
    expected = relative_error(data.y_test, model.predict(data.X_test))
    assert printed(out, "||y||:") == pytest.approx(expected, abs=0.006)
    # Mean prediction scores ~24 %; 20 trees at the paper's lifetime do far better.
    assert 4.0 < expected < 15.0


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
    # The default lifetime: 10 / (L1 diameter of the training split, seed 0).
    data = load_csv(path, target=0, random_state=0)
    diameter = np.ptp(data.X_train, axis=0).sum()
    assert printed(out, "lifetime=") == pytest.approx(10.0 / diameter, rel=1e-5)
    assert "10 / L1 diameter" in out
    err = printed(out, "||y||:")
    assert err < 5.0  # y ~ 11 +- 0.8: the fit explains most of the variation


@pytest.mark.filterwarnings("ignore:the selected alpha")
@pytest.mark.filterwarnings("ignore:the validation error still falls")
def test_path_command_reports_the_estimators_selection(tmp_path, monkeypatch, capsys):
    # Without --output-dir the plot goes to the current directory, which is printed.
    monkeypatch.chdir(tmp_path)
    png = tmp_path / "path.png"
    assert main(["path", "--n-trees", "5", "--solver", "cholesky", "--n-lifetimes", "10"]) == 0
    out = capsys.readouterr().out
    assert f"output directory: {tmp_path.resolve()}\n" in out
    # The same estimator with the command's defaults (alphas 0.1 and 1, a
    # fifth of the training data for validation, seed 0) selects the printed
    # lifetime and alpha, and its test error is the printed one.
    data = load_cpu()
    model = MondrianKernelRidgeCV(n_trees=5, max_lifetime=1e-6, alphas=(0.1, 1.0),
                                  solver="cholesky", n_lifetimes=10,
                                  random_state=0).fit(data.X_train, data.y_train)
    assert printed(out, "selected lifetime:") == pytest.approx(model.lifetime_, rel=1e-5)
    assert printed(out, "alpha:") == model.alpha_
    assert printed(out, "test error 100*||y_hat - y||/||y||:") == pytest.approx(
        relative_error(data.y_test, model.predict(data.X_test)), abs=0.006)
    p = model.path_
    val = relative_error_from_mse(p["validation_mse"], data.y_train[p["validation_rows"]])
    assert printed(out, "validation error 100*||y_hat - y||/||y||:") == pytest.approx(
        np.nanmin(val), abs=0.006)
    assert f"path: {p['lifetimes'].shape[0]} lifetimes" in out
    # The estimator's warnings (here: alpha 0.1 at the end of the grid) are
    # printed as notes.
    if model.alpha_ == 0.1:
        assert "note: the selected alpha 0.1 is the smallest of alphas" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # the text output still works, and says how to get the plot
        assert not png.exists() and "matplotlib" in out
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_output_dir_option_and_its_creation(tmp_path, monkeypatch, capsys):
    from mondrian.cli import build_parser
    from mondrian.cli._args import prepare_output_dir

    parser = build_parser()
    assert parser.parse_args(["path"]).output_dir == "."
    assert parser.parse_args(["path", "--output-dir", "x"]).output_dir == "x"
    assert parser.parse_args(["experiment", "fig5"]).out == "."
    assert parser.parse_args(["experiment", "fig5", "--out", "a"]).out == "a"  # older spelling
    assert parser.parse_args(["experiment", "fig5", "--output-dir", "b"]).out == "b"
    # A missing directory is created with its parents; the absolute path is printed.
    monkeypatch.chdir(tmp_path)
    made = prepare_output_dir("new/dir")
    assert made == tmp_path.resolve() / "new" / "dir" and made.is_dir()
    assert capsys.readouterr().out == f"output directory: {made}\n"
    assert prepare_output_dir("new/dir") == made      # an existing directory is fine


def test_output_dir_that_is_a_file_is_an_error(tmp_path, capsys):
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory")
    assert main(["experiment", "fig5", "--quick", "--output-dir", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "--output-dir" in err and "not a directory" in err
    # A directory that cannot be created is reported the same way (OSError).
    assert main(["path", "--output-dir", str(blocker / "sub")]) == 2
    assert "error:" in capsys.readouterr().err


def test_progress_is_shown_only_on_a_terminal(monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert progress_verbosity(Terminal()) == 1
    assert progress_verbosity(io.StringIO()) == 0
    # The command's estimator reports to stderr through mondrian._progress
    # when stderr is a terminal, and writes nothing there otherwise.
    monkeypatch.setitem(sys.modules, "tqdm", None)     # plain lines
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    import mondrian.cli.path as cli_path
    assert cli_path.progress_verbosity() == 1
    data = load_cpu()
    model = MondrianKernelRidgeCV(n_trees=5, max_lifetime=1e-6, alphas=(0.1,),
                                  solver="cholesky", n_lifetimes=4, random_state=0,
                                  verbose=cli_path.progress_verbosity())
    # Five trees: whether the best lifetime is the ceiling (a warning that a
    # larger one may be better) depends on the draw; this is about the lines.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "the validation error still falls", UserWarning)
        model.fit(data.X_train[:300], data.y_train[:300])
    assert "MondrianKernelRidgeCV: lifetimes" in tty.getvalue()
    assert "4/4" in tty.getvalue()


@pytest.mark.parametrize("argv", [
    ["fit", "--n-trees", "0"],
    ["fit", "--lifetime", "-1"],
    ["fit", "--alpha", "nan"],
    ["path", "--alphas", "0.1,-1"],
    ["path", "--alphas", "a,b"],
    ["path", "--tol", "0"],
    ["experiment", "fig99"],
    ["fit", "--n-jobs", "0"],               # refused by the parser, before any data is loaded
    ["path", "--n-jobs", str(2**40)],
    ["fit", "--n-jobs", "two"],
    ["fit", "--dataset", "nope.csv"],       # the option named, not "path: no such file"
])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_bad_dataset_is_reported(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--dataset", str(tmp_path / "missing.csv")])
    assert exc.value.code == 2
    assert "argument --dataset: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "--dataset", str(tmp_path)])
    assert "argument --dataset: not a file" in capsys.readouterr().err
    good = tmp_path / "ok.csv"
    np.savetxt(good, np.arange(20.0).reshape(10, 2), delimiter=",")
    assert main(["fit", "--dataset", str(good), "--test-fraction", "1.5"]) == 2
    assert "test_fraction must be in (0, 1)" in capsys.readouterr().err


def test_module_entry_point_help():
    # Run from the checkout's root, as the README does: the source tree comes first on
    # sys.path there, and must defer to the installed package (or editable build).
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "mondrian", "--help"], capture_output=True,
                         text=True, check=True, cwd=root).stdout
    assert all(f"\n    {name}" in out for name in ("fit", "path", "experiment"))
