"""RandomBinningFeatures: sparse, exact bin numbering, unbiased for the Laplace kernel."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import (MondrianFeatures, RandomBinningFeatures, RandomFourierFeatures,
                      RandomMaclaurinFeatures, laplace_kernel)


def per_grid_same_bin(rb, Phi_a, Phi_b):
    """Per-grid indicators [x, y share a bin]: shape (n_a, n_b, P).

    Row entries are sorted by column and grid g owns the column block
    bin_offsets_[g]:bin_offsets_[g+1], so a row's grid-g column (or -1) is
    found by search.
    """
    P = rb.n_grids

    def cols(Phi):
        Phi = sp.csr_array(Phi)
        out = np.full((Phi.shape[0], P), -1)
        for i in range(Phi.shape[0]):
            c = Phi.indices[Phi.indptr[i]:Phi.indptr[i + 1]]
            out[i, np.searchsorted(rb.bin_offsets_, c, side="right") - 1] = c
        return out

    ca, cb = cols(Phi_a), cols(Phi_b)
    return ((ca[:, None, :] == cb[None, :, :]) & (ca[:, None, :] >= 0)).astype(float)


def test_unbiased_train_and_new_points(rng, assert_within_k_se):
    X = rng.random((15, 2))
    # New points inside the training range and outside it.
    Y = np.vstack([rng.random((6, 2)), np.array([[1.2, 0.5], [-0.2, 1.1], [1.05, 1.05]])])
    P = 6000
    rb = RandomBinningFeatures(lifetime=3.0, n_grids=P, random_state=2).fit(X)
    Phi_x, Phi_y = rb.transform(X), rb.transform(Y)
    for A, Phi_a, B, Phi_b in ((X, Phi_x, Y, Phi_y), (X, Phi_x, X, Phi_x)):
        exact = laplace_kernel(A, B, 3.0)
        shared = per_grid_same_bin(rb, Phi_a, Phi_b).mean(axis=-1)
        # Grid indicators are iid Bernoulli(k): the exact s.e. is √(k(1-k)/P).
        # Pairs with k = 1 (a point with itself) or k ≈ 0 have no spread and
        # must agree to rounding, far below one bin's 1/P.
        assert_within_k_se(shared, exact, np.sqrt(exact * (1 - exact) / P), atol=1e-3 / P)


def test_sparse_layout(rng):
    X = rng.random((40, 3))
    rb = RandomBinningFeatures(lifetime=2.0, n_grids=25, random_state=0)
    Phi = rb.fit_transform(X)
    assert isinstance(Phi, sp.csr_array)
    assert Phi.shape == (40, rb.n_bins_)
    assert np.array_equal(np.diff(Phi.indptr), np.full(40, 25))
    np.testing.assert_array_equal(Phi.data, 1 / 5.0)
    assert (Phi != rb.transform(X)).nnz == 0
    # One entry per grid, in the grid's column block.
    grid = np.searchsorted(rb.bin_offsets_, Phi.indices, side="right") - 1
    assert np.array_equal(grid.reshape(40, 25), np.tile(np.arange(25), (40, 1)))
    # Self-kernel is exactly 1 for training points.
    np.testing.assert_allclose((Phi @ Phi.T).diagonal(), 1.0)


def test_bins_match_definition(rng):
    """Two training points share a column iff all bin coordinates ⌊(x - u)/δ⌋ agree (no collisions)."""
    X = rng.random((60, 3))
    rb = RandomBinningFeatures(lifetime=4.0, n_grids=10, random_state=1)
    Phi = rb.fit_transform(X)
    cols = Phi.indices.reshape(60, 10)
    for g in range(10):
        b = np.floor((X - rb.shift_[g]) * (1.0 / rb.pitch_[g])).astype(np.int64)
        same_bin = np.all(b[:, None, :] == b[None, :, :], axis=2)
        same_col = cols[:, None, g] == cols[None, :, g]
        assert np.array_equal(same_bin, same_col)
        assert np.all((rb.shift_[g] >= 0) & (rb.shift_[g] < rb.pitch_[g]))


def test_unseen_bins_get_zero(rng):
    X = rng.random((30, 2))
    rb = RandomBinningFeatures(lifetime=2.0, n_grids=50, random_state=0).fit(X)
    far = rb.transform(np.array([[100.0, -100.0]]))
    assert far.nnz == 0
    assert far.shape == (1, rb.n_bins_)


def test_pitch_distribution(assert_within_k_se):
    """Gamma(2, 1/λ): mean 2/λ, variance σ² = 2/λ² (λ = 4: 0.5 and 0.125).

    n = 20000 draws.  s.e. of the mean σ/√n; of the sample variance
    σ²·√((κ - 1)/n) with kurtosis κ = 3 + 6/2 = 6 for Gamma(2, ·).
    """
    rb = RandomBinningFeatures(lifetime=4.0, n_grids=10000, random_state=0).fit(np.zeros((2, 2)))
    n, var = rb.pitch_.size, 2 / 16
    assert_within_k_se(rb.pitch_.mean(), 0.5, np.sqrt(var / n))
    assert_within_k_se(rb.pitch_.var(), var, var * np.sqrt(5 / n))


def test_error_falls_like_inverse_sqrt(rng, kernel_mse):
    """MSE of k̂ is k(1-k)/P: 16× grids → 1/16 MSE; averaged over seeds and pairs
    the ratio is near 16, [10, 26] leaves room for its spread."""
    X = rng.random((20, 2))
    K = laplace_kernel(X, lifetime=3.0)

    def mse(P):
        return kernel_mse(lambda seed: RandomBinningFeatures(lifetime=3.0, n_grids=P,
                                                             random_state=seed), X, K, range(8))

    assert 10 < mse(50) / mse(800) < 26


def test_determinism_threads_pickle(rng):
    X = rng.random((200, 4))
    a = RandomBinningFeatures(n_grids=40, random_state=3).fit_transform(X)
    b = RandomBinningFeatures(n_grids=40, random_state=3, n_jobs=2).fit_transform(X)
    c = RandomBinningFeatures(n_grids=40, random_state=4).fit_transform(X)
    assert (a != b).nnz == 0
    assert a.shape != c.shape or (a != c).nnz > 0
    rb = RandomBinningFeatures(n_grids=40, random_state=3).fit(X)
    Y = rng.random((20, 4)) * 2
    assert (pickle.loads(pickle.dumps(rb)).transform(Y) != rb.transform(Y)).nnz == 0


def test_auto_lifetime_is_the_data_scale_and_equals_its_value(rng):
    """'auto' (the default) is λ₀ = 1/median ℓ₁ distance between the rows,
    and gives the grids of that value passed as a number (its rows are
    drawn after the grids); with it the bins of c·X are those of X."""
    X = rng.normal(size=(60, 3)) * [1.0, 10.0, 0.1]
    l1 = np.abs(X[:, None] - X[None]).sum(-1)[np.triu_indices(60, 1)]
    auto = RandomBinningFeatures(n_grids=30, random_state=4).fit(X)
    assert auto.lifetime_ == pytest.approx(1.0 / np.median(l1), rel=1e-12)
    given = RandomBinningFeatures(lifetime=auto.lifetime_, n_grids=30, random_state=4).fit(X)
    np.testing.assert_array_equal(auto.pitch_, given.pitch_)
    np.testing.assert_array_equal(auto.shift_, given.shift_)
    Y = rng.normal(size=(20, 3)) * [1.0, 10.0, 0.1]
    for c in (2.0**-20, 2.0**20):   # powers of two: the scaled bins are exact
        scaled = RandomBinningFeatures(n_grids=30, random_state=4).fit(c * X)
        assert (scaled.transform(c * Y) != auto.transform(Y)).nnz == 0


def test_huge_lifetime_raises(rng):
    X = rng.random((5, 2)) * 1e6
    with pytest.raises(ValueError, match="pitch"):
        RandomBinningFeatures(lifetime=1e300, n_grids=3, random_state=0).fit(X)


@pytest.mark.parametrize("params, exc, match", [
    (dict(lifetime=0.0), ValueError, "lifetime"),
    (dict(lifetime=-2.0), ValueError, "lifetime"),
    (dict(lifetime=float("nan")), ValueError, "lifetime"),
    (dict(n_grids=0), ValueError, "n_grids"),
    (dict(n_grids=True), TypeError, "n_grids"),
    (dict(lifetime="median"), ValueError, "lifetime must be 'auto' or"),
])
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        RandomBinningFeatures(**params).fit(np.ones((3, 2)))


def test_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        RandomBinningFeatures().fit(np.array([[0.0, np.nan]]))
    with pytest.raises(TypeError, match="sparse"):
        RandomBinningFeatures().fit(sp.csr_array(np.ones((3, 2))))


@parametrize_with_checks([RandomBinningFeatures(n_grids=10, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("make_map", [
    lambda: RandomBinningFeatures(lifetime=3.0, n_grids=100, random_state=0),
    lambda: MondrianFeatures(n_trees=100, lifetime=3.0, random_state=0),
    lambda: RandomFourierFeatures(lifetime=3.0, n_components=200, random_state=0),
    lambda: RandomMaclaurinFeatures(scale=0.1, n_components=200, h01=True, random_state=0),
], ids=["binning", "mondrian", "fourier", "maclaurin-h01"])
@pytest.mark.parametrize("make_clf", [
    lambda: LinearSVC(C=10.0),
    lambda: LogisticRegression(C=100.0, solver="liblinear"),
    lambda: SGDClassifier(alpha=1e-5, random_state=0),
], ids=["linearsvc", "logistic-liblinear", "sgd"])
def test_classification_pipelines(make_map, make_clf):
    """Every map works in a Pipeline with liblinear's SVM and logistic regression
    and with SGD.  Two moons are not linearly separable (a linear model scores
    about 0.86); a kernel-approximating map lifts every pipeline above 0.9."""
    X, y = make_moons(1000, noise=0.2, random_state=0)
    clf = make_pipeline(MinMaxScaler(), make_map(), make_clf()).fit(X[:700], y[:700])
    assert clf.score(X[700:], y[700:]) > 0.9
