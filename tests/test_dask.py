"""Mondrian features and ridge on Dask (issue: beyond one machine).

Run on a ``LocalCluster`` of two worker processes; skipped without dask."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

import mondrian._dask as mdask  # noqa: E402
from mondrian import MondrianFeatures, MondrianKernelRidge  # noqa: E402
from mondrian.ridge import ridge_solve  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="1GiB")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _data(n=1500, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.fixture
def small_sample(monkeypatch):
    # A sample smaller than X, so that most rows are inserted block by block.
    monkeypatch.setattr(mdask, "SAMPLE_ROWS", 400)


@pytest.mark.parametrize("chunks", [200, 777, 1500])
def test_ridge_on_dask_equals_the_in_memory_solve_on_its_forest(client, small_sample, chunks):
    X, y = _data()
    model = MondrianKernelRidge(n_trees=15, lifetime=0.8, alpha=0.3, random_state=0)
    model.fit(da.from_array(X, chunks=(chunks, 3)), da.from_array(y, chunks=chunks))
    forest = model.features_.forest_
    assert forest.n_points == 1500 and not forest.stores_points
    # The same forest in memory: the same weights and predictions.
    Phi = model.features_.transform(X)
    ref = ridge_solve(Phi, y - y.mean(), 0.3, solver="cholesky")
    scale = np.max(np.abs(ref.coef))
    assert np.max(np.abs(model.coef_ - ref.coef)) <= 1e-10 * scale
    assert model.intercept_ == pytest.approx(y.mean(), rel=1e-12)
    pred = model.predict(da.from_array(X, chunks=(333, 3)))
    assert isinstance(pred, da.Array)
    np.testing.assert_allclose(pred.compute(), Phi @ ref.coef + y.mean(), rtol=0, atol=1e-10)


def test_the_forest_does_not_depend_on_the_chunking(client, small_sample):
    # The sample is drawn from random_state over all rows, and each block's
    # rows are inserted in order: the chunking changes only where the work
    # happens, not the trees (insertion in batches of any size gives the
    # same trees: c/insert.h).
    X, _ = _data(n=900, seed=1)
    fits = [MondrianFeatures(10, 1.0, random_state=3).fit(da.from_array(X, chunks=(c, 3)))
            for c in (150, 900)]
    a, b = (f.forest_ for f in fits)
    for name in ("tau", "threshold", "feature", "lower", "upper", "column_keys"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    Phi = fits[0].transform(da.from_array(X, chunks=(300, 3)))
    assert isinstance(Phi, da.Array)
    np.testing.assert_array_equal(Phi.compute().toarray(), fits[1].transform(X).toarray())


def test_dask_forest_matches_the_batch_forest_in_distribution(small_sample):
    # Sample, then insertion: distributed as a forest grown on all rows.
    # The number of cells at the lifetime over 40 seeds (10 trees each)
    # against batch forests: the means agree within 5 standard errors of
    # their difference (a false alarm has probability < 1e-6).
    X, _ = _data(n=900, seed=2)
    Xd = da.from_array(X, chunks=(300, 3))
    online = [MondrianFeatures(10, 1.5, random_state=s).fit(Xd).n_cells_ for s in range(40)]
    batch = [MondrianFeatures(10, 1.5, random_state=100 + s).fit(X).n_cells_
             for s in range(40)]
    diff = np.mean(online) - np.mean(batch)
    se = np.sqrt(np.var(online, ddof=1) / 40 + np.var(batch, ddof=1) / 40)
    assert abs(diff) <= 5 * se


def test_data_frames_and_two_targets(client, small_sample):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data(n=600, seed=4)
    Y = np.column_stack([y, -2 * y])
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=3)
    model = MondrianKernelRidge(n_trees=8, lifetime=0.5, alpha=1.0, random_state=0)
    model.fit(frame, da.from_array(Y, chunks=(200, 2)))
    Phi = model.features_.transform(X)
    ref = ridge_solve(Phi, Y - Y.mean(axis=0), 1.0, solver="cholesky")
    np.testing.assert_allclose(model.coef_, ref.coef, rtol=0, atol=1e-10 * np.abs(ref.coef).max())


def test_bad_blocks_give_clear_errors(client, small_sample):
    X, y = _data(n=600, seed=5)
    bad = X.copy()
    bad[450, 1] = np.nan
    model = MondrianKernelRidge(n_trees=5, lifetime=0.5, random_state=0)
    with pytest.raises(ValueError, match="NaN"):
        model.fit(da.from_array(bad, chunks=(200, 3)), da.from_array(y, chunks=200))
    unknown = da.from_array(X, chunks=(200, 3))
    unknown = unknown[unknown[:, 0] > 0]
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        model.fit(unknown, da.from_array(y, chunks=200)[:10])
    # A block that lies about its width.
    lying = da.from_array(X, chunks=(200, 3)).map_blocks(
        lambda b: b[:, :2] if b[0, 0] == X[200, 0] else b, dtype=float)
    with pytest.raises(ValueError, match="block has shape"):
        model.fit(lying, da.from_array(y, chunks=200))
    with pytest.raises(ValueError, match="rows"):
        model.fit(da.from_array(X, chunks=(200, 3)), da.from_array(y[:500], chunks=200))


def test_estimators_without_dask_support_refuse_it_by_name():
    from mondrian import MondrianKernelRidgeCV
    from mondrian.gp import SparseSpectrumGPRegressor
    X, y = _data(n=100, seed=6)
    Xd, yd = da.from_array(X, chunks=50), da.from_array(y, chunks=50)
    for est in (MondrianKernelRidgeCV(n_trees=5), SparseSpectrumGPRegressor(4)):
        with pytest.raises(TypeError, match="dask X"):
            est.fit(Xd, y)
    with pytest.raises(TypeError, match="dask y"):
        MondrianKernelRidgeCV(n_trees=5).fit(X, yd)
    fitted = MondrianFeatures(5, 1.0, random_state=0).fit(X)
    with pytest.raises(TypeError, match="dask X"):
        fitted.partial_fit(Xd)
