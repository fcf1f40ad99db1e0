"""The debiased Mondrian forest of Cattaneo, Klusowski & Underwood
(mondrian/forest/debiased.py): the jackknife's linear algebra, the estimator
and its variance against a direct computation, coverage, bad input."""
import math

import numpy as np
import pytest

from mondrian import DebiasedMondrianForestRegressor
from mondrian.forest.debiased import (aimse_lifetime, forest_variance_constant,
                                      jackknife_weights)


def _smooth(X):
    return np.sin(2 * np.pi * X[:, 0]) + (X[:, 1] ** 2 if X.shape[1] > 1 else 0.0)


@pytest.mark.parametrize("ratios", [[1.0], [1.0, 1.5], [1.0, 1.5, 2.25], [1.0, 0.7, 1.3, 2.0]])
def test_jackknife_weights_solve_their_system(ratios):
    a = np.asarray(ratios)
    omega = jackknife_weights(a)
    J = a.size - 1
    for s in range(J + 1):
        np.testing.assert_allclose(np.sum(omega * a ** (-2.0 * s)), float(s == 0), atol=1e-12)


def test_jackknife_weights_of_the_default():
    # J = 1, a = (1, 1.5): ω₀ + ω₁ = 1, ω₀ + ω₁/2.25 = 0.
    np.testing.assert_allclose(jackknife_weights([1.0, 1.5]), [-0.8, 1.8], rtol=1e-14)
    assert jackknife_weights([1.0]).tolist() == [1.0]


def test_jackknife_cancels_the_bias_expansion():
    # Estimates μ + Σ_s c_s (a_r λ)^{-2s}, s = 1..J+1: the combination keeps μ,
    # cancels s = 1..J, and leaves ω̄ c_{J+1} λ^{-2J-2}, ω̄ = Σ ω_r a_r^{-2J-2}.
    rng = np.random.default_rng(0)
    for J in range(4):
        a = 1.5 ** np.arange(J + 1)
        omega = jackknife_weights(a)
        lam, mu = 3.0, 0.7
        c = rng.normal(size=J + 2)
        est = mu + sum((c[s] * (a * lam) ** (-2.0 * s) for s in range(1, J + 1)), np.zeros(J + 1))
        np.testing.assert_allclose(omega @ est, mu, rtol=1e-12)
        last = c[J + 1] * (a * lam) ** (-2.0 * (J + 1))
        np.testing.assert_allclose(omega @ last,
                                   np.sum(omega * a ** (-2.0 * (J + 1))) * c[J + 1]
                                   * lam ** (-2.0 * (J + 1)), rtol=1e-10)


def _direct_weights(model, x):
    """Weights w_i(x) of the debiased forest, computed point by point from
    the trees (O(n) per tree and point): the conditional-Mondrian walk down
    each tree pruned at a_r λ, a separation at node j sending its
    probability to the points of j's parent (the root's to all points)."""
    forest = model.features_.forest_
    n = forest.n_points
    tau, parent = np.asarray(forest.tau), np.asarray(forest.parent)
    left, right = np.asarray(forest.left), np.asarray(forest.right)
    feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
    lower, upper = np.asarray(forest.lower), np.asarray(forest.upper)
    start, end, perm = np.asarray(forest.start), np.asarray(forest.end), np.asarray(forest.perm)
    per_lifetime = []
    x_raw = x
    for lam in model.lifetime_ratios_ * model.lifetime_:
        w = np.zeros(n)
        for t in range(forest.n_trees):
            # A rotated tree sees x in its own coordinates.
            x = forest.transform(x_raw[None, :], t)[0] if forest.rotation is not None else x_raw
            j, t_prev, surv = int(forest.roots[t]), 0.0, 1.0
            while True:
                gap = np.sum(np.maximum(lower[j] - x, 0) + np.maximum(x - upper[j], 0))
                stay = math.exp(-gap * (min(tau[j], lam) - t_prev))
                donor = parent[j] if parent[j] >= 0 else j
                pts = perm[t, start[donor]:end[donor]]
                w[pts] += surv * (1 - stay) / pts.size
                surv *= stay
                if tau[j] > lam:
                    pts = perm[t, start[j]:end[j]]
                    w[pts] += surv / pts.size
                    break
                t_prev = tau[j]
                j = left[j] if x[feature[j]] <= threshold[j] else right[j]
        per_lifetime.append(w / forest.n_trees)
    return per_lifetime


@pytest.mark.parametrize("debias_order, rotation, variance", [
    (0, None, "cku"), (1, None, "cku"), (2, None, "cku"), (1, "uniform", "cku"),
    (0, None, "loo"), (1, None, "loo"), (1, "uniform", "loo")])
def test_prediction_and_variance_equal_a_direct_computation(debias_order, rotation, variance):
    rng = np.random.default_rng(1)
    X = rng.random((70, 2))
    y = _smooth(X) + 0.3 * rng.normal(size=70)
    model = DebiasedMondrianForestRegressor(n_trees=6, lifetime=3.0, debias_order=debias_order,
                                            random_state=0, rotation=rotation,
                                            variance=variance).fit(X, y)
    assert (model.features_.forest_.rotation is None) == (rotation is None)
    assert model.variance_ == variance
    if variance == "loo":
        # ẽ_i = (y_i - μ̂_λ(X_i)) / (1 - h_i), h_i = Σ_b 1/(B N_b(X_i)) = w_i(X_i).
        own = [_direct_weights(model, x)[0] for x in X]
        h = np.array([w[i] for i, w in enumerate(own)])
        assert np.all(h < 1)  # here every point shares a leaf in some tree
        resid2 = ((y - np.array([w @ y for w in own])) / (1 - h)) ** 2
    # Points inside the data, outside every box, and training points.
    X_test = np.vstack([rng.uniform(-0.5, 1.5, (12, 2)), X[:3]])
    mean, std = model.predict(X_test, return_std=True)
    for k, x in enumerate(X_test):
        ws = _direct_weights(model, x)
        np.testing.assert_allclose([w.sum() for w in ws], 1.0, rtol=1e-12)
        w = sum(o * wr for o, wr in zip(model.jackknife_weights_, ws))
        np.testing.assert_allclose(mean[k], w @ y, rtol=1e-10, atol=1e-12)
        if variance == "cku":
            sigma2 = ws[0] @ (y - ws[0] @ y) ** 2
        else:
            sigma2 = ws[0] @ resid2
        np.testing.assert_allclose(std[k], math.sqrt(sigma2 * np.sum(w**2)), rtol=1e-9,
                                   atol=1e-12)


def test_loo_variance_without_residuals_falls_back_to_parents_and_to_cku():
    # A point alone in its leaf in every tree has no leave-one-out residual
    # (h_i = 1): nodes holding only such points take their parent's value.
    # With 2 points far apart and a long lifetime every point is alone:
    # then CKU's estimator, with a warning.
    rng = np.random.default_rng(5)
    X = np.vstack([rng.random((40, 1)) * 0.01, [[5.0]]])
    y = rng.normal(size=41)
    model = DebiasedMondrianForestRegressor(n_trees=3, lifetime=10.0, random_state=1).fit(X, y)
    forest = model.features_.forest_
    leaf = np.asarray(forest.left) < 0
    count = np.asarray(forest.end) - np.asarray(forest.start)
    lone = leaf & (count == 1) & (np.asarray(forest.lower)[:, 0] == 5.0)
    parent = np.asarray(forest.parent)
    assert lone.sum() == 3  # the far point is alone in every tree
    np.testing.assert_array_equal(model._noise[lone], model._noise[parent[lone]])
    assert np.all(np.isfinite(model._noise))
    X2 = np.array([[0.0], [1.0], [2.0]])
    with pytest.warns(UserWarning, match="alone in its cell in every tree"):
        model = DebiasedMondrianForestRegressor(n_trees=3, lifetime=1e3, random_state=1).fit(
            X2, np.array([0.0, 1.0, 3.0]))
    assert model.variance_ == "cku"
    assert np.all(np.isfinite(model.predict(X2, return_std=True)[1]))


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_walk_agrees_with_the_lookup(rotation):
    # The Python walk over pairs with P < 1 finds the lookup's leaf and P.
    rng = np.random.default_rng(2)
    X = rng.random((300, 3))
    model = DebiasedMondrianForestRegressor(n_trees=8, lifetime=4.0, random_state=0,
                                            rotation=rotation).fit(X, X[:, 0])
    X_test = rng.uniform(-0.3, 1.3, (200, 3))
    lam = model.lifetime_ * 1.5
    leaf, prob, rows, _, q = model._paths(X_test, [lam])[0]
    Phi = model.features_.transform(X_test, lam)
    np.testing.assert_allclose(prob, Phi.toarray()[Phi.toarray() > 0].reshape(200, 8)
                               * math.sqrt(8), rtol=1e-12)
    np.testing.assert_allclose(prob.sum(axis=1) + np.bincount(rows, q, minlength=200), 8.0,
                               rtol=1e-12)
    assert np.all(np.isin(leaf, model.features_.forest_.active_nodes(lam)))


@pytest.mark.parametrize("rotation", [None, "uniform"])
def test_paths_events_equal_a_walk_from_the_root(rotation):
    """Every pair's leaf, stay probability and empty-cell events (node and
    q_j, in path order) equal a walk from the root that reads every box on
    the path: the C walk starts at the first node whose box excludes the
    point and keeps each block of rows' events until they are gathered; 650
    rows (three blocks of 256, the last partial), points inside, around and
    far outside the data; the same arrays on one and two threads."""
    from mondrian._ext import _debias

    rng = np.random.default_rng(7)
    X = rng.random((400, 3))
    model = DebiasedMondrianForestRegressor(n_trees=5, lifetime=6.0, random_state=0,
                                            rotation=rotation).fit(X, X[:, 0])
    forest = model.features_.forest_
    X_test = np.vstack([rng.uniform(-0.2, 1.2, (600, 3)), X[:40], [[9.0, -9.0, 0.5]] * 10])
    lam = model.lifetime_ * 1.5
    # one lifetime alone, or with others sharing the descent: the same arrays
    out = _debias.paths(forest, X_test, [lam], 1)[0]
    for lams, threads in (([lam], 2), ([0.5 * lam, lam, 0.0], 1), ([lam, 0.2 * lam], 2)):
        for a, b in zip(out, _debias.paths(forest, X_test, lams, threads)[lams.index(lam)]):
            np.testing.assert_array_equal(a, b)
    leaf, stay, offset, node, prob = out
    assert np.all(np.diff(offset) >= 0) and offset[-1] == node.size == prob.size
    for bad in ([], [-1.0], [np.nan], [lam, 2.0 * forest.lifetime]):
        with pytest.raises(ValueError, match="lifetime"):
            _debias.paths(forest, X_test, bad, 1)
        with pytest.raises(ValueError, match="lifetime"):
            _debias.paths(forest, X_test[:0], bad, 1)
    tau, parent = np.asarray(forest.tau), np.asarray(forest.parent)
    feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
    left, right = np.asarray(forest.left), np.asarray(forest.right)
    lower, upper = np.asarray(forest.lower), np.asarray(forest.upper)
    M = forest.n_trees
    n_outside = 0
    for i, x_raw in enumerate(X_test):
        for t in range(M):
            x = forest.transform(x_raw[None, :], t)[0] if rotation else x_raw
            j, t_prev, surv, events = int(forest.roots[t]), 0.0, 1.0, []
            while True:
                gap = np.sum(np.maximum(lower[j] - x, 0) + np.maximum(x - upper[j], 0))
                rate = gap * (min(tau[j], lam) - t_prev)
                if rate > 0:
                    events.append((j, -surv * math.expm1(-rate)))
                    surv *= math.exp(-rate)
                if tau[j] > lam:
                    break
                t_prev, j = tau[j], (left[j] if x[feature[j]] <= threshold[j] else right[j])
            p = i * M + t
            assert leaf[i, t] == j
            np.testing.assert_allclose(stay[i, t], surv, rtol=1e-12)
            got = slice(offset[p], offset[p + 1])
            assert list(node[got]) == [e[0] for e in events]
            np.testing.assert_allclose(prob[got], [e[1] for e in events], rtol=1e-12)
            n_outside += bool(events)
            # the events start at or below the first node whose box excludes x
            assert not events or parent[events[0][0]] < 0 or np.all(
                (lower[parent[events[0][0]]] <= x) & (x <= upper[parent[events[0][0]]]))
    assert 0.3 * X_test.shape[0] * M < n_outside < X_test.shape[0] * M


def test_constants_reproduced_and_prediction_linear_in_y():
    rng = np.random.default_rng(3)
    X = rng.random((200, 2))
    X_test = rng.uniform(-1, 2, (50, 2))
    params = dict(n_trees=10, lifetime=5.0, random_state=0)
    mean, std = DebiasedMondrianForestRegressor(**params).fit(X, np.full(200, 2.5)).predict(
        X_test, return_std=True)
    np.testing.assert_allclose(mean, 2.5, rtol=1e-13)
    np.testing.assert_allclose(std, 0.0, atol=1e-12)
    y1, y2 = rng.normal(size=200), rng.normal(size=200)
    p1, p2, p12 = (DebiasedMondrianForestRegressor(**params).fit(X, y).predict(X_test)
                   for y in (y1, y2, y1 - 3 * y2))
    np.testing.assert_allclose(p12, p1 - 3 * p2, rtol=1e-10, atol=1e-12)
    # Training points only: every P_b = 1, no empty cell anywhere.
    model = DebiasedMondrianForestRegressor(**params).fit(X, y1)
    assert model._paths(X, [model.lifetime_])[0][2].size == 0
    mean, std = model.predict(X, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(std > 0)


def test_debiasing_removes_the_leading_bias():
    # Noise-free sin(2πx) on 20000 uniform points, λ = 20, 300 trees: at the
    # interior points the forest's bias is close to B₁/λ² = ½μ''(x)/λ²
    # (within 15 %: finite n and trees, the next term B₂λ⁻⁴ is 7 % of it), and the
    # debiased forest's is below a fifth of it.
    rng = np.random.default_rng(4)
    X = rng.random((20000, 1))
    y = _smooth(X)
    pts = np.array([[0.25], [0.75]])
    second = -0.5 * (2 * np.pi) ** 2 * np.sin(2 * np.pi * pts[:, 0]) / 20.0**2
    bias = {J: DebiasedMondrianForestRegressor(n_trees=300, lifetime=20.0, debias_order=J,
                                               random_state=0).fit(X, y).predict(pts)
            - _smooth(pts) for J in (0, 1)}
    np.testing.assert_allclose(bias[0], second, rtol=0.15)
    assert np.all(np.abs(bias[1]) < 0.2 * np.abs(second))


@pytest.mark.parametrize("d, replicates, noise", [(1, 60, 0.5), (2, 25, 0.5), (2, 25, 0.2)])
def test_interval_coverage(d, replicates, noise, mean_and_se, assert_within_k_se):
    # n = 2000 points, μ = sin(2πx₁) (+ x₂²), noise sd 0.5 or 0.2 (where μ's
    # variation across a cell is comparable to the noise: the paper's σ̂²
    # covers 0.98 there, doc/forests.rst); 95 % intervals at
    # defaults at 50 fixed interior points.  Coverage is averaged over the 50
    # points of each replicate (the points share the data and the trees, so
    # they are not independent); the replicates are independent, and the
    # standard error is that of their means.  Tolerance: 4 standard errors
    # (a two-sided normal deviation beyond 4 has probability 6e-5).
    grid = np.random.default_rng(99).uniform(0.1, 0.9, (50, d))
    covered = []
    for r in range(replicates):
        rng = np.random.default_rng(r)
        X = rng.random((2000, d))
        y = _smooth(X) + noise * rng.normal(size=2000)
        model = DebiasedMondrianForestRegressor(random_state=r).fit(X, y)
        _, ci = model.predict(grid, return_ci=True)
        truth = _smooth(grid)
        covered.append(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
    coverage, se = mean_and_se(covered)
    assert_within_k_se(coverage, 0.95, se, k=4.0)


def test_aimse_lifetime_formula_and_scaling():
    # μ(x) = x² plus noise made orthogonal to the rule's quartic design, so
    # that the regression returns μ exactly: B₁ = ½μ'' = 1 everywhere, σ² =
    # ‖ε‖²/(n - 5), and λ = (4n/(σ² V₁ |𝒳|))^{1/5} exactly (to rounding).
    rng = np.random.default_rng(5)
    n = 3000
    x = rng.random(n)
    design = np.vander(x, 5, increasing=True)
    eps = 0.3 * rng.normal(size=n)
    eps -= design @ np.linalg.lstsq(design, eps, rcond=None)[0]
    sigma2 = eps @ eps / (n - 5)
    expected = (4 * n / (sigma2 * forest_variance_constant(1) * np.ptp(x))) ** 0.2
    np.testing.assert_allclose(aimse_lifetime(x[:, None], x**2 + eps), expected, rtol=1e-8)
    # Exact equivariances: X in other units scales λ inversely; y's units do not matter.
    X2 = rng.random((500, 2))
    y2 = _smooth(X2) + 0.2 * rng.normal(size=500)
    lam = aimse_lifetime(X2, y2)
    np.testing.assert_allclose(aimse_lifetime(X2 * 4.0 - 7.0, y2), lam / 4.0, rtol=1e-8)
    np.testing.assert_allclose(aimse_lifetime(X2, 3.0 * y2 + 1.0), lam, rtol=1e-8)
    # In any units: X scaled by a power of two, as far as 2^±300 (where the
    # curvature, ~extent⁻⁴, and the volume once overflowed and the rule gave
    # up), scales λ exactly inversely.
    for k in (-300, -120, 120, 300):
        assert aimse_lifetime(X2 * 2.0**k, y2) == lam * 2.0**-k
    # A constant column is left out: it changes nothing.
    np.testing.assert_allclose(aimse_lifetime(np.column_stack([X2, np.ones(500)]), y2), lam,
                               rtol=1e-8)


def test_aimse_rule_takes_the_central_box_of_a_heavy_tailed_coordinate():
    # One value of 10⁹ among 1500 standard normal ones: that coordinate's
    # deviation is far above 30 times its IQR/1.349, so the rule's box is its
    # central 99 % (RULE_TAIL) with its values outside clipped to it -- the
    # rule on the column clipped beforehand (which is then not heavy-tailed
    # and keeps its full extent), to the bit.
    from mondrian.forest.debiased import RULE_TAIL
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 3))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(1500)
    far = X.copy()
    far[0, 0] = 1e9
    lam = aimse_lifetime(far, y)
    q = np.percentile(far[:, 0], [100 * RULE_TAIL, 100 * (1 - RULE_TAIL)])
    clipped = far.copy()
    clipped[:, 0] = np.clip(clipped[:, 0], *q)
    assert lam == aimse_lifetime(clipped, y)
    # Near the rule without the far value: the central 99 % of 1500 normal
    # values spans about 5.2 deviations against the full range's 6.5, so the
    # volume shrinks by about 0.8 and λ grows by 0.8^(-1/7) ≈ 1.03 (d = 3),
    # plus the curvature fit on slightly different points: within 10 %.
    # The bounding box (10⁹ wide) put λ 20 times lower: test RMSE 0.89 sd.
    assert lam == pytest.approx(aimse_lifetime(X, y), rel=0.1)
    # The forest then learns: test RMSE 0.37 of the truth's deviation, 0.65
    # with the bounding box.
    test = rng.standard_normal((500, 3))
    truth = np.sin(test[:, 0]) + test[:, 1] ** 2
    model = DebiasedMondrianForestRegressor(random_state=0).fit(far, y)
    assert np.sqrt(np.mean((model.predict(test) - truth) ** 2)) < 0.5 * np.std(truth)


def test_variance_constant():
    # ((4 - 4 log 2)/3)^d; for d = 1 the integral ∫ (E 1{u ∈ T}/|T|)² du, with
    # T = [-E₁, E₂], E₁, E₂ ~ Exp(1), by quadrature.
    from scipy import integrate

    def g(u):
        inner = lambda t: math.exp(-t) * integrate.quad(lambda e: math.exp(-e) / (e + t),
                                                         0, np.inf)[0]
        return integrate.quad(inner, u, np.inf)[0]

    integral = 2 * integrate.quad(lambda u: g(u) ** 2, 0, 40, limit=200)[0]
    np.testing.assert_allclose(forest_variance_constant(1), integral, rtol=1e-8)
    np.testing.assert_allclose(forest_variance_constant(3), integral**3, rtol=1e-8)


def test_auto_lifetime_falls_back_with_few_points():
    rng = np.random.default_rng(6)
    X = rng.random((5, 3))
    model = DebiasedMondrianForestRegressor(n_trees=5, random_state=0).fit(X, X[:, 0])
    assert model.lifetime_rule_ == "median distance"
    # five rows: too few for feature_scale='auto' to scale (AUTO_SCALE_MIN_ROWS)
    assert model.feature_scale_ is None
    dist = np.abs(X[:, None] - X[None]).sum(-1)[np.triu_indices(5, 1)]
    assert model.lifetime_ == pytest.approx(1 / np.median(dist))
    model = DebiasedMondrianForestRegressor(n_trees=5, random_state=0).fit(
        rng.random((200, 1)), rng.normal(size=200))
    assert model.lifetime_rule_ == "aimse"


def test_bad_input():
    rng = np.random.default_rng(7)
    X, y = rng.random((50, 2)), rng.normal(size=50)
    model = DebiasedMondrianForestRegressor(n_trees=5, lifetime=2.0, random_state=0).fit(X, y)
    for level in (0.0, 1.0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="level"):
            model.predict(X[:2], return_ci=True, level=level)
    with pytest.raises(TypeError, match="return_ci"):
        model.predict(X[:2], return_ci="yes")
    bad = {"debias_order": -1, "lifetime": -1.0, "n_trees": 0, "rotation": "random",
           "variance": "ols"}
    for name, value in bad.items():
        with pytest.raises(ValueError, match=name):
            DebiasedMondrianForestRegressor(**{name: value}).fit(X, y)
    with pytest.raises(ValueError, match="lifetime"):
        DebiasedMondrianForestRegressor(lifetime="bogus").fit(X, y)
    for ratios in ([1.0], [1.5, 1.0], [1.0, 1.0], [1.0, -2.0], [1.0, np.inf]):
        with pytest.raises(ValueError, match="lifetime_ratios"):
            DebiasedMondrianForestRegressor(lifetime_ratios=ratios).fit(X, y)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DebiasedMondrianForestRegressor().fit(X_nan, y)
    y_nan = y.copy()
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DebiasedMondrianForestRegressor().fit(X, y_nan)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(X_nan)
    with pytest.raises(ValueError, match="features"):
        model.predict(rng.random((3, 4)))
    with pytest.raises(ValueError, match="ratios"):
        jackknife_weights([1.0, 1.0])
    with pytest.raises(ValueError, match="more points"):
        aimse_lifetime(X[:8], y[:8])


def test_results_do_not_depend_on_threads():
    rng = np.random.default_rng(8)
    X, y = rng.random((400, 2)), rng.normal(size=400)
    X_test = rng.uniform(-0.2, 1.2, (300, 2))
    out = [DebiasedMondrianForestRegressor(n_trees=20, random_state=0, n_jobs=k).fit(X, y)
           .predict(X_test, return_std=True) for k in (1, 2)]
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_auto_lifetime_is_lowered_to_fit_the_available_memory(monkeypatch):
    """lifetime='auto' keeps the rule's λ where the trees fit (and then the
    same trees), and lowers it where they would not: the trees grown to
    max(a_r)·λ then fill about MEMORY_SHARE (0.75) of the memory."""
    import mondrian.features.mondrian as fm
    from mondrian.forest.debiased import FIT_NODE_EXTRA_BYTES

    rng = np.random.default_rng(0)
    X = rng.random((3000, 2))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(3000)
    free = DebiasedMondrianForestRegressor(n_trees=20, random_state=0, n_jobs=2).fit(X, y)
    assert not free.memory_capped_ and free.lifetime_rule_ == "aimse"
    per_node = fm.node_bytes(2) + FIT_NODE_EXTRA_BYTES
    overhead = fm._MemoryBudget(X, 20, 2).fixed() + (8 << 20)
    available = int(0.5 * free.features_.forest_.n_nodes * per_node) + overhead
    monkeypatch.setattr(fm, "available_memory", lambda: available)
    capped = DebiasedMondrianForestRegressor(n_trees=20, random_state=0, n_jobs=2).fit(X, y)
    assert capped.memory_capped_ and capped.lifetime_ < free.lifetime_
    assert capped.features_.lifetime_ == pytest.approx(1.5 * capped.lifetime_, rel=1e-12)
    used = overhead + capped.features_.forest_.n_nodes * per_node
    # aimed at 0.75 of it, from two pilot trees' node counts (a few % apart
    # from the forest's mean here)
    assert 0.5 * available <= used <= 0.9 * available
    mean, ci = capped.predict(X[:5], return_ci=True)
    assert np.all(ci[:, 0] < mean) and np.all(mean < ci[:, 1])
