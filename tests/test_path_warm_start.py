"""Continuing the kernel-width path to a larger Λ (memorylessness, DESIGN.md §2).

``SGDPath.extend`` and ``warm_start=True`` of the path estimators: a path
continued on the extended forest must equal a path run straight through on
that forest.  (The extended forest is a Mondrian forest to the new Λ in
distribution, but not the forest the same seed grows directly to it, so the
reference is always the path on the *extended* forest.)
"""
import pickle

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import MondrianFeatures, MondrianKernelClassifierCV, MondrianKernelRidgeCV
from mondrian.path import (ExactRidgePath, LifetimePosterior, SGDPath, lifetime_grid,
                           split_events)
from mondrian.path import estimators as path_estimators
from mondrian.path.events import _remapper
from mondrian.ridge import ridge_solve

# These tests run the path mechanics on small fixed grids on purpose: the
# warnings that a selection sits at the edge of a user's grid are tested in
# test_path_auto.py.
pytestmark = [pytest.mark.filterwarnings("ignore:the selected alpha"),
              pytest.mark.filterwarnings("ignore:the validation error still falls")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((160, 2))
    y = np.sin(6 * X[:, 0]) + np.cos(4 * X[:, 1]) + 0.05 * rng.standard_normal(160)
    return X, y


def _snapshot(path: dict) -> dict:
    return {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v
            for k, v in path.items()}


# --------------------------------------------------------------------------
# SGDPath.extend
# --------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["squared", "hinge", "logistic"])
@pytest.mark.parametrize("pass_", ["cell", "full"])
def test_sgd_extend_equals_a_straight_run(data, loss, pass_):
    X, y = data
    target = y - y.mean() if loss == "squared" else np.where(y > y.mean(), 1.0, -1.0)
    mask = np.ones(X.shape[0], dtype=bool)
    mask[::5] = False
    mf = MondrianFeatures(n_trees=5, lifetime=1.5, random_state=7).fit(X)
    kw = dict(train_mask=mask, loss=loss, learning_rate=0.3, alpha=1e-3, pass_=pass_)
    path = SGDPath(split_events(mf), target, random_state=np.random.default_rng(3), **kw)
    path.epochs(2)
    path.advance(0.8)
    path.epochs(1)
    path.advance(1.5)
    mf.extend(5.0)
    events = split_events(mf)
    path.extend(events)
    assert path._state.cursor == np.searchsorted(events.times, 1.5, side="right")
    path.advance(3.0)
    path.epochs(1)
    path.advance(5.0)

    # The same schedule on the extended forest from λ = 0, same generator
    # seed: the old events come first and the cell passes visit points in
    # index order, so every step is the same floating-point operation --
    # the results are equal bit for bit.
    ref = SGDPath(events, target, random_state=np.random.default_rng(3), **kw)
    ref.epochs(2)
    ref.advance(0.8)
    ref.epochs(1)
    ref.advance(1.5)
    ref.advance(3.0)
    ref.epochs(1)
    ref.advance(5.0)
    np.testing.assert_array_equal(path.node_weights(), ref.node_weights())
    assert path.intercept == ref.intercept
    np.testing.assert_array_equal(path.decision_points(), ref.decision_points())
    # The continued path did learn on the new events.
    assert path._state.cursor == events.times.shape[0]


def test_sgd_extend_keeps_predictions_and_rejects_other_forests(data):
    X, y = data
    target = np.where(y > y.mean(), 1.0, -1.0)
    mf = MondrianFeatures(n_trees=4, lifetime=1.0, random_state=1).fit(X)
    old = split_events(mf)
    path = SGDPath(old, target, loss="hinge", random_state=np.random.default_rng(0))
    path.epochs(2)
    path.advance(1.0)
    before, w_old = path.decision_points(), path.node_weights()
    mf.extend(3.0)
    new = split_events(mf)
    path.extend(new)
    # Carrying the state over moves weights to the new node ids and changes
    # no prediction (no event of the new forest has been applied yet).
    np.testing.assert_array_equal(path.decision_points(), before)
    W = path.node_weights()
    ids = _remapper(old, new)(np.arange(old.n_nodes))
    np.testing.assert_array_equal(W[ids], w_old)
    assert np.all(np.delete(W, ids) == 0)
    other = split_events(MondrianFeatures(n_trees=4, lifetime=3.0, random_state=2).fit(X))
    with pytest.raises(ValueError, match="extend"):
        path.extend(other)
    with pytest.raises(ValueError, match="inconsistent"):
        path._state._import(dict(path._state._export(), W=np.zeros(3)))


# --------------------------------------------------------------------------
# MondrianKernelRidgeCV(warm_start=True)
# --------------------------------------------------------------------------
def _exact_reference(model, y_all):
    """The exact path run from λ = 0 on the model's (extended) forest, with
    the model's training mask and centring."""
    events = split_events(model.features_)
    mask = np.ones(y_all.shape[0], dtype=bool)
    mask[model.path_["validation_rows"]] = False
    yc = y_all - y_all[mask].mean()
    return events, mask, yc, ExactRidgePath(events, yc, model.path_["alphas"], train_mask=mask)


@pytest.mark.parametrize("selection", ["validation", "evidence"])
def test_ridge_warm_start_equals_the_path_on_the_extended_forest(data, selection):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=6, max_lifetime=2.0, alphas=(0.01, 0.3),
                                  solver="cholesky", selection=selection, n_lifetimes=12,
                                  random_state=0, warm_start=True).fit(X, y)
    first, forest = _snapshot(model.path_), model.features_
    old_events = split_events(forest)
    model.set_params(max_lifetime=6.0).fit(X, y)

    # The forest is extended in place, not regrown: its old events come first.
    assert model.features_ is forest and forest.lifetime_ == 6.0
    events = split_events(forest)
    _remapper(old_events, events)
    assert events.times.shape[0] > old_events.times.shape[0]
    # The old grid rows are kept as they were; the new ones cover the new events.
    p = model.path_
    n_old = first["lifetimes"].shape[0]
    np.testing.assert_array_equal(p["segments"], [0, n_old])
    for key in ("lifetimes", "n_features", "train_mse", "validation_mse",
                "log_marginal_likelihood"):
        np.testing.assert_array_equal(p[key][:n_old], first[key])
    new_grid = p["lifetimes"][n_old:]
    assert 0 < new_grid.shape[0] <= 12
    assert np.all(new_grid > 2.0) and new_grid[-1] == events.times[-1]

    events, mask, yc, ref = _exact_reference(model, y)
    n_train = int(mask.sum())
    val = np.flatnonzero(~mask)
    for g, lam in enumerate(p["lifetimes"]):
        ref.run(lam)
        # Same updates on the same forest; the only differences are the
        # rounding of Φᵀy (prefix sums in another point order after the
        # extension), ~1e-15 relative: 1e-10 leaves a wide margin.
        np.testing.assert_allclose(p["train_mse"][g], ref.train_sse()[-1] / n_train,
                                   rtol=1e-10)
        np.testing.assert_allclose(p["log_marginal_likelihood"][g],
                                   ref.log_marginal_likelihood()[-1], rtol=1e-10)
        if val.size:
            pred = ref.predict_points(val)
            np.testing.assert_allclose(p["validation_mse"][g],
                                       np.mean((pred - yc[val]) ** 2, axis=1), rtol=1e-10)
        assert p["n_features"][g] == events.n_trees + np.searchsorted(events.times, lam, "right")
    # The evidence at every event of [0, Λ_new] and the posterior over λ.
    ref.run(6.0)
    ll = ref.log_marginal_likelihood()
    np.testing.assert_array_equal(p["event_lifetimes"], ref.lifetimes)
    np.testing.assert_allclose(p["event_log_marginal_likelihood"], ll, rtol=1e-10)
    a = int(np.flatnonzero(p["alphas"] == model.alpha_)[0])
    post = LifetimePosterior(ref.lifetimes, ll[:, a], 6.0)
    np.testing.assert_allclose(model.posterior_.mass, post.mass, rtol=1e-9, atol=1e-12)
    assert model.posterior_.max_lifetime == 6.0
    # Re-selection over the whole path.
    if selection == "validation":
        g, a = np.unravel_index(np.argmin(p["validation_mse"]), p["validation_mse"].shape)
        assert (model.lifetime_, model.alpha_) == (p["lifetimes"][g], p["alphas"][a])
    else:
        k, a = np.unravel_index(np.argmax(p["event_log_marginal_likelihood"]), ll.shape)
        end = ref.lifetimes[k + 1] if k + 1 < ref.lifetimes.shape[0] else 6.0
        assert model.lifetime_ == pytest.approx(0.5 * (ref.lifetimes[k] + end))
        assert model.alpha_ == p["alphas"][a]
    # Refit on all points at the selection, from the extended forest.
    Phi = forest.training_features(model.lifetime_)
    w = ridge_solve(Phi, y - y.mean(), model.alpha_, solver="cholesky").coef
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-12)


def test_ridge_warm_start_cg_reaches_the_exact_path(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=6, max_lifetime=2.0, alphas=(0.05, 0.5), solver="cg",
                                  tol=1e-10, n_lifetimes=10, random_state=1,
                                  warm_start=True).fit(X, y)
    first = _snapshot(model.path_)
    model.set_params(max_lifetime=5.0).fit(X, y)
    p = model.path_
    n_old = first["lifetimes"].shape[0]
    np.testing.assert_array_equal(p["validation_mse"][:n_old], first["validation_mse"])
    assert p["lifetimes"].shape[0] > n_old and model.solver_ == "cg"
    _, mask, yc, ref = _exact_reference(model, y)
    val = np.flatnonzero(~mask)
    n_train = int(mask.sum())
    for g, lam in enumerate(p["lifetimes"]):
        ref.run(lam)
        pred = ref.predict_points(val)
        # CG converged to 1e-10 relative residual at every grid lifetime (as in
        # test_cg_and_exact_paths_agree): errors agree far below their size.
        np.testing.assert_allclose(p["validation_mse"][g],
                                   np.mean((pred - yc[val]) ** 2, axis=1), rtol=1e-6)
        np.testing.assert_allclose(p["train_mse"][g], ref.train_sse()[-1] / n_train,
                                   rtol=1e-6)
    g, a = np.unravel_index(np.argmin(p["validation_mse"]), p["validation_mse"].shape)
    assert (model.lifetime_, model.alpha_) == (p["lifetimes"][g], p["alphas"][a])


def test_equal_max_lifetime_reselects_only(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=5, max_lifetime=3.0, alphas=(0.1,), n_lifetimes=8,
                                  solver="cholesky", random_state=0, warm_start=True).fit(X, y)
    forest, first = model.features_, _snapshot(model.path_)
    n_nodes = [t.n_nodes for t in forest.trees_]
    coef = model.coef_.copy()
    model.fit(X.copy(), y.copy())      # equal content, other objects
    assert model.features_ is forest
    assert [t.n_nodes for t in forest.trees_] == n_nodes
    for key in ("lifetimes", "train_mse", "validation_mse", "event_log_marginal_likelihood"):
        np.testing.assert_array_equal(model.path_[key], first[key])
    np.testing.assert_array_equal(model.path_["segments"], [0])
    np.testing.assert_array_equal(model.coef_, coef)


@pytest.mark.parametrize("change", ["y", "X", "X_in_place", "X_val", "n_trees", "alphas",
                                    "random_state", "n_lifetimes", "smaller", "warm_off"])
def test_ridge_warm_start_refits_from_scratch(data, change):
    X, y = data
    X = X.copy()
    model = MondrianKernelRidgeCV(n_trees=5, max_lifetime=2.0, alphas=(0.1, 1.0),
                                  n_lifetimes=8, solver="cholesky", random_state=0,
                                  warm_start=True)
    kw = dict(X_val=X[:30], y_val=y[:30]) if change == "X_val" else {}
    model.fit(X, y, **kw)
    forest = model.features_
    lam = 4.0
    if change == "y":
        y = y + 1.0
    elif change == "X":
        X = X[::-1].copy()
    elif change == "X_in_place":
        X[0, 0] += 0.5          # same object, other content: still a change
    elif change == "X_val":
        kw = dict(X_val=X[:30] + 0.01, y_val=y[:30])
    elif change == "n_trees":
        model.set_params(n_trees=6)
    elif change == "alphas":
        model.set_params(alphas=(0.1, 2.0))
    elif change == "random_state":
        model.set_params(random_state=1)
    elif change == "n_lifetimes":
        model.set_params(n_lifetimes=9)
    elif change == "smaller":
        lam = 1.0
    elif change == "warm_off":
        model.set_params(warm_start=False)
    model.set_params(max_lifetime=lam).fit(X, y, **kw)
    # A new forest grown straight to the new lifetime; the path starts at 0.
    assert model.features_ is not forest
    assert model.features_.lifetime_ == lam
    np.testing.assert_array_equal(model.path_["segments"], [0])
    assert model.path_["lifetimes"][0] == 0.0
    if change == "warm_off":
        assert model._warm is None        # nothing kept without warm_start


def test_ridge_warm_start_ignores_n_jobs(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=4, max_lifetime=2.0, alphas=(0.1, 1.0),
                                  n_lifetimes=5, random_state=0, solver="cholesky",
                                  warm_start=True).fit(X, y)
    forest = model.features_
    model.set_params(max_lifetime=3.0, n_jobs=2).fit(X, y)
    assert model.features_ is forest
    np.testing.assert_array_equal(model.path_["segments"][:1], [0])
    assert model.path_["segments"].shape[0] == 2
    # The same continuation on one thread gives the same path, bit for bit.
    serial = MondrianKernelRidgeCV(n_trees=4, max_lifetime=2.0, alphas=(0.1, 1.0),
                                   n_lifetimes=5, random_state=0, solver="cholesky",
                                   warm_start=True, n_jobs=1).fit(X, y)
    serial.set_params(max_lifetime=3.0).fit(X, y)
    for key in ("lifetimes", "validation_mse", "train_mse", "log_marginal_likelihood"):
        np.testing.assert_array_equal(serial.path_[key], model.path_[key])
    np.testing.assert_array_equal(serial.coef_, model.coef_)


def test_auto_solver_switch_reruns_the_path_on_the_extended_forest(data, monkeypatch):
    X, y = data
    # Shrink the auto threshold so the extension crosses it cheaply.
    monkeypatch.setattr(path_estimators, "AUTO_EXACT_COLUMNS", 40)
    model = MondrianKernelRidgeCV(n_trees=4, max_lifetime=0.5, alphas=(0.1,), n_lifetimes=6,
                                  tol=1e-10, random_state=0, warm_start=True).fit(X, y)
    assert model.solver_ == "cholesky" and model.features_.n_cells_ <= 40
    forest = model.features_
    model.set_params(max_lifetime=6.0).fit(X, y)
    assert model.features_ is forest and forest.n_cells_ > 40
    assert model.solver_ == "cg"
    np.testing.assert_array_equal(model.path_["segments"], [0])
    np.testing.assert_array_equal(model.path_["lifetimes"],
                                  lifetime_grid(split_events(forest), 6))


def test_warm_start_invalid_input(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=3, max_lifetime=1.0, n_lifetimes=4, random_state=0,
                                  warm_start=True).fit(X, y)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="max_lifetime"):
            model.set_params(max_lifetime=bad).fit(X, y)
    with pytest.raises(TypeError, match="warm_start"):
        MondrianKernelRidgeCV(n_trees=3, warm_start="yes").fit(X, y)
    clf = MondrianKernelClassifierCV(n_trees=3, max_lifetime=1.0, n_lifetimes=4,
                                     solver="sgd", random_state=0, warm_start=True)
    labels = (y > y.mean()).astype(int)
    clf.fit(X, labels)
    with pytest.raises(ValueError, match="max_lifetime"):
        clf.set_params(max_lifetime=0.0).fit(X, labels)
    with pytest.raises(TypeError, match="warm_start"):
        clf.set_params(max_lifetime=1.0, warm_start=1).fit(X, labels)


def test_warm_started_estimator_pickles(data):
    X, y = data
    model = MondrianKernelRidgeCV(n_trees=4, max_lifetime=2.0, alphas=(0.1, 1.0),
                                  n_lifetimes=5, random_state=0, solver="cholesky",
                                  warm_start=True).fit(X, y)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X[:7]), model.predict(X[:7]))
    # The learners are not pickled: the copy's next fit starts afresh ...
    forest = clone.features_
    clone.set_params(max_lifetime=3.0).fit(X, y)
    assert clone.features_ is not forest
    np.testing.assert_array_equal(clone.path_["segments"], [0])
    # ... while the original still continues.
    forest = model.features_
    model.set_params(max_lifetime=3.0).fit(X, y)
    assert model.features_ is forest


# --------------------------------------------------------------------------
# MondrianKernelClassifierCV(warm_start=True)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_warm_start_equals_a_straight_run(data, n_classes):
    X, y = data
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    X_tr, X_val, y_tr, y_val = X[:120], X[120:], labels[:120], labels[120:]
    kw = dict(n_trees=8, loss="logistic", solver="sgd", n_epochs=1, n_lifetimes=6,
              random_state=3, warm_start=True)
    clf = MondrianKernelClassifierCV(max_lifetime=2.0, **kw).fit(X_tr, y_tr, X_val, y_val)
    first, forest = _snapshot(clf.path_), clf.features_
    clf.set_params(max_lifetime=8.0).fit(X_tr, y_tr, X_val, y_val)
    assert clf.features_ is forest and forest.lifetime_ == 8.0
    p = clf.path_
    n_old = first["lifetimes"].shape[0]
    np.testing.assert_array_equal(p["segments"], [0, n_old])
    for key in ("lifetimes", "train_accuracy", "validation_accuracy", "n_features"):
        np.testing.assert_array_equal(p[key][:n_old], first[key])
    assert p["lifetimes"].shape[0] > n_old

    # Reference: the estimator's schedule run straight through on the
    # extended forest, with the estimator's SGD generator (third child of
    # the seed) -- the SGD path is deterministic given it, so exactly equal.
    sgd_rng = np.random.default_rng(3).spawn(3)[2]
    events = split_events(forest)
    mask = np.arange(160) < 120
    codes = np.concatenate([y_tr, y_val])
    n_paths = 1 if n_classes == 2 else n_classes
    targets = ([np.where(codes == 1, 1.0, -1.0)] if n_paths == 1 else
               [np.where(codes == k, 1.0, -1.0) for k in range(n_paths)])
    paths = [SGDPath(events, t, train_mask=mask, loss="logistic", learning_rate=0.2,
                     alpha=1e-4, random_state=sgd_rng) for t in targets]
    for path in paths:
        path.epochs(1)
    best = (-1.0, None, None, None)
    for g, lam in enumerate(p["lifetimes"]):
        for path in paths:
            path.advance(lam)
            path.epochs(1)
        dec = np.stack([path.decision_points() for path in paths])
        pred = (dec[0] > 0).astype(int) if n_paths == 1 else np.argmax(dec, axis=0)
        acc = np.mean(pred[~mask] == codes[~mask])
        assert acc == p["validation_accuracy"][g]
        assert np.mean(pred[mask] == codes[mask]) == p["train_accuracy"][g]
        if acc > best[0]:
            cols = events.columns_at(lam)
            best = (acc, lam, np.stack([q.node_weights()[cols] for q in paths]),
                    np.array([q.intercept for q in paths]))
    assert clf.lifetime_ == best[1]
    np.testing.assert_array_equal(clf.coef_, best[2])
    np.testing.assert_array_equal(clf.intercept_, best[3])


def test_classifier_warm_start_refits_on_changes(data):
    X, y = data
    labels = (y > y.mean()).astype(int)
    clf = MondrianKernelClassifierCV(n_trees=4, max_lifetime=1.0, n_lifetimes=4,
                                     solver="sgd", random_state=0,
                                     warm_start=True).fit(X, labels)
    forest = clf.features_
    clf.set_params(max_lifetime=2.0).fit(X, 1 - labels)          # other labels
    assert clf.features_ is not forest
    forest = clf.features_
    clf.set_params(max_lifetime=3.0, n_epochs=3).fit(X, 1 - labels)  # other parameter
    assert clf.features_ is not forest
    forest = clf.features_
    clf.set_params(max_lifetime=2.0).fit(X, 1 - labels)          # smaller lifetime
    assert clf.features_ is not forest and clf.features_.lifetime_ == 2.0
    forest = clf.features_
    clf.set_params(max_lifetime=2.0).fit(X, 1 - labels)          # equal: re-select only
    assert clf.features_ is forest
    np.testing.assert_array_equal(clf.path_["segments"], [0])


# scikit-learn's conventions hold with warm_start=True too (the checks refit
# on new data, which must start from scratch, and refit on the same data,
# which must give the same model).
@parametrize_with_checks([
    MondrianKernelRidgeCV(n_trees=10, max_lifetime=3.0, n_lifetimes=6, random_state=0,
                          warm_start=True),
    MondrianKernelClassifierCV(n_trees=8, max_lifetime=2.0, n_lifetimes=6, solver="sgd",
                               random_state=0, warm_start=True),
], expected_failed_checks=lambda est: (
    {"check_class_weight_classifiers": "class_weight needs solver='newton'"}
    if getattr(est, "solver", None) == "sgd" else {}))
def test_sklearn_compatible_with_warm_start(estimator, check):
    check(estimator)
