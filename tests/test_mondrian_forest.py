"""Mondrian forests on the kernel's trees (mondrian/forest/estimators.py, c/nodestats.h,
c/mforest.h): node statistics, the Gaussian posterior, the conditional
Mondrian mixture and the estimators' conventions."""
import numpy as np
import pytest

from mondrian import MondrianFeatures, MondrianForestClassifier, MondrianForestRegressor
from mondrian._ext import _mforest


def _data(n=200, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _node_points(forest, j):
    return np.asarray(forest.perm[forest.tree_of[j]][forest.start[j]:forest.end[j]])


def _check_stats(forest, y, labels, n_classes):
    count, total, sumsq = _mforest.regression_stats(forest, y, 2)
    counts = _mforest.class_stats(forest, labels, n_classes, 2)
    for j in range(forest.n_nodes):
        idx = _node_points(forest, j)
        assert count[j] == idx.size
        # sums in another order than numpy's: equal to rounding
        np.testing.assert_allclose(total[j], y[idx].sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sumsq[j], (y[idx] ** 2).sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(counts[j], np.bincount(labels[idx], minlength=n_classes))


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_node_stats_equal_numpy_after_fit_and_insertion(rotation):
    X, y = _data(150, 3)
    labels = (y > np.median(y)).astype(np.int64) + (X[:, 2] > 0.5)
    mf = MondrianFeatures(n_trees=4, lifetime=6.0, random_state=0, rotation=rotation).fit(X)
    _check_stats(mf.forest_, y, labels, 3)
    X2, y2 = _data(60, 3, seed=1)
    mf.partial_fit(X2)
    labels2 = np.arange(60) % 3
    _check_stats(mf.forest_, np.concatenate([y, y2]), np.concatenate([labels, labels2]), 3)


def test_node_stats_bad_labels():
    X, y = _data(30)
    forest = MondrianFeatures(n_trees=2, lifetime=3.0, random_state=0).fit(X).forest_
    with pytest.raises(ValueError, match="label outside"):
        _mforest.class_stats(forest, np.full(30, 2), 2)
    with pytest.raises(ValueError, match="entries"):
        _mforest.regression_stats(forest, y[:-1])


def test_estimator_stats_after_partial_fit():
    X, y = _data(120)
    model = MondrianForestRegressor(n_trees=5, lifetime=5.0, random_state=0,
                                    noise_variance=0.1, prior_scale=1.0).fit(X, y)
    X2, y2 = _data(40, seed=3)
    model.partial_fit(X2, y2)
    forest = model.forest_
    yc = np.concatenate([y, y2]) - model.y_mean_
    for j in range(forest.n_nodes):
        idx = _node_points(forest, j)
        assert model.node_count_[j] == idx.size
        np.testing.assert_allclose(model.node_sum_[j], yc[idx].sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(model.node_sumsq_[j], (yc[idx] ** 2).sum(), rtol=1e-12,
                                   atol=1e-12)


def test_unsmoothed_prediction_at_training_points_is_mean_of_leaf_means():
    X, y = _data(100)
    model = MondrianForestRegressor(n_trees=6, lifetime=8.0, smoothing=False,
                                    random_state=0).fit(X, y)
    forest = model.forest_
    expected = np.zeros(len(y))
    for j in np.flatnonzero(np.isinf(forest.tau)):
        idx = _node_points(forest, j)
        expected[idx] += y[idx].mean()
    expected /= forest.n_trees
    # Training points lie in every box on their path: only the leaf
    # component, exact up to the rounding of sums.
    np.testing.assert_allclose(model.predict(X), expected, rtol=1e-12, atol=1e-12)


def _dense_posterior(forest, m, lam, y, h2, theta, s2, mu0):
    """Posterior of the node means of tree m pruned at lam by dense Gaussian
    conditioning: mu_j is a Brownian motion at time t_j along the tree, so
    Cov(mu_i, mu_j) = phi(t of the deepest common ancestor)."""
    lo, hi = forest.node_offset[m], forest.node_offset[m + 1]
    tau, parent = forest.tau, forest.parent
    nodes = [j for j in range(lo, hi) if parent[j] < 0 or tau[parent[j]] <= lam]
    t = {j: min(tau[j], lam) for j in nodes}

    def ancestors(j):
        out = [j]
        while parent[out[-1]] >= 0:
            out.append(parent[out[-1]])
        return out

    phi = lambda s: h2 * -np.expm1(-s / theta)
    anc = {j: set(ancestors(j)) for j in nodes}
    K = np.array([[phi(max(t[a] for a in anc[i] & anc[j]) if i != j else t[i])
                   for j in nodes] for i in nodes])
    active = [j for j in nodes if tau[j] > lam]
    rows, cols = [], []
    for j in active:
        for p in _node_points(forest, j):
            rows.append(p)
            cols.append(nodes.index(j))
    A = np.zeros((len(rows), len(nodes)))
    A[np.arange(len(rows)), cols] = 1.0
    S = A @ K @ A.T + s2 * np.eye(len(rows))
    G = K @ A.T @ np.linalg.inv(S)
    mean = mu0 + G @ (y[rows] - mu0)
    cov = K - G @ A @ K
    return nodes, mean, cov


def test_gaussian_posterior_equals_dense_conditioning():
    X, y = _data(40)
    forest = MondrianFeatures(n_trees=2, lifetime=4.0, random_state=1).fit(X).forest_
    count, total, _ = _mforest.regression_stats(forest, y)
    h2, theta, s2, mu0 = 0.7, 2.5, 0.05, 0.3
    for lam in (1.5, 4.0):
        mean, var, cov = _mforest.gauss_posterior(forest, lam, count, total, mu0, h2, theta,
                                                  s2)
        for m in range(forest.n_trees):
            nodes, dmean, dcov = _dense_posterior(forest, m, lam, y, h2, theta, s2, mu0)
            np.testing.assert_allclose(mean[nodes], dmean, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(var[nodes], np.diag(dcov), rtol=1e-9, atol=1e-12)
            # Cov(mu_parent(j), mu_j | data), 0 at the root
            pos = {j: k for k, j in enumerate(nodes)}
            dpc = [0.0 if forest.parent[j] < 0 else dcov[pos[forest.parent[j]], pos[j]]
                   for j in nodes]
            np.testing.assert_allclose(cov[nodes], dpc, rtol=1e-8, atol=1e-12)
        pruned = np.array([p < 0 or forest.tau[p] <= lam for p in forest.parent])
        assert np.all(np.isnan(mean[~pruned])) and np.all(np.isfinite(mean[pruned]))


def _direct_moments(model, X, lam):
    """The mixture of every tree's Gaussians along the conditional Mondrian
    path, the separation components integrated over the separation time by
    quadrature (the C code has them in closed form), and the law of total
    variance, written out in Python."""
    from scipy.integrate import quad

    forest = model.forest_
    noise, theta = model._resolved
    h2, s2 = model.y_var_, noise * model.y_var_
    mean, var, cov = _mforest.gauss_posterior(forest, lam, model.node_count_, model.node_sum_,
                                              0.0, h2, theta, s2)
    phi = lambda s: h2 * -np.expm1(-s / theta)

    def separated(t0, t1, eta, mp, vp, mj, vj, c):
        """Moments of x's leaf branching off the edge p -> j at s ~ Exp(eta)
        truncated to (t0, t1]: the Brownian bridge, then the new leaf."""
        norm = -np.expm1(-eta * (t1 - t0))

        def moments(s, which):
            r = (phi(s) - phi(t0)) / (phi(t1) - phi(t0))
            m = mp + r * (mj - mp)
            v = ((1 - r) ** 2 * vp + r ** 2 * vj + 2 * r * (1 - r) * c
                 + (phi(s) - phi(t0)) * (phi(t1) - phi(s)) / (phi(t1) - phi(t0))
                 + phi(lam) - phi(s) + s2)
            dens = eta * np.exp(-eta * (s - t0)) / norm
            return dens * (m if which == 0 else v + m * m)

        opts = dict(epsabs=1e-13, epsrel=1e-12, limit=200)
        return (quad(moments, t0, t1, args=(0,), **opts)[0],
                quad(moments, t0, t1, args=(1,), **opts)[0])

    out_mean, out_var = [], []
    for x_raw in X:
        first = second = 0.0
        for m in range(forest.n_trees):
            # tree m's coordinates (c/forest.h): (x - c) Q_m, or x
            x = x_raw if forest.rotation is None else \
                (x_raw - forest.center) @ forest.rotation[m]
            j, t_prev, surv = forest.node_offset[m], 0.0, 1.0
            while True:
                t_end = min(forest.tau[j], lam)
                gap = np.sum(np.maximum(forest.lower[j] - x, 0)
                             + np.maximum(x - forest.upper[j], 0))
                if gap > 0 and t_end > t_prev:
                    p = 1 - np.exp(-(t_end - t_prev) * gap)
                    par = forest.parent[j]
                    if par < 0:
                        c1, c2 = separated(t_prev, t_end, gap, 0.0, 0.0, mean[j], var[j], 0.0)
                    else:
                        c1, c2 = separated(t_prev, t_end, gap, mean[par], var[par], mean[j],
                                           var[j], cov[j])
                    first += surv * p * c1
                    second += surv * p * c2
                    surv *= 1 - p
                if forest.tau[j] > lam:
                    first += surv * mean[j]
                    second += surv * (var[j] + s2 + mean[j] ** 2)
                    break
                t_prev = forest.tau[j]
                f = forest.feature[j]
                j = forest.left[j] if x[f] <= forest.threshold[j] else forest.right[j]
        first /= forest.n_trees
        second /= forest.n_trees
        out_mean.append(first + model.y_mean_)
        out_var.append(second - first ** 2)
    return np.array(out_mean), np.sqrt(np.array(out_var))


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_return_std_is_law_of_total_variance_of_the_mixture(rotation):
    X, y = _data(30)
    model = MondrianForestRegressor(n_trees=3, lifetime=5.0, random_state=0, rotation=rotation,
                                    noise_variance=0.05, prior_scale=0.5).fit(X, y)
    rng = np.random.default_rng(5)
    Xq = np.vstack([rng.random((10, 2)), rng.random((5, 2)) * 3 - 1, X[:3]])
    for lam in (1.0, 5.0):
        mean, std = model.predict(Xq, return_std=True, lifetime=lam)
        dmean, dstd = _direct_moments(model, Xq, lam)
        # quadrature to ~1e-12 against the closed form
        np.testing.assert_allclose(mean, dmean, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(std, dstd, rtol=1e-8)
        assert np.all(std > 0)


def test_lifetime_zero_gives_the_global_mean():
    X, y = _data(80)
    model = MondrianForestRegressor(n_trees=5, lifetime=6.0, random_state=0).fit(X, y)
    # λ = 0: every prior increment is 0, the node means are the prior's, ȳ.
    np.testing.assert_allclose(model.predict(X[:5], lifetime=0.0), np.mean(y), rtol=1e-14)
    # λ → 0: the prior variance of the means, σ_H²(1 - exp(-λ/θ)), vanishes,
    # so the posterior means tend to ȳ (at λ = 1e-9·Λ within 1e-6 of it).
    np.testing.assert_allclose(model.predict(X[:5], lifetime=6e-9), np.mean(y), atol=1e-6)
    clf = MondrianForestClassifier(n_trees=5, lifetime=6.0, smoothing=False,
                                   random_state=0).fit(X, y > 1)
    freq = np.mean(y > 1)
    np.testing.assert_allclose(clf.predict_proba(X[:5], lifetime=0.0)[:, 1], freq, rtol=1e-12)


def test_points_outside_the_hull():
    X, y = _data(200)
    model = MondrianForestRegressor(n_trees=20, random_state=0, noise_variance=0.03,
                                    prior_scale=1.0, aggregation=False).fit(X, y)
    far = X[:20] + 50.0
    mean_in, std_in = model.predict(X, return_std=True)
    mean_out, std_out = model.predict(far, return_std=True)
    assert np.all(np.isfinite(mean_out)) and np.all(np.isfinite(std_out))
    # 50 units away (ℓ₁ gap ≥ 98 to every box on the path) x stays with the
    # training points with probability exp(-Σ_j Δ_j η_j) ≤ exp(-98 λ), the
    # Δ_j summing to λ: x separates almost surely on the root's edge, early
    # (rate 98), with nearly the prior predictive N(ȳ, φ(λ) + σ_y²), wider
    # than every training point's mixture.
    assert std_out.min() > std_in.max()
    assert model.lifetime_ > 0.1  # exp(-9.8) < 1e-4 left with the points
    # Separating on a root's edge, x's mean is the bridge between the prior
    # mean ȳ and the root's posterior mean: the prediction lies between ȳ
    # and the roots' means (up to the mass left with the points).
    post_mean = model._components(model.lifetime_, model._resolved)[0]
    roots = post_mean[np.asarray(model.forest_.roots)] + model.y_mean_
    lo, hi = min(roots.min(), model.y_mean_), max(roots.max(), model.y_mean_)
    slack = 1e-4 * np.ptp(y)
    assert np.all(mean_out >= lo - slack) and np.all(mean_out <= hi + slack)


def test_reproducible_for_any_thread_count():
    X, y = _data(150)
    Xq = np.random.default_rng(2).random((50, 2)) * 1.4 - 0.2
    a = MondrianForestRegressor(n_trees=8, random_state=3, n_jobs=1).fit(X, y)
    b = MondrianForestRegressor(n_trees=8, random_state=3, n_jobs=2).fit(X, y)
    assert a.lifetime_ == b.lifetime_ and a.hyper_ == b.hyper_
    for out_a, out_b in zip(a.predict(Xq, return_std=True), b.predict(Xq, return_std=True)):
        np.testing.assert_array_equal(out_a, out_b)
    ca = MondrianForestClassifier(n_trees=8, random_state=3, n_jobs=1).fit(X, y > 1)
    cb = MondrianForestClassifier(n_trees=8, random_state=3, n_jobs=2).fit(X, y > 1)
    np.testing.assert_array_equal(ca.predict_proba(Xq), cb.predict_proba(Xq))


def test_auto_lifetime_is_on_the_grid_and_predicts_well():
    X, y = _data(400)
    Xt, yt = _data(400, seed=9)
    model = MondrianForestRegressor(n_trees=30, random_state=0).fit(X, y)
    ratio = np.log2(model.max_lifetime_ / model.lifetime_)
    assert abs(ratio - round(ratio)) < 1e-9 and 0 <= ratio <= 12
    assert model.forest_.n_points == 400  # the held-out points were inserted
    rmse = np.sqrt(np.mean((model.predict(Xt) - yt) ** 2))
    # noise sd 0.1, sd of y about 0.8: a fitted forest is far below sd(y)
    assert rmse < 0.25


def _coarse_scored(model):
    """The coarse lifetimes Λ·4⁻ᵏ scored at the default hyperparameters, in
    descending order, with their held-out losses."""
    default = model._default_hyper(model._hyper_grid())
    lams = sorted((lam for lam, h in model.validation_scores_ if h == default), reverse=True)
    coarse = [lam for lam in lams
              if abs(np.log2(model.max_lifetime_ / lam) / 2 % 1) < 1e-9]
    return coarse, [model.validation_scores_[(lam, default)][0] for lam in coarse]


@pytest.mark.parametrize("smoothing", [True, False])
def test_auto_lifetime_descends_from_the_top_when_smoothed(monkeypatch, smoothing):
    """Smoothed, the coarse lifetimes are scored from Λ down only while the
    held-out error strictly falls (the prior's increments vanish down a
    path, so the error plateaus at large λ); unsmoothed, every coarse
    lifetime is scored.  On this data the descent selects what the full
    grid does (it did on 46 fits of 15 real and synthetic sets too)."""
    from mondrian.forest import estimators as est

    X, y = _data(600, 3, seed=4)
    kw = dict(n_trees=20, random_state=2, smoothing=smoothing, aggregation=False)
    model = MondrianForestRegressor(**kw).fit(X, y)
    coarse, loss = _coarse_scored(model)
    steps = est.AUTO_GRID_STEPS // 2 + 1
    if smoothing:
        assert len(coarse) < steps
        assert all(b < a for a, b in zip(loss[:-2], loss[1:-1]))  # fell until ...
        assert not loss[-1] < loss[-2]                            # ... it did not
    else:
        assert len(coarse) == steps
    full = est._grid_lifetime
    monkeypatch.setattr(est, "_grid_lifetime",
                        lambda top, f, descend=False: full(top, f, descend=False))
    grid = MondrianForestRegressor(**kw).fit(X, y)
    assert len(_coarse_scored(grid)[0]) == steps
    assert grid.lifetime_ == model.lifetime_ and grid.hyper_ == model.hyper_


def test_classifier_string_and_integer_labels():
    X, y = _data(200)
    for labels in (np.where(y > 1, "high", "low"), (y > 0.5).astype(int) + (y > 1.3)):
        clf = MondrianForestClassifier(n_trees=10, random_state=0).fit(X, labels)
        proba = clf.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
        assert set(clf.predict(X)) <= set(np.unique(labels))
        assert np.mean(clf.predict(X) == labels) > 0.9


def test_classifier_unsmoothed_at_training_points_is_mean_of_leaf_frequencies():
    X, y = _data(100)
    labels = (y > 0.5).astype(int) + (y > 1.3)
    clf = MondrianForestClassifier(n_trees=5, lifetime=8.0, smoothing=False,
                                   random_state=0).fit(X, labels)
    forest = clf.forest_
    expected = np.zeros((len(y), 3))
    for j in np.flatnonzero(np.isinf(forest.tau)):
        idx = _node_points(forest, j)
        expected[idx] += np.bincount(labels[idx], minlength=3) / idx.size
    np.testing.assert_allclose(clf.predict_proba(X), expected / forest.n_trees, rtol=1e-12)


def test_class_smoothing_equals_ikn_recursion():
    X, y = _data(60)
    labels = (y > 1).astype(np.int64)
    forest = MondrianFeatures(n_trees=1, lifetime=5.0, random_state=0).fit(X).forest_
    counts = _mforest.class_stats(forest, labels, 2)
    base = np.array([0.5, 0.5])
    lam, rate = 5.0, 0.7
    prob = _mforest.class_posterior(forest, lam, counts, base, rate)
    # the whole tree in Python: an internal node's counts are its children's
    # tables (IKN), then G top-down from the base
    tau, parent = forest.tau, forest.parent
    n = forest.n_nodes
    cc = np.zeros((n, 2))
    for j in range(n - 1, -1, -1):
        if tau[j] > lam:
            cc[j] = counts[j]
        else:
            cc[j] = (cc[forest.left[j]] > 0).astype(float) + (cc[forest.right[j]] > 0)
    expected = np.zeros((n, 2))
    for j in range(n):
        g = base if parent[j] < 0 else expected[parent[j]]
        t0 = 0.0 if parent[j] < 0 else min(tau[parent[j]], lam)
        d = np.exp(-rate * (min(tau[j], lam) - t0))
        tab = (cc[j] > 0).astype(float)
        expected[j] = (cc[j] - d * tab + d * tab.sum() * g) / cc[j].sum()
    np.testing.assert_allclose(prob, expected, rtol=1e-12)
    np.testing.assert_allclose(prob.sum(axis=1), 1.0, rtol=1e-12)


def test_classifier_partial_fit():
    X, y = _data(100)
    labels = np.where(y > 1, "b", "a")
    clf = MondrianForestClassifier(n_trees=4, lifetime=5.0, random_state=0, discount=3.0)
    clf.partial_fit(X[:60], labels[:60], classes=["a", "b", "c"])
    clf.partial_fit(X[60:], labels[60:])
    assert list(clf.classes_) == ["a", "b", "c"]
    codes = np.searchsorted(clf.classes_, labels)
    for j in range(clf.forest_.n_nodes):
        idx = _node_points(clf.forest_, j)
        np.testing.assert_array_equal(clf.node_counts_[j], np.bincount(codes[idx], minlength=3))
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="not seen"):
        clf.partial_fit(X[:2], ["a", "z"])


@pytest.mark.parametrize("params, error, match", [
    (dict(lifetime="big"), ValueError, "lifetime"),
    (dict(lifetime=-1.0), ValueError, "lifetime"),
    (dict(n_trees=0), ValueError, "n_trees"),
    (dict(noise_variance=-0.1), ValueError, "noise_variance"),
    (dict(noise_variance="big"), ValueError, "noise_variance"),
    (dict(prior_scale=0.0), ValueError, "prior_scale"),
    (dict(validation_fraction=1.0), ValueError, "validation_fraction"),
    (dict(smoothing="yes"), TypeError, "smoothing"),
    (dict(rotation="random"), ValueError, "rotation"),
])
def test_bad_parameters(params, error, match):
    X, y = _data(30)
    with pytest.raises(error, match=match):
        MondrianForestRegressor(**{"n_trees": 3, **params}).fit(X, y)


def test_bad_input():
    X, y = _data(30)
    model = MondrianForestRegressor(n_trees=3, lifetime=2.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="exceeds the fitted lifetime"):
        model.predict(X, lifetime=3.0)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MondrianForestRegressor(n_trees=3).fit(Xn, y)
    with pytest.raises(ValueError, match="discount"):
        MondrianForestClassifier(n_trees=3, discount=-1.0).fit(X, y > 1)
    with pytest.raises(ValueError, match="Unknown label type|continuous"):
        MondrianForestClassifier(n_trees=3).fit(X, y)


# --------------------------------------------------------------------------
# Leave-one-out selection and the kernel and forest on the same trees


def test_gauss_loo_equals_posterior_without_the_point():
    """mt_forest_gauss_loo's moments for y_i equal, tree by tree, the
    posterior of y_i's active node recomputed from statistics with y_i
    removed from every node holding it (the partition is kept), plus the
    noise: exact up to rounding."""
    X, y = _data(60)
    y = y - y.mean()
    forest = MondrianFeatures(n_trees=3, lifetime=8.0, random_state=0).fit(X).forest_
    lam, prior_var, noise = 5.0, 0.7, 0.05
    thetas, noises = [0.3, 2.0], [noise, 0.2]
    count, total, _ = _mforest.regression_stats(forest, y)
    loo = _mforest.gauss_loo(forest, lam, count, total, y, 0.0, prior_var, thetas, noises)
    assert loo.shape == (2, 60, 2)
    tau, parent = np.asarray(forest.tau), np.asarray(forest.parent)
    for c, (theta, nv) in enumerate(zip(thetas, noises)):
        for i in range(0, 60, 7):
            m1 = m2 = 0.0
            for m in range(3):
                cnt, tot = count.copy(), total.copy()
                active = None
                for j in range(forest.node_offset[m], forest.node_offset[m + 1]):
                    if i in _node_points(forest, j):
                        cnt[j] -= 1
                        tot[j] -= y[i]
                        if tau[j] > lam and (parent[j] < 0 or tau[parent[j]] <= lam):
                            active = j
                mean, var, _ = _mforest.gauss_posterior(forest, lam, cnt, tot, 0.0, prior_var,
                                                        theta, nv)
                m1 += mean[active] / 3
                m2 += (var[active] + nv + mean[active] ** 2) / 3
            np.testing.assert_allclose(loo[c, i], [m1, m2], rtol=1e-10, atol=1e-12)


def test_numeric_lifetime_grows_on_every_point_and_selects_by_loo():
    X, y = _data(300)
    model = MondrianForestRegressor(n_trees=6, lifetime=6.0, random_state=0).fit(X, y)
    # No held-out split: the trees are those of MondrianFeatures on all points.
    ref = MondrianFeatures(n_trees=6, lifetime=6.0, random_state=0).fit(X)
    np.testing.assert_array_equal(model.forest_.tau, ref.forest_.tau)
    assert model.validation_scores_ is None
    lam = model.lifetime_
    kappa = min((k for _, k in model._hyper_grid()),
                key=lambda k: model.loo_scores_[(lam, (0.03, k))][0])
    noise = min((r for r, _ in model._hyper_grid()),
                key=lambda r: model.loo_scores_[(lam, (r, kappa))][1])
    assert model.hyper_ == (noise, kappa)
    # Each recorded score is the LOO score recomputed alone.
    for hyper, score in list(model.loo_scores_.items())[:3]:
        assert model._score_loo(lam, [hyper[1]])[0] == score


def _recording(values: dict):
    """A score over a dict of known values that records what it was asked."""
    asked = []

    def score(v):
        asked.append(v)
        return values[v]
    return score, asked


def test_select_past_edge_steps_past_an_end_while_the_score_improves():
    from mondrian.forest.estimators import EDGE_STEPS, EDGE_TOL, _select_past_edge
    kw = dict(relative=False)
    # An interior minimum: nothing past the grid is asked for.
    score, asked = _recording({1.0: 3.0, 4.0: 1.0, 16.0: 2.0})
    assert _select_past_edge((16.0, 1.0, 4.0), score, **kw) == 4.0
    assert set(asked) == {1.0, 4.0, 16.0}
    # The top end: 64 and 256 improve, 1024 does not -> 256, and the steps
    # are the grid's ratio at that end (4).
    score, asked = _recording({1.0: 5.0, 4.0: 4.0, 16.0: 3.0, 64.0: 2.0, 256.0: 1.0,
                               1024.0: 1.5})
    assert _select_past_edge((1.0, 4.0, 16.0), score, **kw) == 256.0
    assert sorted(set(asked)) == [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0]  # 1024 tried, refused
    # The bottom end, with an improvement smaller than EDGE_TOL: not taken.
    # (Powers of two: the steps are exact.)
    score, _ = _recording({0.125: 0.0, 1.0: 1.0, 8.0: 2.0, 2.0**-6: -0.5 * EDGE_TOL})
    assert _select_past_edge((0.125, 1.0, 8.0), score, **kw) == 0.125
    # relative=True scales the tolerance by the score.
    score, _ = _recording({0.125: 100.0, 1.0: 200.0, 2.0**-6: 100.0 - 0.5 * EDGE_TOL * 100})
    assert _select_past_edge((0.125, 1.0), score, **dict(kw, relative=True)) == 0.125
    score, _ = _recording({0.125: 100.0, 1.0: 200.0, 2.0**-6: 100.0 - 2 * EDGE_TOL * 100,
                           2.0**-9: 100.0})
    assert _select_past_edge((0.125, 1.0), score, **dict(kw, relative=True)) == 2.0**-6
    # Nothing below the floor: a grid starting at it is not extended, and a
    # step that would cross it lands on it.
    score, asked = _recording({1e-8: 0.0, 1e-6: 1.0})
    assert _select_past_edge((1e-8, 1e-6), score, floor=1e-8, **kw) == 1e-8
    assert set(asked) == {1e-8, 1e-6}
    score, asked = _recording({2.0**-16: 0.0, 2.0**-14: 1.0, 2.0**-18: -1.0, 2.0**-20: -2.0})
    assert _select_past_edge((2.0**-16, 2.0**-14), score, floor=2.0**-20, **kw) == 2.0**-20
    assert min(asked) == 2.0**-20
    # `down` replaces the grid's ratio below it: 2^-8, then 2^-12 -> the floor.
    score, asked = _recording({2.0**-4: 0.0, 2.0**-2: 1.0, 2.0**-8: -1.0, 2.0**-10: -2.0})
    assert _select_past_edge((2.0**-4, 2.0**-2), score, floor=2.0**-10, down=2.0**-4,
                             **kw) == 2.0**-10
    assert sorted(set(asked)) == [2.0**-10, 2.0**-8, 2.0**-4, 2.0**-2]
    # Still improving after EDGE_STEPS steps: the last step is kept, and no
    # more are asked for.
    top = {2.0**k: -float(k) for k in range(0, 2 + EDGE_STEPS + 1)}
    score, asked = _recording(top)
    assert _select_past_edge((1.0, 2.0, 4.0), score, **kw) == 2.0 ** (2 + EDGE_STEPS)
    assert max(asked) == 2.0 ** (2 + EDGE_STEPS)


def test_regressor_extends_the_smoothing_grid_past_its_edge():
    """With a prior_scale grid whose best value is its top, the selection
    goes on past it by the grid's ratio, and the recorded leave-one-out
    scores reproduce the choice; the noise never goes below the grid's
    floor."""
    from mondrian.forest.estimators import EDGE_TOL, NOISE_FLOOR
    X, y = _data(300)
    model = MondrianForestRegressor(n_trees=6, lifetime=6.0, random_state=0)
    model._SCALE_GRID = (0.0625, 0.25)  # an instance attribute: a narrow grid
    model.fit(X, y)
    lam = model.lifetime_
    scores = {h: v for (_, h), v in model.loo_scores_.items()}
    kappas = sorted(k for r, k in scores if r == 0.03)
    assert kappas[-1] > 0.25  # it went past the grid's top
    assert kappas == [0.0625 * 4.0**i for i in range(len(kappas))]
    # Every step taken improved the squared error by more than the
    # tolerance, and the last step tried did not.
    mse = [scores[(0.03, k)][0] for k in kappas]
    kappa = model.hyper_[1]
    i = kappas.index(kappa)
    assert all(mse[j + 1] < mse[j] * (1 - EDGE_TOL) for j in range(1, i))
    assert i == len(kappas) - 1 or not mse[i + 1] < mse[i] * (1 - EDGE_TOL)
    assert min(r for r, _ in scores) >= NOISE_FLOOR
    assert lam == 6.0


@pytest.mark.parametrize("smoothing", [True, False])
def test_from_features_predicts_as_fit_on_the_same_trees(smoothing):
    """A forest built on fitted MondrianFeatures equals, to the last bit, the
    one MondrianForestRegressor.fit grows with the same seed (its trees are
    MondrianFeatures' with that seed), more than 1000 points so that λ₀ is
    drawn from a sample too."""
    X, y = _data(1200, 3)
    Xq = np.random.default_rng(4).random((80, 3)) * 1.4 - 0.2
    fitted = MondrianForestRegressor(n_trees=5, lifetime=7.0, random_state=3,
                                     smoothing=smoothing).fit(X, y)
    features = MondrianFeatures(n_trees=5, lifetime=7.0, random_state=3).fit(X)
    built = MondrianForestRegressor.from_features(features, y, random_state=3,
                                                  smoothing=smoothing)
    assert built.forest_ is features.forest_          # shared, not copied
    assert built.hyper_ == fitted.hyper_ and built.lifetime_scale_ == fitted.lifetime_scale_
    for a, b in zip(fitted.predict(Xq, return_std=True), built.predict(Xq, return_std=True)):
        np.testing.assert_array_equal(a, b)
    # At a smaller lifetime: the same trees pruned (unsmoothed, a lifetime
    # is all a prediction depends on).
    low = MondrianForestRegressor.from_features(features, y, lifetime=2.0, random_state=3,
                                                smoothing=smoothing)
    assert low.get_params()["lifetime"] == 2.0 and low.max_lifetime_ == 7.0
    if not smoothing:
        np.testing.assert_array_equal(low.predict(Xq), built.predict(Xq, lifetime=2.0))


def test_kernel_ridge_forest_regressor_shares_trees_and_points():
    from sklearn.base import clone

    from mondrian import MondrianKernelRidge
    X, y = _data(200)
    ridge = MondrianKernelRidge(n_trees=8, lifetime=6.0, alpha=0.1, random_state=1).fit(X, y)
    forest = ridge.forest_regressor(smoothing=False)
    f, g = forest.forest_, ridge.features_.forest_
    assert f is g and np.shares_memory(f.tau, g.tau) and np.shares_memory(f.X, g.X)
    # Unsmoothed at λ = Λ, a training point's prediction is the mean over
    # trees of its leaves' target means (the paper's "Mondrian forest").
    Phi = ridge.features_.training_features()
    leaf_mean = (Phi.T @ y) / (Phi.T @ np.ones(200))      # per column
    expected = (Phi @ leaf_mean) / np.sqrt(8)            # entries 1/√M
    np.testing.assert_allclose(forest.predict(X), expected, rtol=1e-12)
    # The kernel's later insertions grow a copy: the forest keeps its trees.
    X2, y2 = _data(30, seed=5)
    before = forest.predict(X2)
    ridge.partial_fit(X2, y2)
    assert ridge.features_.forest_ is not f and f.n_points == 200
    np.testing.assert_array_equal(forest.predict(X2), before)
    # ... and the forest of the updated kernel holds every point.
    assert ridge.forest_regressor(smoothing=False).forest_.n_points == 230
    # The forest's own partial_fit inserts into a copy.
    forest.partial_fit(X2, y2)
    assert forest.forest_.n_points == 230 and f.n_points == 200
    # clone gives an unfitted estimator with the same parameters.
    params = clone(forest).get_params()
    assert params["n_trees"] == 8 and params["lifetime"] == 6.0 and not params["smoothing"]


def test_from_features_bad_input():
    X, y = _data(50)
    features = MondrianFeatures(n_trees=3, lifetime=4.0, random_state=0).fit(X)
    with pytest.raises(TypeError, match="fitted MondrianFeatures"):
        MondrianForestRegressor.from_features(object(), y)
    with pytest.raises(ValueError, match="not fitted"):
        MondrianForestRegressor.from_features(MondrianFeatures(), y)
    with pytest.raises(ValueError, match="49 entries"):
        MondrianForestRegressor.from_features(features, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        MondrianForestRegressor.from_features(features, np.where(np.arange(50) == 3, np.nan, y))
    with pytest.raises(ValueError, match="lifetime"):
        MondrianForestRegressor.from_features(features, y, lifetime=5.0)
    dropped = MondrianFeatures(n_trees=3, lifetime=4.0, random_state=0,
                               store_points=False).fit(X)
    with pytest.raises(ValueError, match="no training points"):
        MondrianForestRegressor.from_features(dropped, y)
    from mondrian import MondrianKernelRidge
    with pytest.raises(ValueError, match="no training points"):
        MondrianKernelRidge(n_trees=3, lifetime=4.0, store_points=False).fit(X, y) \
            .forest_regressor()
    with pytest.raises(ValueError, match="2 targets"):
        MondrianKernelRidge(n_trees=3, lifetime=4.0).fit(X, np.c_[y, y]).forest_regressor()


def test_loo_selection_identical_for_any_thread_count():
    X, y = _data(300)
    Xq = np.random.default_rng(2).random((40, 2)) * 1.4 - 0.2
    a = MondrianForestRegressor(n_trees=7, lifetime=6.0, random_state=3, n_jobs=1).fit(X, y)
    b = MondrianForestRegressor(n_trees=7, lifetime=6.0, random_state=3, n_jobs=2).fit(X, y)
    assert a.loo_scores_ == b.loo_scores_ and a.hyper_ == b.hyper_
    for out_a, out_b in zip(a.predict(Xq, return_std=True), b.predict(Xq, return_std=True)):
        np.testing.assert_array_equal(out_a, out_b)


@pytest.mark.parametrize("cls", [MondrianForestRegressor, MondrianForestClassifier])
def test_held_out_scoring_on_stored_paths_equals_walking(monkeypatch, cls):
    """lifetime='auto' scores its held-out points on paths walked once
    (_mforest.Paths); with them disabled (every candidate walks the trees)
    every score, the selection and the predictions are the same, bit for bit."""
    import mondrian.forest.estimators as est
    X, y = _data(300)
    y = y if cls is MondrianForestRegressor else y > 1
    Xq = np.random.default_rng(2).random((40, 2)) * 1.4 - 0.2
    a = cls(n_trees=6, random_state=1).fit(X, y)
    monkeypatch.setattr(est, "MAX_PATH_ENTRIES", 0)
    b = cls(n_trees=6, random_state=1).fit(X, y)
    assert a.validation_scores_ == b.validation_scores_
    assert a.lifetime_ == b.lifetime_ and a.hyper_ == b.hyper_
    out_a = a.predict_proba(Xq) if cls is MondrianForestClassifier else a.predict(Xq)
    out_b = b.predict_proba(Xq) if cls is MondrianForestClassifier else b.predict(Xq)
    np.testing.assert_array_equal(out_a, out_b)


def test_paths_equal_walks_and_refuse_a_changed_forest():
    X, y = _data(200, 3)
    model = MondrianForestRegressor(n_trees=4, lifetime=9.0, random_state=0,
                                    noise_variance=0.03, prior_scale=1.0).fit(X, y)
    Xq = np.random.default_rng(1).random((30, 3)) * 1.4 - 0.2
    forest = model.forest_
    paths = _mforest.Paths(forest, Xq, 2)
    assert forest.shared                       # pinned while the paths live
    for lam in (9.0, 3.0, 0.0):
        mean, var = model._moments(Xq, lam, model._resolved)
        mean_p, var_p = model._moments(Xq, lam, model._resolved, paths)
        np.testing.assert_array_equal(mean, mean_p)
        np.testing.assert_array_equal(var, var_p)
    with pytest.raises(OverflowError, match="max_entries"):
        _mforest.Paths(forest, Xq, 1, max_entries=10)
    other = MondrianFeatures(n_trees=4, lifetime=9.0, random_state=1).fit(X).forest_
    with pytest.raises(ValueError, match="another forest"):
        _mforest.gauss_mixture_paths(other, paths, 1.0, *model._components(1.0, model._resolved),
                                     0.0, 1.0, 1.0, 0.1)


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_paths_are_every_node_to_the_leaf_with_its_gap(rotation):
    """_mforest.Paths stores each (point, tree) path from the root to the
    full tree's leaf with the gap to every box on it: against a walk in
    Python, over 1100 points (three blocks of 512 rows, the last partial)
    inside, around and far outside the data; the gaps above the first box
    that excludes a point are exactly 0 (they are written, not computed);
    the same arrays on one and two threads."""
    X, _ = _data(300, 3)
    forest = MondrianFeatures(n_trees=5, lifetime=20.0, random_state=0,
                              rotation=rotation).fit(X).forest_
    rng = np.random.default_rng(3)
    Xq = np.vstack([rng.random((1000, 3)) * 1.4 - 0.2, X[:90], [[7.0, -7.0, 0.5]] * 10])
    a, b = _mforest.Paths(forest, Xq, 1), _mforest.Paths(forest, Xq, 2)
    for name in ("offset", "node", "gap"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    offset, node, gap = (np.asarray(v) for v in (a.offset, a.node, a.gap))
    feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
    left, right = np.asarray(forest.left), np.asarray(forest.right)
    lower, upper = np.asarray(forest.lower), np.asarray(forest.upper)
    M, outside = forest.n_trees, 0
    for i, x_raw in enumerate(Xq):
        for t in range(M):
            x = forest.transform(x_raw[None, :], t)[0] if rotation else x_raw
            j, path = int(forest.roots[t]), []
            while True:
                path.append(j)
                if left[j] < 0:
                    break
                j = left[j] if x[feature[j]] <= threshold[j] else right[j]
            got = slice(offset[i * M + t], offset[i * M + t + 1])
            assert list(node[got]) == path
            expected = [np.sum(np.maximum(lower[k] - x, 0) + np.maximum(x - upper[k], 0))
                        for k in path]
            np.testing.assert_allclose(gap[got], expected, rtol=1e-12, atol=0)
            assert np.all(gap[got][np.asarray(expected) == 0] == 0)
            outside += expected[-1] > 0
    assert 0.2 * Xq.shape[0] * M < outside < Xq.shape[0] * M


def _posterior_args():
    """A small smoothed forest, its targets, and gauss_posterior's arguments."""
    X, y = _data(120)
    model = MondrianForestRegressor(n_trees=4, random_state=0, aggregation=False).fit(X, y)
    return model, y, (model.forest_, model.lifetime_, model.node_count_, model.node_sum_, 0.0,
                      model.y_var_, 0.3, 0.05)


def test_posterior_into_given_arrays():
    """gauss_posterior(out=...) writes the same numbers into the caller's
    arrays (the selection reuses one set for all its candidates) and refuses
    arrays of the wrong size, type or layout."""
    _, _, args = _posterior_args()
    n = args[0].n_nodes
    want = _mforest.gauss_posterior(*args)
    out = tuple(np.full(n, 7.0) for _ in range(3))
    got = _mforest.gauss_posterior(*args, out=out)
    for a, b, c in zip(got, want, out):
        assert a is c
        np.testing.assert_array_equal(a, b)
    for bad in [(np.empty(n - 1), np.empty(n), np.empty(n)),
                (np.empty(n, dtype=np.float32), np.empty(n), np.empty(n)),
                (np.empty(2 * n)[::2], np.empty(n), np.empty(n))]:
        with pytest.raises(ValueError, match="out"):
            _mforest.gauss_posterior(*args, out=bad)
    shared = np.empty(n)
    with pytest.raises(ValueError, match="out"):
        _mforest.gauss_posterior(*args, out=(shared, np.empty(n), shared))
    frozen = np.empty(n)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        _mforest.gauss_posterior(*args, out=(frozen, np.empty(n), np.empty(n)))


def test_posteriors_with_a_given_scratch():
    """gauss_posterior(work=...) and class_posterior(out=..., work=...) give
    the numbers of a call that allocates its own, whatever the scratch held
    before (the selection passes one to every candidate), and refuse a
    scratch of the wrong size, type or layout, or one overlapping out."""
    model, y, args = _posterior_args()
    f, n = model.forest_, model.forest_.n_nodes
    want = _mforest.gauss_posterior(*args)
    work = np.full(5 * n, np.nan)
    for _ in range(2):  # the second call finds the first one's numbers there
        got = _mforest.gauss_posterior(*args, work=work)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    # Another noise level at the same (λ, prior, θ): the increments the last
    # call left in work serve as they are; another θ needs its own.
    other_noise = args[:7] + (0.2,)
    want_noise = _mforest.gauss_posterior(*other_noise)
    for a, b in zip(_mforest.gauss_posterior(*other_noise, work=work, reuse_increments=True),
                    want_noise):
        np.testing.assert_array_equal(a, b)
    other_theta = args[:6] + (0.9,) + args[7:]
    stale = _mforest.gauss_posterior(*other_theta, work=work, reuse_increments=True)
    assert not np.allclose(stale[1], _mforest.gauss_posterior(*other_theta)[1], equal_nan=True)
    with pytest.raises(ValueError, match="reuse_increments"):
        _mforest.gauss_posterior(*args, reuse_increments=True)
    out = tuple(np.empty(n) for _ in range(3))
    for bad in (np.empty(5 * n - 1), np.empty(5 * n, dtype=np.float32),
                np.empty(10 * n)[::2]):
        with pytest.raises(ValueError, match="work"):
            _mforest.gauss_posterior(*args, work=bad)
    big = np.empty(8 * n)
    with pytest.raises(ValueError, match="work"):
        _mforest.gauss_posterior(*args, out=(big[:n], out[1], out[2]), work=big[n - 1:6 * n - 1])
    ok = _mforest.gauss_posterior(*args, out=(big[:n], out[1], out[2]), work=big[n:6 * n])
    np.testing.assert_array_equal(ok[0], want[0])
    inputs = np.empty(7 * n)   # the statistics the belief propagation reads
    inputs[:n], inputs[n:2 * n] = args[2], args[3]
    with pytest.raises(ValueError, match="count or total"):
        _mforest.gauss_posterior(args[0], args[1], inputs[:n], inputs[n:2 * n], *args[4:],
                                 work=inputs[2 * n - 1:7 * n - 1])
    with pytest.raises(ValueError, match="count or total"):
        _mforest.gauss_posterior(args[0], args[1], inputs[:n], inputs[n:2 * n], *args[4:],
                                 out=(inputs[n:2 * n], out[1], out[2]))

    labels = (y > np.median(y)).astype(np.int64)
    counts = _mforest.class_stats(f, labels, 2)
    cargs = (f, model.lifetime_, counts, np.array([0.5, 0.5]), 0.7)
    want = _mforest.class_posterior(*cargs)
    prob, scratch = np.full((n, 2), np.nan), np.full(2 * n, np.nan)
    for _ in range(2):
        got = _mforest.class_posterior(*cargs, out=prob, work=scratch)
        assert got is prob
        np.testing.assert_array_equal(got, want)
    for bad in (np.empty(2 * n - 1), np.empty(2 * n, dtype=np.float32)):
        with pytest.raises(ValueError, match="work"):
            _mforest.class_posterior(*cargs, work=bad)
    with pytest.raises(ValueError, match="out"):
        _mforest.class_posterior(*cargs, out=np.empty((n, 3)))
    with pytest.raises(ValueError, match="work"):
        _mforest.class_posterior(*cargs, out=prob, work=prob.reshape(-1))
    with pytest.raises(ValueError, match="counts"):
        _mforest.class_posterior(*cargs, work=counts.reshape(-1))
    with pytest.raises(ValueError, match="counts"):
        _mforest.class_posterior(*cargs, out=counts)


@pytest.mark.parametrize("make", [
    lambda: MondrianForestRegressor(n_trees=20, random_state=0, n_jobs=2),
    lambda: MondrianForestRegressor(n_trees=20, random_state=0, n_jobs=2, aggregation=True),
    lambda: MondrianForestClassifier(n_trees=20, random_state=0, n_jobs=2)])
def test_auto_lifetime_is_lowered_to_fit_the_available_memory(monkeypatch, make):
    """lifetime='auto' grows the trees to 2⁷λ₀ (here every point ends alone:
    2·N·M nodes), unless that fit would not fit in memory: then Λ is the
    largest lifetime whose fit, counted on two pilot trees, fills
    MEMORY_SHARE of it."""
    import mondrian.features.mondrian as fm
    from mondrian.forest import aggregation as amf

    X, y = _data(3000, d=3)
    target = y if isinstance(make(), MondrianForestRegressor) else y > 1.0
    free = make().fit(X, target)
    assert not free.memory_capped_
    # 2⁷λ₀ (AMF alone: its own AUTO_LIFETIME_FACTOR)
    factor = amf.AUTO_LIFETIME_FACTOR if free.aggregation is True else 2.0**7
    assert free.max_lifetime_ == factor * free.lifetime_scale_
    per_node = free._fit_bytes_per_node(3)
    full = free.forest_.n_nodes * per_node
    # The growth's overhead: the point permutations..., and a 4 MiB arena
    # chunk on each of the 2 threads.
    overhead = fm._MemoryBudget(X, 20, 2).fixed() + (8 << 20)
    lifetimes = []
    for share in (1.0, 0.5):
        available = int(share * full) + overhead
        monkeypatch.setattr(fm, "available_memory", lambda a=available: a)
        model = make().fit(X, target)
        assert model.memory_capped_ and model.max_lifetime_ < free.max_lifetime_
        assert model.lifetime_ <= model.max_lifetime_
        # on the grid 2^(-j/16) below the automatic value
        steps = 16.0 * np.log2(free.max_lifetime_ / model.max_lifetime_)
        assert abs(steps - round(steps)) < 1e-9
        used = overhead + model.forest_.n_nodes * per_node
        # Aimed at MEMORY_SHARE = 0.75 of it, then down to the grid:
        # 0.55-0.72 over 12 seeds and both shares (the estimate from 2 pilot
        # trees scales their nodes by all points / training points, more
        # than the insertion adds).
        assert 0.5 * available <= used <= 0.9 * available
        lifetimes.append(model.max_lifetime_)
    assert lifetimes[1] < lifetimes[0]
    # Where not even the pilot fits, the fit is refused as before.
    monkeypatch.setattr(fm, "available_memory", lambda: 10**5)
    with pytest.raises(MemoryError, match="n_trees=20"):
        make().fit(X, target)


@pytest.mark.parametrize("cls", [MondrianForestRegressor, MondrianForestClassifier])
def test_at_most_max_scored_points_are_held_out(monkeypatch, cls):
    """The held-out part is validation_fraction of the points, at most
    MAX_SCORED of them (all of which score); the trees end up with every
    point either way."""
    import mondrian.forest.estimators as fe

    seen = []
    walk = fe._held_out_paths
    monkeypatch.setattr(fe, "_held_out_paths", lambda f, X, t: seen.append(len(X)) or walk(f, X, t))
    X, y = _data(400)
    target = y if cls is MondrianForestRegressor else y > 1.0
    for cap, held in ((1000, 80), (30, 30)):
        monkeypatch.setattr(fe, "MAX_SCORED", cap)
        model = cls(n_trees=5, random_state=0).fit(X, target)
        assert seen[-1] == held and model.forest_.n_points == 400


def test_selection_reusing_the_increments_scores_as_computing_them(monkeypatch):
    """The held-out selection reuses the prior increments across the noise
    levels tried at one (λ, θ) (``_components``); its scores and choices
    are those of a selection that computes them for every candidate."""
    X, y = _data(400)
    reused = MondrianForestRegressor(n_trees=8, random_state=0, aggregation=False).fit(X, y)
    calls = []
    original = _mforest.gauss_posterior

    def recompute(*args, **kwargs):
        calls.append(kwargs.get("reuse_increments", False))
        kwargs["reuse_increments"] = False
        return original(*args, **kwargs)

    monkeypatch.setattr(_mforest, "gauss_posterior", recompute)
    fresh = MondrianForestRegressor(n_trees=8, random_state=0, aggregation=False).fit(X, y)
    assert any(calls) and not all(calls)   # the selection did reuse them, sometimes
    assert fresh.validation_scores_ == reused.validation_scores_
    assert (fresh.lifetime_, fresh.hyper_) == (reused.lifetime_, reused.hyper_)


@pytest.mark.parametrize("aggregation", [True, False])
def test_pickles_leave_the_prediction_caches_out(aggregation):
    """The node arrays cached by a prediction (AMF weights and components,
    the smoothing's node posterior) are not pickled nor copied; a loaded or
    copied forest computes them again and predicts the same numbers, and
    the original keeps its own."""
    import copy
    import pickle
    X, y = _data(300)
    model = MondrianForestRegressor(n_trees=5, random_state=0,
                                    aggregation=aggregation).fit(X, y)
    want = model.predict(X[:40], return_std=True)
    cached = (lambda m: bool(m._amf_cache)) if aggregation else \
        (lambda m: m._posterior_cache[0] is not None)
    assert cached(model)
    blob = pickle.dumps(model)
    for other in (pickle.loads(blob), copy.copy(model), copy.deepcopy(model)):
        assert not cached(other)
        for a, b in zip(other.predict(X[:40], return_std=True), want):
            np.testing.assert_array_equal(a, b)
    assert cached(model)
    if aggregation:   # emptied by hand, the pickle is the same size
        model._amf_cache = {}
    else:
        model._posterior_cache = [None]
    assert len(pickle.dumps(model)) == len(blob)
