"""Mondrian features and ridge on Dask (issue: beyond one machine).

Run on a ``LocalCluster`` of two worker processes; skipped without dask."""
import numpy as np
from sklearn.base import clone
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

import mondrian._dask as mdask  # noqa: E402
from mondrian import MondrianFeatures, MondrianKernelRidge  # noqa: E402
from mondrian.ridge import ridge_solve  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # dashboard_address=":0": the scheduler's HTTP server always starts, on
    # 8787 unless told otherwise, so two runs at once on one machine collide.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", memory_limit="1GiB")
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


def test_ridge_cv_on_dask_selects_as_in_memory(client, monkeypatch):
    # Above CONFIRM_ROWS rows the automatic route draws its pilot and ladder
    # rows from random_state and gathers only those: the same selection as
    # on the numpy arrays.  (Sizes scaled down for the test.)
    from mondrian import MondrianKernelRidgeCV
    from mondrian.path import estimators
    monkeypatch.setattr(estimators, "AUTO_DUAL_ROWS", 100)
    monkeypatch.setattr(estimators, "PILOT_ROWS", 100)
    monkeypatch.setattr(estimators, "CONFIRM_ROWS", 300)
    monkeypatch.setattr(mdask, "SAMPLE_ROWS", 300)
    X, y = _data(n=800, seed=8)
    kw = dict(n_trees=12, random_state=4)
    dsk = MondrianKernelRidgeCV(**kw).fit(da.from_array(X, chunks=(250, 3)),
                                         da.from_array(y, chunks=250))
    # The features' standard deviations (feature_scale='auto') summed over
    # the blocks: numpy's to rounding, not bit for bit, so the in-memory fit
    # is given them.
    np.testing.assert_allclose(dsk.feature_scale_, np.std(X, axis=0), rtol=1e-13)
    mem = MondrianKernelRidgeCV(feature_scale=dsk.feature_scale_, **kw).fit(X, y)
    assert (dsk.lifetime_, dsk.alpha_) == (mem.lifetime_, mem.alpha_)
    np.testing.assert_array_equal(dsk.path_["validation_mse"], mem.path_["validation_mse"])
    np.testing.assert_array_equal(dsk.path_["confirm"]["validation_mse"],
                                  mem.path_["confirm"]["validation_mse"])
    # The final weights solve ridge on the dask-grown forest.
    Phi = dsk.features_.transform(X, dsk.lifetime_)
    ref = ridge_solve(Phi, y - y.mean(), dsk.alpha_, solver="cholesky")
    assert np.max(np.abs(dsk.coef_ - ref.coef)) <= 1e-10 * np.max(np.abs(ref.coef))
    pred = dsk.predict(X)
    assert np.sqrt(np.mean((pred - y) ** 2)) < np.std(y)
    # Small dask data are gathered and fitted in memory: the same model.
    small = MondrianKernelRidgeCV(**kw).fit(da.from_array(X[:250], chunks=100),
                                           da.from_array(y[:250], chunks=100))
    np.testing.assert_array_equal(small.coef_, MondrianKernelRidgeCV(**kw).fit(
        X[:250], y[:250]).coef_)


def test_estimators_without_dask_support_refuse_it_by_name():
    from mondrian import MondrianKernelClassifierCV
    X, y = _data(n=100, seed=6)
    labels = (y > 0).astype(int)
    Xd = da.from_array(X, chunks=50)
    with pytest.raises(TypeError, match="dask X"):
        MondrianKernelClassifierCV(n_trees=5).fit(Xd, labels)
    fitted = MondrianFeatures(5, 1.0, random_state=0).fit(X)
    with pytest.raises(TypeError, match="dask X"):
        fitted.partial_fit(Xd)


@pytest.mark.parametrize("chunks", [128, 1000])
def test_ssgp_on_dask_equals_in_memory(client, chunks):
    from mondrian.gp import SparseSpectrumGPRegressor
    from mondrian.gp.ssgp import _nlml
    X, y = _data(n=1000, seed=7)
    Xd, yd = da.from_array(X, chunks=(chunks, 3)), da.from_array(y, chunks=chunks)
    # Untrained (max_iter=0): the same draw of spectral points (ranked on the
    # same rows), the same posterior weights and predictions.
    kw = dict(n_components=6, max_iter=0, random_state=2)
    mem = SparseSpectrumGPRegressor(**kw).fit(X, y)
    dsk = SparseSpectrumGPRegressor(**kw).fit(Xd, yd)
    np.testing.assert_array_equal(dsk.spectral_points_, mem.spectral_points_)
    # The length scales' bounds: the inputs' deviations over the blocks, the
    # in-memory ones up to the order of the sums.
    np.testing.assert_allclose(dsk.length_scale_bounds_, mem.length_scale_bounds_, rtol=1e-12)
    np.testing.assert_allclose(dsk.weights_mean_, mem.weights_mean_, rtol=1e-10, atol=0)
    mean, std = dsk.predict(da.from_array(X, chunks=(300, 3)), return_std=True)
    ref_mean, ref_std = mem.predict(X, return_std=True)
    np.testing.assert_allclose(mean.compute(), ref_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(std.compute(), ref_std, rtol=1e-10)
    # The NLML and its gradient at any (θ, ε): block sums equal the
    # in-memory sums up to their order.
    theta = mem.theta_ + 0.3
    yn = (y - y.mean()) / y.std()
    a = _nlml(X, yn, float(yn @ yn), mem.spectral_points_, theta, gradient=True,
              block_size=None)
    b = _nlml(Xd, da.from_array(yn, chunks=chunks), float(yn @ yn), mem.spectral_points_,
              theta, gradient=True, block_size=None)
    assert b.nlml == pytest.approx(a.nlml, rel=1e-10)
    assert np.linalg.norm(b.grad_theta - a.grad_theta) <= 1e-10 * np.linalg.norm(a.grad_theta)
    assert np.linalg.norm(b.grad_eps - a.grad_eps) <= 1e-10 * np.linalg.norm(a.grad_eps)
    # Trained on dask: L-BFGS-B on those values reaches the in-memory optimum
    # (to the optimiser's tolerance: the sums' order perturbs its path).
    fitted = SparseSpectrumGPRegressor(6, random_state=2).fit(Xd, yd)
    reference = SparseSpectrumGPRegressor(6, random_state=2).fit(X, y)
    assert fitted.log_marginal_likelihood_value_ == pytest.approx(
        reference.log_marginal_likelihood_value_, rel=1e-6)
    with pytest.raises(ValueError, match="return_cov"):
        fitted.predict(Xd, return_cov=True)
    # With a subsample: the same rows are gathered to the client for the
    # runs, and the Newton refinement on all rows, in dask passes, reaches
    # the in-memory optimum.
    sub = SparseSpectrumGPRegressor(6, subsample=250, random_state=2)
    fitted, reference = clone(sub).fit(Xd, yd), clone(sub).fit(X, y)
    assert fitted.subsample_rows_ == reference.subsample_rows_ == 250
    np.testing.assert_array_equal(fitted.spectral_points_, reference.spectral_points_)
    assert fitted.log_marginal_likelihood_value_ == pytest.approx(
        reference.log_marginal_likelihood_value_, rel=1e-6)


def test_a_worker_killed_mid_fit_gives_the_same_model(client, small_sample, tmp_path):
    # The first block task to run kills its worker process; the nanny
    # restarts it and the scheduler recomputes the lost tasks.  Every task
    # is pure (the forest it inserts into carries its trees' random
    # streams), so the model equals that of an undisturbed fit.
    X, y = _data(n=1200, seed=9)
    flag = str(tmp_path / "killed")

    def die_once(block):
        import os
        if not os.path.exists(flag):
            with open(flag, "w"):
                pass
            os._exit(1)
        return block

    kw = dict(n_trees=10, lifetime=0.7, alpha=0.5, random_state=1)
    chaotic = da.from_array(X, chunks=(300, 3)).map_blocks(die_once, dtype=float,
                                                           meta=np.empty((0, 3)))
    killed = MondrianKernelRidge(**kw).fit(chaotic, da.from_array(y, chunks=300))
    import os
    assert os.path.exists(flag)
    calm = MondrianKernelRidge(**kw).fit(da.from_array(X, chunks=(300, 3)),
                                        da.from_array(y, chunks=300))
    np.testing.assert_array_equal(killed.coef_, calm.coef_)
    np.testing.assert_array_equal(killed.features_.forest_.tau, calm.features_.forest_.tau)


def test_feature_scale_over_blocks_is_the_in_memory_one(client):
    """dask_feature_scale gives feature_std's scales (to rounding: the
    deviations are summed block by block) for every kind of column: plain,
    a gross outlier (the robust estimate, from the same strided rows), a
    rare indicator (half its gap), a constant one (1)."""
    from mondrian._scale import feature_std
    rng = np.random.default_rng(3)
    X = np.c_[rng.standard_normal(900) * 5.0, rng.standard_normal(900),
              (rng.random(900) < 0.03) * 2.0, np.full(900, 7.0)]
    X[4, 1] = 1e9
    scale = mdask.dask_feature_scale("std", da.from_array(X, chunks=(250, 4)))
    np.testing.assert_allclose(scale, feature_std(X), rtol=1e-13)
    assert scale[2] == 1.0 and scale[3] == 1.0 and scale[1] < 2.0
    assert mdask.dask_feature_scale("auto", da.from_array(X, chunks=(250, 4))) is None
    np.testing.assert_array_equal(
        mdask.dask_feature_scale([1.0, 2.0, 3.0, 4.0], da.from_array(X, chunks=(250, 4))),
        [1.0, 2.0, 3.0, 4.0])
