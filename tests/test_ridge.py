"""Ridge regression on Mondrian features (paper Sec. 4.2.1)."""
import numpy as np
import pytest
import scipy.sparse as sp

from mondrian import MondrianFeatures, MondrianKernelRidge, ridge_solve


def _direct(Phi, y, alpha):
    """Dense normal-equation solve with numpy's LAPACK: the reference."""
    P = Phi.toarray()
    return np.linalg.solve(P.T @ P + alpha * np.eye(P.shape[1]), P.T @ y)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.normal(size=400)
    return X, y


@pytest.mark.parametrize("lifetime, expected", [(0.7, "cholesky-primal"),
                                                (3.0, "cholesky-dual")])
def test_cholesky_equals_direct_solve(problem, lifetime, expected):
    X, y = problem
    Phi = MondrianFeatures(n_trees=20, lifetime=lifetime, random_state=0).fit_transform(X)
    assert (Phi.shape[1] <= Phi.shape[0]) == (expected == "cholesky-primal")
    sol = ridge_solve(Phi, y, 0.3, solver="cholesky")
    assert sol.solver == expected
    assert _rel(sol.coef, _direct(Phi, y, 0.3)) < 1e-8


def test_cg_reaches_its_tolerance(problem):
    X, y = problem
    Phi = MondrianFeatures(n_trees=20, lifetime=5.0, random_state=0).fit_transform(X)
    alpha = 0.1
    exact = _direct(Phi, y, alpha)
    sol = ridge_solve(Phi, y, alpha, solver="cg", tol=1e-12)
    assert sol.solver == "cg" and sol.n_iter > 0
    # Residual below tol * ||Phi^T y|| bounds the weight error by cond(A) * tol;
    # cond(A) <= (max eig + alpha) / alpha = (n + alpha)/alpha here (eig(Phi^T Phi) <= n).
    cond = (Phi.shape[0] + alpha) / alpha
    assert _rel(sol.coef, exact) <= cond * 1e-12
    # A warm start at the solution converges at once.
    again = ridge_solve(Phi, y, alpha, solver="cg", tol=1e-10, x0=sol.coef)
    assert again.n_iter <= 1
    with pytest.raises(RuntimeError, match="did not reach"):
        ridge_solve(Phi, y, alpha, solver="cg", tol=1e-14, max_iter=2)


def test_multi_target_and_dense_input(problem):
    X, y = problem
    Phi = MondrianFeatures(n_trees=10, lifetime=3.0, random_state=1).fit_transform(X)
    Y = np.column_stack([y, -2 * y + 1])
    for solver in ("cholesky", "cg"):
        W = ridge_solve(Phi, Y, 0.5, solver=solver, tol=1e-12).coef
        assert W.shape == (Phi.shape[1], 2)
        assert _rel(W[:, 1], _direct(Phi, Y[:, 1], 0.5)) < 1e-6
    dense = ridge_solve(Phi.toarray(), y, 0.5, solver="cholesky").coef
    assert _rel(dense, _direct(Phi, y, 0.5)) < 1e-10


def test_ridge_solve_rejects_bad_arguments(problem):
    X, y = problem
    Phi = sp.csr_array(np.eye(4))
    with pytest.raises(ValueError, match="alpha"):
        ridge_solve(Phi, np.ones(4), 0.0)
    with pytest.raises(ValueError, match="solver"):
        ridge_solve(Phi, np.ones(4), 1.0, solver="qr")
    with pytest.raises(ValueError, match="rows"):
        ridge_solve(Phi, np.ones(5), 1.0)


def test_estimator_matches_features_plus_direct_solve(problem):
    X, y = problem
    model = MondrianKernelRidge(n_trees=25, lifetime=4.0, alpha=0.2, random_state=7).fit(X, y)
    Phi = MondrianFeatures(n_trees=25, lifetime=4.0, random_state=7).fit_transform(X)
    w = _direct(Phi, y - y.mean(), 0.2)
    assert _rel(model.coef_, w) < 1e-8
    assert model.intercept_ == pytest.approx(y.mean())
    X_new = np.random.default_rng(1).random((30, 3)) * 1.4 - 0.2
    pred = MondrianFeatures(n_trees=25, lifetime=4.0, random_state=7).fit(X).transform(X_new) @ w
    assert np.allclose(model.predict(X_new), pred + y.mean(), rtol=1e-8, atol=1e-10)


def test_gram_equals_sparse_product(problem):
    X, y = problem
    mf = MondrianFeatures(n_trees=30, lifetime=2.0, random_state=3, n_jobs=2).fit(X)
    for lam in (None, 0.0, 1.0):
        Phi = mf.training_features(lam)
        G = mf.gram(lam)
        # Counts / M, so both sides are exact up to the rounding of 1/M sums.
        assert np.allclose(G, (Phi.T @ Phi).toarray(), rtol=1e-13, atol=1e-13)
        assert np.array_equal(G, G.T)


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_normal_sums_equal_the_products_of_transform(problem, rotation):
    """normal_sums(X, y) = (ΦᵀΦ, Φᵀy, Φᵀ1) of transform(X) for any points:
    inside the boxes (counts / M) and outside (values below 1/√M), after
    partial_fit (columns in their stable order), at any λ, 1 or 2 targets,
    for any thread count."""
    X, y = problem
    rng = np.random.default_rng(5)
    mf = MondrianFeatures(n_trees=25, lifetime=2.0, random_state=3, n_jobs=2,
                          rotation=rotation).fit(X[:100])
    mf.partial_fit(X[100:])
    outside = X + rng.normal(scale=X.std(axis=0) * 0.8, size=X.shape)
    for points, lam in ((X, None), (outside, None), (outside, 0.7)):
        Phi = mf.transform(points, lam)
        assert np.any(Phi.data < Phi.data.max()) == (points is outside)
        targets = np.column_stack([y, y ** 2])
        G, Pty, Pt1 = mf.normal_sums(points, targets, lam)
        np.testing.assert_allclose(G, (Phi.T @ Phi).toarray(), rtol=1e-12, atol=1e-14)
        assert np.array_equal(G, G.T)
        np.testing.assert_allclose(Pty, Phi.T @ targets, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(Pt1, np.asarray(Phi.sum(axis=0)).ravel(), rtol=1e-12)
        G1, Pty1, _ = mf.normal_sums(points, y, lam)
        np.testing.assert_array_equal(G1, G)
        np.testing.assert_array_equal(Pty1, Pty[:, 0])
        np.testing.assert_array_equal(mf.normal_sums(points, lifetime=lam), G)
    one = MondrianFeatures(n_trees=25, lifetime=2.0, random_state=3, n_jobs=1,
                           rotation=rotation).fit(X[:100])
    one.partial_fit(X[100:])
    np.testing.assert_array_equal(one.normal_sums(outside, y)[0], mf.normal_sums(outside, y)[0])
    with pytest.raises(ValueError, match="y"):
        mf.normal_sums(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        mf.normal_sums(X, np.full(X.shape[0], np.nan))


def test_estimator_primal_path_matches_direct_solve(problem):
    X, y = problem
    model = MondrianKernelRidge(n_trees=20, lifetime=0.7, alpha=0.3, random_state=1).fit(X, y)
    assert model.solver_ == "cholesky-primal"
    Phi = MondrianFeatures(n_trees=20, lifetime=0.7, random_state=1).fit_transform(X)
    assert _rel(model.coef_, _direct(Phi, y - y.mean(), 0.3)) < 1e-8


def test_estimator_cg_close_to_cholesky(problem):
    X, y = problem
    a = MondrianKernelRidge(n_trees=20, lifetime=3.0, alpha=0.5, solver="cholesky",
                            random_state=0).fit(X, y)
    b = MondrianKernelRidge(n_trees=20, lifetime=3.0, alpha=0.5, solver="cg", tol=1e-12,
                            random_state=0).fit(X, y)
    assert b.solver_ == "cg"
    assert np.allclose(a.predict(X), b.predict(X), atol=1e-6)


def test_estimator_learns_a_smooth_function(problem):
    X, y = problem
    rng = np.random.default_rng(3)
    X_test = rng.random((300, 3))
    y_test = np.sin(4 * X_test[:, 0]) + X_test[:, 1] ** 2
    model = MondrianKernelRidge(n_trees=100, lifetime=3.0, alpha=0.1, random_state=0).fit(X, y)
    # The signal has variance ~0.25; predicting it to R^2 > 0.9 needs a working fit.
    assert model.score(X_test, y_test) > 0.9


def test_multi_output_estimator(problem):
    X, y = problem
    Y = np.column_stack([y, y ** 2])
    model = MondrianKernelRidge(n_trees=10, lifetime=2.0, alpha=0.5, random_state=0).fit(X, Y)
    single = MondrianKernelRidge(n_trees=10, lifetime=2.0, alpha=0.5, random_state=0).fit(X, y ** 2)
    assert model.predict(X).shape == (400, 2)
    assert np.allclose(model.predict(X)[:, 1], single.predict(X), atol=1e-9)


def test_auto_solver_takes_the_exact_route_where_it_costs_less(monkeypatch):
    """gram_cholesky_pays: up to AUTO_GRAM_CHOLESKY_MAX columns always (C ≤ N);
    above, by the cost model, and only while the C x C system fits."""
    import mondrian.ridge as r

    monkeypatch.setattr(r, "available_memory", lambda: 16 * 2**30)
    assert r.gram_cholesky_pays(6554, 5056, 350)           # CPU data
    assert not r.gram_cholesky_pays(3000, 5056, 350)       # more columns than points
    # 10⁶ rows, 100 trees, 7919 columns: 3.2e11 flops exact against 3.5e12 of CG
    assert r.gram_cholesky_pays(10**6, 7919, 100)
    # 10⁵ rows, 1000 trees, 20 000 columns: the Gram matrix's 5e11 pair
    # counts tip it to CG (4.2e12 against 3.5e12)
    assert not r.gram_cholesky_pays(10**5, 20000, 1000)
    # the 7919² system (1.5 GB at its peak) where 1 GB is available: CG
    monkeypatch.setattr(r, "available_memory", lambda: 2**30)
    assert not r.gram_cholesky_pays(10**6, 7919, 100)
    assert r.gram_cholesky_pays(10**6, 6000, 100)           # at most 6000: always


def test_estimator_auto_solver_follows_the_cost_model(monkeypatch):
    """Above AUTO_GRAM_CHOLESKY_MAX (lowered here) the estimator factorises
    where the model says so, else runs CG: the same weights to CG's
    tolerance."""
    import mondrian.ridge as r

    rng = np.random.default_rng(0)
    X = rng.random((2000, 3))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.standard_normal(2000)
    # (ridge_solve's own dense route for small systems lowered too)
    monkeypatch.setattr(r, "AUTO_GRAM_CHOLESKY_MAX", 10)
    monkeypatch.setattr(r, "AUTO_CHOLESKY_MAX", 10)
    exact = MondrianKernelRidge(n_trees=20, lifetime=3.0, alpha=0.1, random_state=0).fit(X, y)
    assert exact.solver_ == "cholesky-primal"
    monkeypatch.setattr(r, "available_memory", lambda: 10**5)   # the system does not fit
    cg = MondrianKernelRidge(n_trees=20, lifetime=3.0, alpha=0.1, random_state=0).fit(X, y)
    assert cg.solver_ == "cg"
    # CG to relative residual 1e-8: the weights agree to about that
    np.testing.assert_allclose(cg.coef_, exact.coef_, rtol=0, atol=1e-5 * np.abs(exact.coef_).max())


@pytest.mark.parametrize("order", ["C", "F"])
def test_given_gram_in_either_memory_order_is_factorised_in_place(problem, order):
    """The primal Cholesky factorises a given Gram matrix in its own memory
    (a C-ordered one through its transpose, the same symmetric matrix) and
    solves as the direct formula does."""
    X, y = problem
    features = MondrianFeatures(n_trees=20, lifetime=0.7, random_state=0).fit(X)
    Phi = features.transform(X)
    gram = np.array(features.gram(), order=order)
    sol = ridge_solve(Phi, y, 0.3, solver="cholesky", gram=gram)
    assert sol.solver == "cholesky-primal"
    assert _rel(sol.coef, _direct(Phi, y, 0.3)) < 1e-8
    # overwritten by its factor: the diagonal of the factor is not ΦᵀΦ + αI's
    assert not np.allclose(np.diag(gram), np.diag((Phi.T @ Phi).toarray()) + 0.3)
