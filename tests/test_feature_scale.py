"""Per-feature length scales (``feature_scale``): the trees cut x / l.

The forest's transform divides every coordinate by l in C (``c/forest.h``),
one exactly rounded division, as numpy's ``X / l`` is: so a forest with a
scale on X is bit for bit the forest without one on X / l, and the default
estimators ('auto': l = the features' standard deviations when the
lifetime is automatic) give the same predictions when a feature is
multiplied by a power of two (exact in floating point, std included).
"""
import pickle
import warnings

import numpy as np
import pytest

from mondrian import (DebiasedMondrianForestRegressor, MondrianFeatures, MondrianForestClassifier,
                      MondrianForestRegressor, MondrianKernelClassifierCV, MondrianKernelRidge,
                      MondrianKernelRidgeCV, MondrianSGDClassifier)
from mondrian._ext._forest import Forest
from mondrian._scale import feature_std, lifetime_scale, resolve_feature_scale
from mondrian.features.mondrian import _MemoryBudget


def _data(rng, n=300, d=4):
    X = rng.standard_normal((n, d)) * np.array([1.0, 30.0, 1e-3, 5e4])[:d]
    y = np.sin(X[:, 0]) + X[:, 1] / 30.0 + 0.1 * rng.standard_normal(n)
    return X, y


def _node_arrays(forest):
    return {name: np.array(getattr(forest, name))
            for name in ("parent", "left", "right", "feature", "threshold", "tau", "lower",
                         "upper", "node_offset")}


# --------------------------------------------------------------- the forest
def test_scaled_forest_is_the_forest_of_the_scaled_points(rng):
    X, _ = _data(rng)
    scale = feature_std(X)
    a = MondrianFeatures(20, "auto", random_state=3, feature_scale=scale).fit(X)
    b = MondrianFeatures(20, "auto", random_state=3).fit(X / scale)
    assert a.lifetime_ == b.lifetime_
    for name, value in _node_arrays(a.forest_).items():
        np.testing.assert_array_equal(value, _node_arrays(b.forest_)[name], err_msg=name)
    # the forest keeps the points as given
    np.testing.assert_array_equal(np.array(a.forest_.X), X)
    X_new = rng.standard_normal((50, 4)) * 7.0
    for lam in (0.5 * a.lifetime_, a.lifetime_):
        np.testing.assert_array_equal(a.transform(X_new, lam).toarray(),
                                      b.transform(X_new / scale, lam).toarray())
    # insertion divides the new points by the same scale
    a.partial_fit(X_new)
    b.partial_fit(X_new / scale)
    for name, value in _node_arrays(a.forest_).items():
        np.testing.assert_array_equal(value, _node_arrays(b.forest_)[name], err_msg=name)
    # and so does extension (memorylessness, each tree's own stream)
    a.extend(2 * a.lifetime_)
    b.extend(2 * b.lifetime_)
    np.testing.assert_array_equal(np.array(a.forest_.threshold), np.array(b.forest_.threshold))


def test_scale_changes_the_forest(rng):
    """The check above is not vacuous: without the scale the trees differ."""
    X, _ = _data(rng)
    a = MondrianFeatures(20, 1.0, random_state=3, feature_scale="std").fit(X)
    b = MondrianFeatures(20, 1.0, random_state=3).fit(X)
    assert a.forest_.n_nodes != b.forest_.n_nodes or not np.array_equal(
        np.array(a.forest_.feature), np.array(b.forest_.feature))


def test_rotated_scaled_coordinates(rng):
    """With rotations, tree m works on ((x - c) / l) Q_m: rotation_[m] is Q_m
    with row b divided by l_b, Q_m orthogonal."""
    X, _ = _data(rng, n=60, d=3)
    mf = MondrianFeatures(5, 1.0, random_state=0, rotation="uniform",
                          feature_scale="std").fit(X)
    scale = mf.feature_scale_
    np.testing.assert_array_equal(scale, np.std(X, axis=0))
    for m in range(5):
        Q = mf.rotation_[m] * scale[:, None]
        np.testing.assert_allclose(Q @ Q.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(Q) == pytest.approx(1.0)
        np.testing.assert_allclose(mf.forest_.transform(X, m), ((X - mf.center_) / scale) @ Q,
                                   rtol=1e-12, atol=1e-12)


def test_rotated_scaled_forest_grows_inserts_and_pickles(rng):
    """A rotated forest with a scale passes the C state check (rotation
    blocks orthogonal once their rows are multiplied back by the scale,
    every point in its leaf's box) after extension, insertion and a pickle
    round trip, and its features equal the unpickled copy's."""
    X, _ = _data(rng, n=120)
    mf = MondrianFeatures(8, 0.5, random_state=2, rotation="uniform",
                          feature_scale="std").fit(X)
    mf.extend(1.0)
    mf.partial_fit(_data(rng, n=30)[0])
    copy = pickle.loads(pickle.dumps(mf))
    X_new = _data(rng, n=20)[0]
    np.testing.assert_array_equal(copy.transform(X_new).toarray(), mf.transform(X_new).toarray())
    np.testing.assert_array_equal(copy.feature_scale_, mf.feature_scale_)
    # a state whose rotations lost the scale is refused
    state = mf.forest_.__getstate__()
    state["rotation"] = state["rotation"] * state["scale"][None, :, None]
    with pytest.raises(ValueError, match="Forest state"):
        Forest(8, 4).__setstate__(state)


def test_scaled_kernel_is_the_ard_laplace_kernel():
    """E[k_M(x, x')] = exp(-λ Σ_b |x_b - x'_b| / l_b) (Prop. 1 on x / l):
    the mean over M = 4000 trees of the indicator "same cell", a Bernoulli
    mean with standard error √(k(1 - k)/M), within 5 of them (conftest)."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 100.0], [0.5, 50.0]])
    scale = np.array([1.0, 100.0])
    lam, M = 1.0, 4000
    mf = MondrianFeatures(M, lam, random_state=1, feature_scale=scale).fit(X)
    Phi = mf.transform(X)
    K = (Phi @ Phi.T).toarray()
    D = np.abs(X[:, None, :] - X[None, :, :]) / scale
    truth = np.exp(-lam * D.sum(axis=2))
    se = np.sqrt(truth * (1 - truth) / M)
    diff = np.abs(K - truth)
    assert np.all(diff <= 5 * se + 1e-12), (K, truth)


def test_forest_state_keeps_and_checks_the_scale(rng):
    X, _ = _data(rng, n=40)
    scale = feature_std(X)
    f = Forest(3, 4).fit(X, 1.0, [np.random.PCG64(i) for i in range(3)], scale=scale)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(np.array(g.scale), scale)
    np.testing.assert_array_equal(np.array(g.threshold), np.array(f.threshold))
    state = f.__getstate__()
    for bad in (-scale, np.where(np.arange(4) == 1, np.nan, scale), np.zeros(4)):
        state["scale"] = bad
        with pytest.raises(ValueError, match="Forest state"):
            Forest(3, 4).__setstate__(state)
    state["scale"] = scale[:3]
    with pytest.raises(ValueError, match="scale must have shape"):
        Forest(3, 4).__setstate__(state)
    # a state without the scale is another forest: its points leave their boxes
    state["scale"] = None
    with pytest.raises(ValueError, match="Forest state"):
        Forest(3, 4).__setstate__(state)


@pytest.mark.parametrize("bad", [np.ones(3), np.array([1.0, -1.0, 1.0, 1.0]),
                                 np.array([1.0, np.inf, 1.0, 1.0])])
def test_forest_fit_refuses_a_bad_scale(rng, bad):
    X, _ = _data(rng, n=20)
    with pytest.raises(ValueError, match="scale"):
        Forest(2, 4).fit(X, 1.0, [np.random.PCG64(i) for i in range(2)], scale=bad)


# ----------------------------------------------------------- the parameter
def test_feature_std(rng):
    X = np.c_[rng.standard_normal(100), np.full(100, 3.0), 1e300 * rng.standard_normal(100)]
    std = feature_std(X)
    assert std[1] == 1.0
    assert std[0] == pytest.approx(np.std(X[:, 0]), rel=1e-14)
    # the squares of the third column overflow; its deviation does not
    assert np.isfinite(std[2]) and std[2] == pytest.approx(1e300 * np.std(X[:, 2] / 1e300))


def test_feature_std_caps_rare_indicators(rng):
    """A column of two values takes at least half their gap: a rare 0/1
    indicator (p = 0.02, deviation 0.14) is scaled by 1/2, as a balanced
    one, instead of being stretched 7-fold; a balanced column keeps its
    deviation (half its gap, to sampling)."""
    X = np.c_[rng.standard_normal(500), (rng.random(500) < 0.02).astype(float),
              np.where(rng.random(500) < 0.5, 3.0, 7.0), np.full(500, -2.0),
              rng.integers(0, 3, 500).astype(float)]
    std = feature_std(X)
    assert 0 < X[:, 1].sum() < 25
    assert std[1] == 0.5 and std[3] == 1.0
    assert std[2] == max(np.std(X[:, 2]), 2.0) and std[2] == pytest.approx(2.0, rel=0.01)
    # three values and more: the standard deviation
    assert std[0] == pytest.approx(np.std(X[:, 0]), rel=1e-14)
    assert std[4] == pytest.approx(np.std(X[:, 4]), rel=1e-14)


def test_feature_std_is_robust_to_a_gross_outlier(rng, monkeypatch):
    """One value of 1e9 among 1500 standard normal ones would make the
    deviation 2.6e7 and shrink the others to nothing: where the deviation
    exceeds HEAVY_TAIL_RATIO times IQR/1.349, that robust estimate is taken
    (here within 10 % of the bulk's σ = 1); a log-normal (σ = 1) feature,
    ratio about 2, keeps its deviation."""
    import mondrian._scale as scale_module
    X = np.c_[rng.standard_normal(1500), np.exp(rng.standard_normal(1500))]
    X[0, 0] = 1e9
    std = feature_std(X)
    q1, q3 = np.percentile(X[:, 0], [25, 75])
    assert std[0] == (q3 - q1) / scale_module.IQR_NORMAL
    assert std[0] == pytest.approx(1.0, rel=0.1)
    assert std[1] == pytest.approx(np.std(X[:, 1]), rel=1e-14)
    # above QUARTILE_ROWS rows the quartiles are those of evenly strided rows
    monkeypatch.setattr(scale_module, "QUARTILE_ROWS", 100)
    q1, q3 = np.percentile(X[::15, 0], [25, 75])
    assert feature_std(X)[0] == (q3 - q1) / scale_module.IQR_NORMAL


def test_feature_std_by_blocks(rng, monkeypatch):
    """Above STD_BLOCK_ROWS rows the deviations are summed block by block:
    numpy's to rounding (two-pass, relative error ~ n·eps at worst), and the
    two-valued test sees every block (a third value in the last one)."""
    import mondrian._scale as scale_module
    X = np.c_[rng.standard_normal((1000, 2)) * [1.0, 1e4], (rng.random(1000) < 0.5) * 3.0,
              np.r_[np.zeros(999), 1.0], np.r_[(rng.random(999) < 0.5) * 1.0, 2.0]]
    whole = feature_std(X)
    monkeypatch.setattr(scale_module, "STD_BLOCK_ROWS", 64)
    blocks = feature_std(X)
    np.testing.assert_allclose(blocks, whole, rtol=1e-13)
    assert blocks[2] >= 1.5 and blocks[3] == 0.5     # half the gaps at least
    assert blocks[4] == pytest.approx(np.std(X[:, 4]), rel=1e-13)


def test_resolve_feature_scale(rng):
    X, _ = _data(rng)
    assert resolve_feature_scale(None, X, True) is None
    assert resolve_feature_scale("auto", X, False) is None
    np.testing.assert_array_equal(resolve_feature_scale("auto", X, True), np.std(X, axis=0))
    np.testing.assert_array_equal(resolve_feature_scale([1, 2, 3, 4], X), [1.0, 2.0, 3.0, 4.0])
    # λ₀ of the scaled points
    a = lifetime_scale(X, np.random.default_rng(0), scale=np.std(X, axis=0))
    b = lifetime_scale(X / np.std(X, axis=0), np.random.default_rng(0))
    assert a == b


@pytest.mark.parametrize("bad, error, match", [
    ("standard", ValueError, "feature_scale must be 'auto', 'std', None"),
    (np.ones(3), ValueError, r"feature_scale must have one value per feature \(4\)"),
    ([1.0, 0.0, 1.0, 1.0], ValueError, "feature_scale must be finite and > 0"),
    ([1.0, np.nan, 1.0, 1.0], ValueError, "feature_scale must be finite and > 0"),
    ({"a": 1}, TypeError, "feature_scale must be"),
    ([1.0, 1.0, 1.0, 1e-320], ValueError, "overflows"),
])
@pytest.mark.parametrize("make", [
    lambda s: MondrianFeatures(5, 1.0, feature_scale=s),
    lambda s: MondrianKernelRidgeCV(feature_scale=s),
    lambda s: MondrianForestRegressor(5, feature_scale=s),
    lambda s: DebiasedMondrianForestRegressor(5, feature_scale=s),
    lambda s: MondrianKernelRidge(5, feature_scale=s),
])
def test_bad_feature_scale(rng, make, bad, error, match):
    X, y = _data(rng, n=40)
    X[0, 3] = 1e300
    est = make(bad)
    with pytest.raises(error, match=match):
        est.fit(X) if isinstance(est, MondrianFeatures) else est.fit(X, y)


def test_auto_scale_follows_the_lifetime(rng):
    """'auto' standardises with an automatic lifetime only: a lifetime given
    is in the units of X (the paper's λ on its raw data)."""
    X, y = _data(rng, n=200)
    std = np.std(X, axis=0)
    model = MondrianKernelRidgeCV(random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.feature_scale_, std)
    np.testing.assert_array_equal(model.features_.feature_scale_, std)
    assert MondrianKernelRidgeCV(max_lifetime=1.0, solver="dual",
                                 random_state=0).fit(X, y).feature_scale_ is None
    assert MondrianForestRegressor(5, lifetime=1.0, random_state=0).fit(X, y).feature_scale_ \
        is None
    forest = MondrianForestRegressor(5, random_state=0, aggregation=True).fit(X, y)
    np.testing.assert_array_equal(forest.feature_scale_, std)
    assert MondrianKernelRidge(5, 1.0).fit(X, y).features_.feature_scale_ is None
    np.testing.assert_array_equal(MondrianKernelRidge(5).fit(X, y).features_.feature_scale_, std)
    assert MondrianFeatures(5).fit(X).feature_scale_ is None


def test_auto_scale_needs_enough_rows(rng):
    """'auto' scales from AUTO_SCALE_MIN_ROWS rows on: a stream's first
    batch of a few points does not set the kernel's axes (it stays on X as
    given); the later batches use what the first fixed."""
    from mondrian._scale import AUTO_SCALE_MIN_ROWS
    X, y = _data(rng, n=200)
    k = AUTO_SCALE_MIN_ROWS
    assert resolve_feature_scale("auto", X[:k - 1], True) is None
    np.testing.assert_array_equal(resolve_feature_scale("auto", X[:k], True),
                                  np.std(X[:k], axis=0))
    # an explicit 'std' takes even two rows (half their gaps, to rounding)
    np.testing.assert_allclose(resolve_feature_scale("std", X[:2], True),
                               np.abs(X[0] - X[1]) / 2, rtol=1e-15)
    stream = MondrianForestRegressor(5, random_state=0, aggregation=True)
    stream.partial_fit(X[:k - 1], y[:k - 1])
    assert stream.feature_scale_ is None
    stream.partial_fit(X[k - 1:], y[k - 1:])
    assert stream.feature_scale_ is None and stream.forest_.scale is None
    batch = MondrianForestRegressor(5, random_state=0, aggregation=True).partial_fit(X[:k], y[:k])
    np.testing.assert_array_equal(batch.feature_scale_, np.std(X[:k], axis=0))


def _unit_change(X):
    """X with its features multiplied by powers of two: exact, and the
    standard deviations scale exactly with them."""
    return X * np.ldexp(1.0, np.array([5, -7, 20, -3]))


@pytest.mark.parametrize("make, classify", [
    (lambda: MondrianKernelRidgeCV(random_state=0), False),
    (lambda: MondrianForestRegressor(20, random_state=0), False),
    (lambda: DebiasedMondrianForestRegressor(20, random_state=0), False),
    (lambda: MondrianKernelRidge(20, random_state=0), False),
    (lambda: MondrianKernelClassifierCV(n_trees=50, random_state=0), True),
    (lambda: MondrianForestClassifier(20, random_state=0), True),
    (lambda: MondrianSGDClassifier(20, random_state=0), True),
])
def test_default_estimators_do_not_depend_on_units(rng, make, classify):
    X, y = _data(rng, n=400)
    if classify:
        y = (y > np.median(y)).astype(int)
    X_test = _data(rng, n=100)[0]
    a = make().fit(X, y)
    b = make().fit(_unit_change(X), y)
    pa = a.predict_proba(X_test) if classify else a.predict(X_test)
    pb = b.predict_proba(_unit_change(X_test)) if classify else b.predict(_unit_change(X_test))
    np.testing.assert_array_equal(pa, pb)
    # and the test can fail: without the scale the units change the fit
    with warnings.catch_warnings():
        # the debiased forest's cells of the raw units hold one point each
        warnings.simplefilter("ignore", UserWarning)
        c = make().set_params(feature_scale=None).fit(_unit_change(X), y)
    pc = c.predict_proba(_unit_change(X_test)) if classify else c.predict(_unit_change(X_test))
    assert not np.array_equal(pa, pc)


@pytest.mark.parametrize("make", [
    lambda **kw: MondrianKernelRidgeCV(random_state=0, **kw),
    lambda **kw: MondrianForestRegressor(20, random_state=0, **kw),
    lambda **kw: DebiasedMondrianForestRegressor(20, random_state=0, **kw),
])
def test_default_is_the_estimator_on_standardised_inputs(rng, make):
    """feature_scale='auto' with an automatic lifetime is the estimator on
    X divided by its standard deviations, bit for bit (the trees' draws, the
    data's scale λ₀ and every prediction)."""
    X, y = _data(rng, n=300)
    X_test = _data(rng, n=60)[0]
    std = np.std(X, axis=0)
    a = make().fit(X, y)
    b = make(feature_scale=None).fit(X / std, y)
    np.testing.assert_array_equal(a.predict(X_test), b.predict(X_test / std))


def test_from_features_takes_the_scale(rng):
    """from_features on scaled trees is the forest estimator with that scale
    (the docstring's identity, random_state equal)."""
    X, y = _data(rng, n=200)
    X_test = _data(rng, n=50)[0]
    features = MondrianFeatures(10, 1.0, random_state=0, feature_scale="std").fit(X)
    shared = MondrianForestRegressor.from_features(features, y, random_state=0)
    np.testing.assert_array_equal(shared.feature_scale_, features.feature_scale_)
    np.testing.assert_array_equal(shared.get_params()["feature_scale"], features.feature_scale_)
    own = MondrianForestRegressor(10, 1.0, random_state=0, feature_scale="std").fit(X, y)
    np.testing.assert_array_equal(shared.predict(X_test), own.predict(X_test))


def test_memory_budget_measures_the_scaled_extent(rng):
    X, _ = _data(rng)
    scale = feature_std(X)
    budget = _MemoryBudget(X, 10, 1, None, scale)
    np.testing.assert_allclose(budget.extent, np.ptp(X / scale, axis=0), rtol=1e-15)
    # raw points of extent 1e9 at a lifetime of the scaled ones: about the
    # 2·Π(1 + λ·extent_b) - 1 nodes a tree has in expectation on the scaled
    # box (Prop. 3; ≈ 1000), not the 2N - 1 = 5999 of the raw extent
    Xb = rng.random((3000, 3)) * 1e9
    mf = MondrianFeatures(4, 2.0, random_state=0, feature_scale="std").fit(Xb)
    expected = 2 * np.prod(1 + 2.0 * np.ptp(Xb / np.std(Xb, axis=0), axis=0)) - 1
    assert mf.forest_.n_nodes < 1.5 * 4 * expected < 4 * 5999
