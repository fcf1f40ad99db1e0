"""MondrianKernelRidgeCV and MondrianKernelClassifierCV."""
import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import LifetimePosterior, MondrianKernelClassifierCV, MondrianKernelRidgeCV
from mondrian.ridge import ridge_solve

# These tests run the path mechanics on small fixed grids on purpose: the
# warnings that a selection sits at the edge of a user's grid are tested in
# test_path_auto.py.
pytestmark = [pytest.mark.filterwarnings("ignore:the selected alpha"),
              pytest.mark.filterwarnings("ignore:the validation error still falls")]


@parametrize_with_checks([
    MondrianKernelRidgeCV(n_trees=20, random_state=0),
    MondrianKernelRidgeCV(n_trees=10, solver="cg", random_state=0),
    MondrianKernelRidgeCV(n_trees=8, max_lifetime=1.5, alphas=(0.1, 1.0), selection="evidence",
                          n_lifetimes=8, random_state=0),
    MondrianKernelClassifierCV(n_trees=10, max_lifetime=2.0, loss="hinge", n_lifetimes=8,
                               random_state=0),
    MondrianKernelClassifierCV(n_trees=10, max_lifetime=2.0, loss="logistic", solver="sgd",
                               n_lifetimes=8, random_state=0),
    MondrianKernelClassifierCV(n_trees=10, random_state=0),
    MondrianKernelClassifierCV(n_trees=10, loss="squared_hinge", random_state=0),
], expected_failed_checks=lambda est: (
    {"check_class_weight_classifiers": "class_weight needs solver='newton'"}
    if getattr(est, "loss", None) == "hinge" or getattr(est, "solver", None) == "sgd"
    else {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    y = np.sin(6 * X[:, 0]) + np.cos(4 * X[:, 1]) + 0.05 * rng.standard_normal(300)
    return X, y


@pytest.mark.parametrize("solver", ["cholesky", "cg"])
def test_ridge_cv_selects_on_validation_and_refits(data, solver):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=10, max_lifetime=8.0, alphas=(0.01, 0.3),
                                  solver=solver, n_lifetimes=30, tol=1e-8,
                                  random_state=0).fit(X, y)
    p = model.path_
    g, a = np.unravel_index(np.nanargmin(p["validation_mse"]), p["validation_mse"].shape)
    assert model.lifetime_ == p["lifetimes"][g]
    assert model.alpha_ == p["alphas"][a]
    assert model.solver_ == solver
    # Weights: ridge on all points at the selected pair.
    Phi = model.features_.training_features(model.lifetime_)
    w = ridge_solve(Phi, y - y.mean(), model.alpha_, solver="cholesky").coef
    # Exact refit: rounding only; CG refit to tol: ‖w - w*‖ ≤ tol·‖Φᵀy‖/α.
    bound = 1e-9 if solver == "cholesky" else 1e-8 * np.linalg.norm(Phi.T @ (y - y.mean()))
    assert np.linalg.norm(model.coef_ - w) <= bound / model.alpha_ + 1e-10
    # Predictions at λ̂ use the stored forest (no regrowing).
    np.testing.assert_allclose(model.predict(X[:5]),
                               model.features_.transform(X[:5], model.lifetime_) @ model.coef_
                               + y.mean(), rtol=1e-12, atol=1e-12)
    # Selecting a width beats the constant model by far on this smooth target.
    assert np.nanmin(p["validation_mse"]) < 0.2 * np.var(y)


def test_cg_and_exact_paths_agree(data):
    X, y = data
    kw = dict(n_trees=8, max_lifetime=6.0, alphas=(0.05, 0.5), n_lifetimes=15,
              random_state=3)
    exact = MondrianKernelRidgeCV(solver="cholesky", **kw).fit(X, y)
    cg = MondrianKernelRidgeCV(solver="cg", tol=1e-10, **kw).fit(X, y)
    np.testing.assert_array_equal(exact.path_["lifetimes"], cg.path_["lifetimes"])
    # Converged to 1e-10 relative residual: errors agree far below their size.
    np.testing.assert_allclose(cg.path_["validation_mse"], exact.path_["validation_mse"],
                               rtol=1e-6)
    np.testing.assert_allclose(cg.path_["train_mse"], exact.path_["train_mse"], rtol=1e-6)
    assert np.all(np.isnan(cg.path_["log_marginal_likelihood"]))
    assert np.all(np.isfinite(exact.path_["log_marginal_likelihood"]))


def test_evidence_selection_and_posterior(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=8, max_lifetime=6.0, alphas=(0.01, 0.1),
                                  selection="evidence", random_state=1).fit(X, y)
    p = model.path_
    ll = p["event_log_marginal_likelihood"]
    k, a = np.unravel_index(np.argmax(ll), ll.shape)
    assert model.alpha_ == p["alphas"][a]
    # λ̂ is the midpoint of the event segment of largest evidence.
    breaks = p["event_lifetimes"]
    end = breaks[k + 1] if k + 1 < breaks.shape[0] else 6.0
    assert model.lifetime_ == 0.5 * (breaks[k] + end)
    # The posterior is the one of that alpha's evidence over the segments.
    post = model.posterior_
    ref = LifetimePosterior(breaks, ll[:, a], 6.0)
    np.testing.assert_allclose(post.mass, ref.mass, rtol=1e-12)
    assert post.mean() == pytest.approx(ref.mean(), rel=1e-12)
    lo95, hi95 = post.interval(0.95)
    assert post.cdf(hi95)[0] - post.cdf(lo95)[0] == pytest.approx(0.95, abs=1e-9)
    assert post.cdf(6.0)[0] == pytest.approx(1.0)


@pytest.mark.parametrize("selection", ["evidence", "validation"])
def test_exact_path_in_the_dual_equals_the_primal(data, monkeypatch, selection):
    # 80 points and more columns: the exact path runs in the dual; forced
    # into the primal form it must select the same (λ, α) from the same
    # evidence (or held-out error), posterior and refit (the records agree
    # to ~1e-13).
    import mondrian.path.estimators as estimators
    from mondrian.path import ExactRidgePath

    X, y = data[0][:80], data[1][:80]
    kw = dict(n_trees=10, max_lifetime=6.0, alphas=(0.01, 0.1), selection=selection,
              solver="cholesky", n_lifetimes=12, random_state=2)
    dual = MondrianKernelRidgeCV(**kw).fit(X, y)
    assert dual.path_["exact_form"] == "dual"
    monkeypatch.setattr(estimators, "exact_ridge_path",
                        lambda events, yc, alphas, train_mask=None, n_jobs=None:
                        ExactRidgePath(events, yc, alphas, train_mask=train_mask,
                                       n_jobs=n_jobs))
    primal = MondrianKernelRidgeCV(**kw).fit(X, y)
    assert primal.path_["exact_form"] == "primal"
    assert (dual.lifetime_, dual.alpha_) == (primal.lifetime_, primal.alpha_)
    np.testing.assert_allclose(dual.path_["validation_mse"], primal.path_["validation_mse"],
                               rtol=1e-9)
    np.testing.assert_allclose(dual.path_["train_mse"], primal.path_["train_mse"], rtol=1e-9)
    np.testing.assert_array_equal(dual.path_["event_lifetimes"], primal.path_["event_lifetimes"])
    np.testing.assert_allclose(dual.path_["event_log_marginal_likelihood"],
                               primal.path_["event_log_marginal_likelihood"], rtol=1e-9)
    np.testing.assert_allclose(dual.path_["log_marginal_likelihood"],
                               primal.path_["log_marginal_likelihood"], rtol=1e-9)
    np.testing.assert_allclose(dual.posterior_.mass, primal.posterior_.mass, rtol=1e-6,
                               atol=1e-12)
    np.testing.assert_allclose(dual.coef_, primal.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dual.predict(X, average=True), primal.predict(X, average=True),
                               rtol=1e-8, atol=1e-10)


def test_classifier_selects_width(data):
    X, _ = data
    y = (np.sin(6 * X[:, 0]) > np.cos(4 * X[:, 1])).astype(int)
    clf = MondrianKernelClassifierCV(n_trees=20, max_lifetime=10.0, loss="logistic",
                                     solver="sgd", n_lifetimes=20, random_state=0).fit(X, y)
    acc = clf.path_["validation_accuracy"]
    assert clf.lifetime_ == clf.path_["lifetimes"][np.argmax(acc)]
    # The constant model at λ = 0 gets the majority rate; a learnt width
    # must do clearly better on this non-linear boundary.
    assert acc.max() > max(np.mean(y), 1 - np.mean(y)) + 0.15
    proba = clf.predict_proba(X[:10])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X[:10]), clf.classes_[np.argmax(proba, axis=1)])
    hinge = MondrianKernelClassifierCV(n_trees=5, max_lifetime=2.0, n_lifetimes=4,
                                       loss="hinge", random_state=0).fit(X, y)
    assert not hasattr(hinge, "predict_proba")


@pytest.mark.parametrize("params, match", [
    (dict(alphas=()), "alphas"),
    (dict(alphas=(0.1, -1.0)), "alphas"),
    (dict(max_lifetime=-1.0), "max_lifetime"),
    (dict(max_lifetime=0.0), "max_lifetime"),
    (dict(selection="bic"), "selection"),
    (dict(solver="lu"), "solver"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(selection="evidence", solver="cg"), "evidence"),
    (dict(prior_variance="flat"), "prior_variance"),
    (dict(prior_variance=-1.0), "prior_variance"),
])
def test_ridge_cv_invalid_parameters(data, params, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        MondrianKernelRidgeCV(n_trees=3, **params).fit(X, y)


def test_mismatched_validation_data(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=3, n_lifetimes=4, random_state=0)
    with pytest.raises(ValueError, match="both X_val and y_val"):
        model.fit(X, y, X_val=X[:10])
    with pytest.raises(ValueError, match="features"):
        model.fit(X, y, X_val=X[:10, :1], y_val=y[:10])
    with pytest.raises(ValueError, match="rows"):
        model.fit(X, y, X_val=X[:10], y_val=y[:9])
    with pytest.raises(ValueError):
        model.fit(X, y, X_val=np.full((3, 2), np.nan), y_val=y[:3])
    model.set_params(solver="cg", alphas=(0.1,), max_lifetime=2.0, tol=1e-10)
    model.fit(X[:200], y[:200], X_val=X[200:], y_val=y[200:])
    # The validation error at a grid lifetime is that of ridge on X[:200].
    p = model.path_
    lam = p["lifetimes"][2]
    Phi = model.features_.training_features(lam)
    mean = y[:200].mean()
    w = ridge_solve(Phi[:200], y[:200] - mean, 0.1, solver="cholesky").coef
    assert p["validation_mse"][2, 0] == pytest.approx(
        np.mean((Phi[200:] @ w - (y[200:] - mean)) ** 2), rel=1e-6)


def test_exact_solver_refuses_too_large_paths(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=40, max_lifetime=1e4, solver="cholesky",
                                  random_state=0)
    with pytest.raises(ValueError, match="O\\(C²\\) memory"):
        model.fit(np.vstack([X] * 10) + 1e-3 * np.arange(3000)[:, None], np.tile(y, 10))


def test_bayesian_model_averaging_over_lifetime(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=8, max_lifetime=6.0, alphas=(0.1,),
                                  selection="evidence", prior="log-uniform",
                                  random_state=2).fit(X, y)
    states = model._bma["states"]
    masses = np.array([m for _, m, _ in states])
    assert model.bma_mass_ >= 1 - 1e-6 or len(states) == 200
    # The average is the mass-weighted mean of the per-state predictions.
    Xq = X[:7]
    per_state = np.array([model.features_.transform(Xq, lam) @ c for lam, _, c in states])
    expected = masses @ per_state / masses.sum() + model._bma["mean"]
    np.testing.assert_allclose(model.predict(Xq, average=True), expected, rtol=1e-12)
    # Concentrated posterior: averaging stays close to the selected model.
    assert np.mean((model.predict(X, average=True) - y) ** 2) < 2 * np.mean(
        (model.predict(X) - y) ** 2) + 1e-3
    cg = MondrianKernelRidgeCV(n_trees=4, max_lifetime=2.0, solver="cg", n_lifetimes=4,
                               random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="exact path"):
        cg.predict(X, average=True)
