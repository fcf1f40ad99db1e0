"""RandomFourierFeatures: unbiased for the Laplace and Gaussian kernels (Rahimi & Recht 2007)."""
import pickle

import numpy as np
import pytest
from sklearn.kernel_approximation import RBFSampler
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import RandomFourierFeatures, gaussian_kernel, laplace_kernel


def per_frequency(Z_a, Z_b):
    """Per-frequency kernel values m (cos cos + sin sin): shape (n_a, n_b, m)."""
    m = Z_a.shape[1] // 2
    A = Z_a.reshape(Z_a.shape[0], m, 2)
    B = Z_b.reshape(Z_b.shape[0], m, 2)
    return m * np.einsum("ikc,jkc->ijk", A, B)


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_unbiased_inside_and_outside(rng, kernel, assert_within_k_se, mean_and_se):
    X = rng.random((8, 3))
    Y = np.vstack([rng.random((6, 3)), 3.0 + rng.random((4, 3))])  # inside and outside [0,1]^3
    ls = np.array([0.3, 1.0, 2.0])
    rff = RandomFourierFeatures(kernel=kernel, lifetime=2.0, length_scale=ls,
                                n_components=20000, random_state=1).fit(X)
    exact = laplace_kernel(X, Y, 2.0) if kernel == "laplace" else gaussian_kernel(X, Y, ls)
    # Per-frequency values cos(ωᵀ(x - y)) are iid and bounded by 1: their
    # mean over m = 20000 frequencies is normal to well beyond 5 s.e.
    mean, se = mean_and_se(per_frequency(rff.transform(X), rff.transform(Y)))
    assert_within_k_se(mean, exact, se, atol=1e-12)


def test_layout_and_diagonal(rng):
    X = rng.random((10, 4))
    Z = RandomFourierFeatures(n_components=30, random_state=0).fit_transform(X)
    assert Z.shape == (10, 60)
    # cos² + sin² = 1 per frequency, so k̂(x, x) = 1 exactly.
    np.testing.assert_allclose((Z * Z).sum(axis=1), 1.0, rtol=1e-12)
    rff = RandomFourierFeatures(n_components=30, random_state=0).fit(X)
    np.testing.assert_allclose(Z[:, 0], np.cos(X @ rff.frequencies_[:, 0]) / np.sqrt(30))
    np.testing.assert_allclose(Z[:, 1], np.sin(X @ rff.frequencies_[:, 0]) / np.sqrt(30))


def test_error_falls_like_inverse_sqrt(rng, kernel_mse):
    """Mean squared error of k̂ is Var/m: 16 times the components, 1/16 the MSE.

    Averaged over 8 seeds and 190 pairs the MSE ratio concentrates near 16;
    [10, 26] allows for its sampling spread (chi-square-like, few % rel. s.d.).
    """
    X = rng.random((20, 2))
    K = laplace_kernel(X, lifetime=3.0)

    def mse(m):
        return kernel_mse(lambda seed: RandomFourierFeatures(lifetime=3.0, n_components=m,
                                                             random_state=seed), X, K, range(8))

    assert 10 < mse(50) / mse(800) < 26


def test_frequencies_are_cauchy_and_gaussian(assert_within_k_se):
    """Quartiles of Cauchy(0, λ) are ±λ; a Gaussian frequency has s.d. 1/ℓ.

    n = 200000 Cauchy draws: a sample quantile's s.e. is √(p(1-p)/n) / f(q)
    with density f(±λ) = 1/(2πλ).  n = 100000 Gaussian draws per dimension:
    the sample s.d.'s s.e. is σ/√(2n).
    """
    X = np.zeros((1, 2))
    lam = 4.0
    W = RandomFourierFeatures(lifetime=lam, n_components=100000, random_state=3).fit(X).frequencies_
    q = np.quantile(W.ravel(), [0.25, 0.75])
    assert_within_k_se(q, [-lam, lam], np.sqrt(0.25 * 0.75 / W.size) * 2 * np.pi * lam)
    W = RandomFourierFeatures(kernel="gaussian", length_scale=[0.5, 2.0], n_components=100000,
                              random_state=3).fit(X).frequencies_
    sd = np.array([2.0, 0.5])
    assert_within_k_se(W.std(axis=1), sd, sd / np.sqrt(2 * W.shape[1]))


def test_matches_rbfsampler_kernel(rng):
    """Same kernel as scikit-learn's RBFSampler (gamma = 1/(2ℓ²)), different convention.

    Both estimate exp(-γ‖x - y‖²): with 20000 frequencies each estimate is
    within ~0.01 (s.d. ≤ 1/√20000 ≈ 0.007 per pair for cos pairs, ≤ 0.01 for
    RBFSampler's random phases); 0.05 is over 5 s.d.
    """
    X = rng.random((10, 3))
    exact = gaussian_kernel(X, length_scale=0.7)
    Z = RandomFourierFeatures(kernel="gaussian", length_scale=0.7, n_components=20000,
                              random_state=0).fit_transform(X)
    S = RBFSampler(gamma=1 / (2 * 0.7**2), n_components=20000, random_state=0).fit_transform(X)
    assert Z.shape[1] == 2 * S.shape[1]
    assert np.abs(Z @ Z.T - exact).max() < 0.05
    assert np.abs(S @ S.T - exact).max() < 0.05


def test_determinism_and_pickle(rng):
    X = rng.random((15, 3))
    a = RandomFourierFeatures(n_components=20, random_state=7).fit_transform(X)
    b = RandomFourierFeatures(n_components=20, random_state=7).fit_transform(X)
    c = RandomFourierFeatures(n_components=20, random_state=8).fit_transform(X)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    rff = RandomFourierFeatures(n_components=20, random_state=7).fit(X)
    assert np.array_equal(pickle.loads(pickle.dumps(rff)).transform(X), a)


def test_auto_width_is_the_data_scale_and_equals_its_value(rng):
    """'auto' (the default) is λ₀ = 1/median ℓ₁ distance (Laplace) or the
    median ℓ₂ distance (Gaussian), and gives the frequencies of that value
    passed as a number (the width's rows are drawn after the frequencies)."""
    X = rng.normal(size=(60, 4)) * [1.0, 10.0, 0.1, 3.0]
    l1 = np.abs(X[:, None] - X[None]).sum(-1)[np.triu_indices(60, 1)]
    l2 = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(60, 1)]
    lap = RandomFourierFeatures(n_components=40, random_state=5).fit(X)
    assert lap.lifetime_ == pytest.approx(1.0 / np.median(l1), rel=1e-12)
    given = RandomFourierFeatures(lifetime=lap.lifetime_, n_components=40, random_state=5)
    np.testing.assert_array_equal(lap.frequencies_, given.fit(X).frequencies_)
    gau = RandomFourierFeatures(kernel="gaussian", n_components=40, random_state=5).fit(X)
    np.testing.assert_allclose(gau.length_scale_, np.median(l2), rtol=1e-12)
    given = RandomFourierFeatures(kernel="gaussian", length_scale=gau.length_scale_[0],
                                  n_components=40, random_state=5)
    np.testing.assert_array_equal(gau.frequencies_, given.fit(X).frequencies_)
    # A refit with the other kernel keeps only its own width.
    assert not hasattr(lap.set_params(kernel="gaussian").fit(X), "lifetime_")
    assert hasattr(lap, "length_scale_")


@pytest.mark.parametrize("kernel", ["laplace", "gaussian"])
def test_auto_width_follows_the_units_of_X(rng, kernel):
    """The kernel depends on X only through X/width, so with 'auto' the
    features of c·X fitted on c·X are those of X fitted on X (frequencies
    scaled by 1/c: the projections agree to rounding)."""
    X, Y = rng.normal(size=(50, 3)), rng.normal(size=(7, 3))
    base = RandomFourierFeatures(kernel, n_components=30, random_state=2).fit(X).transform(Y)
    for c in (1e-6, 1e6):
        scaled = RandomFourierFeatures(kernel, n_components=30, random_state=2).fit(c * X)
        np.testing.assert_allclose(scaled.transform(c * Y), base, atol=1e-12)


@pytest.mark.parametrize("params, exc, match", [
    (dict(lifetime=0.0), ValueError, "lifetime"),
    (dict(lifetime=-1.0), ValueError, "lifetime"),
    (dict(kernel="gaussian", length_scale=0.0), ValueError, "length_scale"),
    (dict(kernel="gaussian", length_scale=[1.0, -1.0, 1.0]), ValueError, "length_scale"),
    (dict(kernel="gaussian", length_scale=[1.0, 1.0]), ValueError, "length_scale"),
    (dict(n_components=0), ValueError, "n_components"),
    (dict(n_components=2.5), TypeError, "n_components"),
    (dict(kernel="cosine"), ValueError, "kernel"),
    (dict(lifetime="median"), ValueError, "lifetime must be 'auto' or"),
    (dict(kernel="gaussian", length_scale="median"), ValueError, "length_scale must be 'auto' or"),
])
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        RandomFourierFeatures(**params).fit(np.ones((3, 3)))


def test_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        RandomFourierFeatures().fit(np.array([[0.0, np.nan]]))
    rff = RandomFourierFeatures(random_state=0).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="features"):
        rff.transform(np.ones((3, 5)))


@parametrize_with_checks([
    RandomFourierFeatures(n_components=10, random_state=0),
    RandomFourierFeatures(kernel="gaussian", n_components=10, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_cos_sin_kernel_accuracy():
    """The C cos/sin pairs match libm to a few ulp, also at quadrant boundaries
    and beyond the fast reduction range (libm fallback) and for huge arguments."""
    from mondrian._ext._fourier import cos_sin_pairs

    t = np.concatenate([np.linspace(-2e5, 2e5, 400001),
                        np.arange(-8, 9) * np.pi / 4, [0.0, -0.0, 1e6, -3e7, 1e300, -1e300]])
    out = cos_sin_pairs(t[None, :], 2.0)
    np.testing.assert_allclose(out[0, 0::2], 2.0 * np.cos(t), rtol=0, atol=2e-15)
    np.testing.assert_allclose(out[0, 1::2], 2.0 * np.sin(t), rtol=0, atol=2e-15)
    assert cos_sin_pairs(np.empty((3, 0)), 1.0).shape == (3, 0)
    # Threads split the work element by element: bit for bit the same, and
    # the same accuracy, including the NaN/inf/huge arguments of the libm
    # fallback spread over several chunks.
    T = np.tile(t, 3).reshape(3, -1)
    T[1, ::1000] = np.nan
    T[2, ::777] = np.inf
    one, two = cos_sin_pairs(T, 0.5, 1), cos_sin_pairs(T, 0.5, 2)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one[0], 0.25 * out[0])
    assert np.all(np.isnan(two[1, 0:2000:2000]))
    with pytest.raises(ValueError, match="n_threads"):
        cos_sin_pairs(T, 1.0, 0)


def test_features_from_inputs_match_angles_then_pairs():
    """fourier_features (angles formed in C a tile of rows at a time, Φᵀy
    fused) equals cos_sin_pairs of the BLAS angles XΩ up to the rounding of
    the angles, whatever the thread count; the pairing kernel of the SSGP
    gradient equals its numpy expression."""
    from mondrian._ext._fourier import cos_sin_pairs, fourier_features, ssgp_pairing

    rng = np.random.default_rng(0)
    for n, D, p in ((1, 1, 1), (7, 3, 5), (203, 8, 37)):        # tiles of 8 rows, partial ones
        X = rng.uniform(-3, 3, (n, D))
        omega = rng.standard_normal((D, p))
        y = rng.standard_normal(n)
        T = X @ omega
        ref = cos_sin_pairs(T, 1.5)
        out = fourier_features(X, omega, np.empty((n, 2 * p)), 1.5)
        # |Δt| <= D·max|x ω|·2⁻⁵² ≈ 1e-14 here; cos, sin are 1-Lipschitz
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-13)
        exact_t = np.einsum("id,dj->ij", X, omega)    # any order: the same to 1e-14
        np.testing.assert_allclose(out[:, 0::2], 1.5 * np.cos(exact_t), rtol=0, atol=1e-13)
        b = np.full(2 * p, 0.25)                      # accumulates onto what is there
        with_b = fourier_features(X, omega, np.empty((n, 2 * p)), 1.5, y, b)
        np.testing.assert_array_equal(with_b, out)
        np.testing.assert_allclose(b, 0.25 + out.T @ y, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(fourier_features(X, omega, np.empty((n, 2 * p)), 1.5,
                                                       n_threads=2), out)
        E = rng.standard_normal((n, 2 * p))
        alpha = rng.standard_normal(2 * p)
        H = ssgp_pairing(E, out, np.empty((n, p)), y, alpha)
        Ep = E - np.outer(y, alpha)
        np.testing.assert_allclose(H, Ep[:, 1::2] * out[:, 0::2] - Ep[:, 0::2] * out[:, 1::2],
                                   rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(ssgp_pairing(E, out, np.empty((n, p))),
                                      E[:, 1::2] * out[:, 0::2] - E[:, 0::2] * out[:, 1::2])
    X = rng.standard_normal((4, 2))
    with pytest.raises(ValueError, match="omega"):
        fourier_features(X, np.ones((3, 2)), np.empty((4, 4)))
    with pytest.raises(ValueError, match="out"):
        fourier_features(X, np.ones((2, 2)), np.empty((4, 3)))
    with pytest.raises(ValueError, match="together"):
        fourier_features(X, np.ones((2, 2)), np.empty((4, 4)), 1.0, np.ones(4))
    with pytest.raises(ValueError, match="E and phi"):
        ssgp_pairing(np.ones((4, 4)), np.ones((4, 4)), np.empty((4, 3)))
    assert fourier_features(np.empty((0, 2)), np.ones((2, 3)), np.empty((0, 6))).shape == (0, 6)
