"""The progress contract: verbose=0 writes nothing, verbose>=1 writes to stderr
(never stdout), with tqdm and without it (its absence simulated by making
``import tqdm`` fail), and estimators' results do not depend on ``verbose``."""
import sys

import numpy as np
import pytest

from mondrian import MondrianFeatures
from mondrian._progress import Progress, check_verbose, progress


@pytest.fixture(params=["tqdm", "plain"])
def backend(request, monkeypatch):
    """Run a test with tqdm importable and with ``import tqdm`` failing."""
    if request.param == "tqdm":
        pytest.importorskip("tqdm")
    else:
        # A None entry in sys.modules makes ``import tqdm`` raise ImportError.
        monkeypatch.setitem(sys.modules, "tqdm", None)
    return request.param


def _run(total, verbose, desc="work"):
    with progress(total, desc, verbose) as bar:
        for _ in range(total):
            bar.update()
    return bar


def test_verbose_0_writes_nothing(backend, capsys):
    bar = _run(10, 0)
    assert bar.backend == "silent"
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_verbose_1_writes_to_stderr_only(backend, capsys):
    bar = _run(10, 1, desc="growing trees")
    assert bar.backend == backend
    assert bar.n == 10
    out, err = capsys.readouterr()
    assert out == ""
    assert "growing trees" in err
    assert "10/10" in err


def test_verbose_0_does_not_import_tqdm(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "tqdm", raising=False)
    monkeypatch.delitem(sys.modules, "tqdm.std", raising=False)
    _run(5, 0)
    assert "tqdm" not in sys.modules


def test_plain_lines_at_tenths_and_every_step(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    _run(20, 1, desc="d")
    lines = capsys.readouterr().err.splitlines()
    # started, one line per tenth reached before the end (2/20 ... 18/20), done.
    assert lines[0] == "d: started (20 steps)"
    assert [ln.split()[1] for ln in lines[1:-1]] == [f"{2 * k}/20" for k in range(1, 10)]
    assert lines[-1].startswith("d: done 20/20 in ")

    _run(4, 2, desc="e")
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split()[1] for ln in lines[1:-1]] == ["1/4", "2/4", "3/4", "4/4"]
    assert lines[-1].startswith("e: done 4/4")


def test_plain_unknown_total_and_interrupted_work(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(RuntimeError, match="boom"):
        with progress(10, "f", 1) as bar:
            bar.update(3)
            raise RuntimeError("boom")
    assert capsys.readouterr().err.splitlines()[-1].startswith("f: stopped at 3/10")
    with progress(None, "g", 1) as bar:
        bar.update(7)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "g: started" and lines[1].startswith("g: done 7 in ") and len(lines) == 2


def test_callback_form_counts_done_steps(backend, capsys):
    with progress(None, "cb", 1) as bar:
        for done in range(1, 6):
            bar(done, 5)
        bar(5, 5)  # a repeated count adds nothing
    assert bar.n == 5 and bar.total == 5
    assert "5/5" in capsys.readouterr().err


def test_close_is_idempotent(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    bar = Progress(2, "h", 1)
    bar.update(2)
    bar.close()
    bar.close()
    assert capsys.readouterr().err.count("h: done") == 1


@pytest.mark.parametrize("value, exc", [("1", TypeError), (1.5, TypeError), (None, TypeError),
                                        (-1, ValueError)])
def test_invalid_verbose(value, exc):
    with pytest.raises(exc, match="verbose"):
        check_verbose(value)
    with pytest.raises(exc, match="verbose"):
        progress(3, "x", value)


def test_invalid_arguments():
    assert check_verbose(True) == 1 and check_verbose(np.int64(2)) == 2
    with pytest.raises(ValueError, match="total"):
        progress(-1, "x", 0)
    with pytest.raises(TypeError, match="total"):
        progress(2.0, "x", 0)
    with pytest.raises(TypeError, match="desc"):
        progress(2, None, 0)
    with pytest.raises(ValueError, match="n must be >= 0"):
        progress(2, "x", 0).update(-1)


def test_mondrian_features_verbose(backend, capsys):
    X = np.random.default_rng(0).random((60, 3))
    quiet = MondrianFeatures(n_trees=20, lifetime=3.0, random_state=1, verbose=0).fit(X)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    loud = MondrianFeatures(n_trees=20, lifetime=3.0, random_state=1, verbose=1).fit(X)
    out, err = capsys.readouterr()
    assert out == ""
    assert "MondrianFeatures" in err and "20/20" in err
    # Reporting must not change the trees.
    np.testing.assert_array_equal(quiet.forest_.tau, loud.forest_.tau)
    np.testing.assert_array_equal(quiet.transform(X).toarray(), loud.transform(X).toarray())
    with pytest.raises(ValueError, match="verbose"):
        MondrianFeatures(verbose=-1).fit(X)


@pytest.mark.parametrize("n_rows", [80, 300])
def test_ridge_cv_verbose(backend, capsys, monkeypatch, n_rows):
    # 80 rows: the dual; 300 rows with the dual's limit at 100: the pilot.
    import mondrian.path.estimators as path_estimators
    from mondrian import MondrianKernelRidgeCV

    monkeypatch.setattr(path_estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(path_estimators, "PILOT_ROWS", 60)
    rng = np.random.default_rng(0)
    X = rng.random((n_rows, 3))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.standard_normal(n_rows)
    quiet = MondrianKernelRidgeCV(n_trees=20, random_state=1).fit(X, y)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    loud = MondrianKernelRidgeCV(n_trees=20, random_state=1, verbose=1).fit(X, y)
    out, err = capsys.readouterr()
    assert out == ""
    assert "MondrianKernelRidgeCV: lifetimes" in err
    n_lifetimes = loud.path_["lifetimes"].shape[0]
    assert f"{n_lifetimes}/{n_lifetimes}" in err or backend == "tqdm"
    np.testing.assert_array_equal(quiet.predict(X), loud.predict(X))
    with pytest.raises(ValueError, match="verbose"):
        MondrianKernelRidgeCV(verbose=-1).fit(X, y)


def test_classifier_cv_verbose(backend, capsys):
    from mondrian import MondrianKernelClassifierCV

    rng = np.random.default_rng(0)
    X = rng.random((120, 2))
    y = (X[:, 0] > X[:, 1]).astype(int)
    quiet = MondrianKernelClassifierCV(n_trees=10, random_state=0).fit(X, y)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    loud = MondrianKernelClassifierCV(n_trees=10, random_state=0, verbose=1).fit(X, y)
    out, err = capsys.readouterr()
    assert out == "" and "MondrianKernelClassifierCV: lifetimes" in err
    np.testing.assert_array_equal(quiet.decision_function(X), loud.decision_function(X))
