"""RandomMaclaurinFeatures: Kar & Karnick (2012) random features for dot-product kernels."""
import math
import pickle

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import (RandomMaclaurinFeatures, dot_product_kernel, exponential_kernel,
                      polynomial_kernel)
from mondrian.features.maclaurin import maclaurin_coefficients


def unit_rows(rng, n, d, radius=1.0):
    X = rng.normal(size=(n, d))
    return radius * X / np.linalg.norm(X, axis=1, keepdims=True)


CASES = [
    (dict(kernel="exponential", scale=2.0), lambda X, Y: exponential_kernel(X, Y, 2.0)),
    (dict(kernel="polynomial", degree=3, scale=1.5), lambda X, Y: polynomial_kernel(X, Y, 3, 1.5)),
    (dict(kernel="custom", coefficients=[0.5, 0.0, 1.0, 0.25]),
     lambda X, Y: dot_product_kernel(X, Y, [0.5, 0.0, 1.0, 0.25])),
]


@pytest.mark.parametrize("params, exact", CASES)
@pytest.mark.parametrize("h01", [False, True])
def test_unbiased(rng, params, exact, h01, assert_within_k_se, mean_and_se):
    X = unit_rows(rng, 6, 3)
    Y = np.vstack([unit_rows(rng, 4, 3), unit_rows(rng, 2, 3, radius=1.3)])
    m = 40000
    rm = RandomMaclaurinFeatures(n_components=m, h01=h01, random_state=5, **params).fit(X)
    Zx, Zy = rm.transform(X), rm.transform(Y)
    if h01:
        D = X.shape[1]
        exact_low = Zx[:, :1 + D] @ Zy[:, :1 + D].T
        a = rm.coefficients_
        np.testing.assert_allclose(exact_low, a[0] + a[1] * (X @ Y.T), rtol=1e-12, atol=1e-15)
        Zx, Zy, target = Zx[:, 1 + D:], Zy[:, 1 + D:], exact(X, Y) - exact_low
    else:
        target = exact(X, Y)
    # The per-feature values are iid with finite variance (unit-norm inputs,
    # geometric degrees); their mean over m = 40000 is close to normal.
    mean, se = mean_and_se(m * Zx[:, None, :] * Zy[None, :, :])
    assert_within_k_se(mean, target, se, atol=1e-12)


def test_coefficients():
    a = maclaurin_coefficients("exponential", 6, scale=2.0)
    np.testing.assert_allclose(a, [1 / (math.factorial(n) * 2.0**n) for n in range(6)], rtol=1e-13)
    a = maclaurin_coefficients("polynomial", 6, degree=3, scale=2.0)
    np.testing.assert_allclose(a, [1, 3 / 2, 3 / 4, 1 / 8, 0, 0])
    a = maclaurin_coefficients("custom", 3, coefficients=[1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(a, [1.0, 2.0, 3.0])
    # The series reproduces the closed forms.
    t = 0.7
    assert abs(np.polyval(maclaurin_coefficients("exponential", 30, scale=2.0)[::-1], t)
               - math.exp(t / 2.0)) < 1e-14
    assert abs(np.polyval(maclaurin_coefficients("polynomial", 5, degree=3, scale=2.0)[::-1], t)
               - (1 + t / 2.0) ** 3) < 1e-14


@pytest.mark.parametrize("h01, low", [(False, 0), (True, 2)])
def test_degree_distribution(h01, low, assert_within_k_se):
    """P(N = n) = 1/2^{n+1} for p = 2 (shifted to start at 2 with H0/1).

    n = 200000 draws: each degree's frequency has the binomial s.e.
    √(q(1-q)/n); degrees below the lowest have q = 0 and must never occur.
    """
    rm = RandomMaclaurinFeatures(n_components=200000, h01=h01, random_state=0)
    rm.fit(np.zeros((1, 2)))
    assert rm.degrees_.min() == low
    q = rm.degree_probabilities(low + 6)
    np.testing.assert_allclose(q[low:], [0.5 ** (k + 1) for k in range(7)])
    assert np.all(q[:low] == 0)
    freq = np.bincount(rm.degrees_, minlength=low + 7)[:low + 7] / 200000
    assert_within_k_se(freq, q, np.sqrt(q * (1 - q) / 200000))
    # p = 3: P(N = n) = (2/3) 3^{-n}, normalised.
    q3 = RandomMaclaurinFeatures(p=3.0).degree_probabilities(200)
    assert abs(q3.sum() - 1) < 1e-12 and abs(q3[0] - 2 / 3) < 1e-15


def test_weights_and_projections(rng):
    rm = RandomMaclaurinFeatures(kernel="polynomial", degree=2, n_components=50,
                                 random_state=1).fit(np.zeros((1, 4)))
    assert set(np.unique(rm.projections_)) <= {-1.0, 1.0}
    assert rm.projections_.shape == (rm.degrees_.sum(), 4)
    a = rm.coefficients_
    q = 0.5 ** (rm.degrees_ + 1.0)
    np.testing.assert_allclose(rm.weights_, np.sqrt(a[rm.degrees_] / q / 50))
    # Degrees above the polynomial's are zero features.
    X = rng.normal(size=(3, 4))
    Z = rm.transform(X)
    assert np.all(Z[:, rm.degrees_ > 2] == 0)
    # A feature is its weight times the product of its projections.
    i = int(np.argmax(rm.degrees_ == 2))
    P = rm.projections_[rm.proj_offsets_[i]:rm.proj_offsets_[i + 1]]
    np.testing.assert_allclose(Z[:, i], rm.weights_[i] * (X @ P[0]) * (X @ P[1]))


def test_h01_layout(rng):
    X = rng.normal(size=(5, 3))
    rm = RandomMaclaurinFeatures(kernel="exponential", scale=2.0, n_components=7, h01=True,
                                 random_state=0)
    Z = rm.fit_transform(X)
    assert Z.shape == (5, 1 + 3 + 7)
    np.testing.assert_allclose(Z[:, 0], 1.0)
    np.testing.assert_allclose(Z[:, 1:4], X * np.sqrt(0.5))


def test_error_falls_like_inverse_sqrt(rng, kernel_mse):
    """MSE ∝ 1/m for iid features: 16× → about 1/16 (over 10 seeds, 45 pairs; [8, 32]
    allows for the heavier-tailed spread of products of projections)."""
    X = unit_rows(rng, 10, 3)
    K = exponential_kernel(X)

    def mse(m):
        return kernel_mse(lambda seed: RandomMaclaurinFeatures(n_components=m, random_state=seed),
                          X, K, range(10))

    assert 8 < mse(100) / mse(1600) < 32


def test_determinism_and_pickle(rng):
    X = rng.normal(size=(8, 3))
    a = RandomMaclaurinFeatures(n_components=30, random_state=3).fit_transform(X)
    b = RandomMaclaurinFeatures(n_components=30, random_state=3).fit_transform(X)
    c = RandomMaclaurinFeatures(n_components=30, random_state=4).fit_transform(X)
    assert np.array_equal(a, b) and not np.allclose(a, c)
    rm = RandomMaclaurinFeatures(n_components=30, random_state=3).fit(X)
    assert np.array_equal(pickle.loads(pickle.dumps(rm)).transform(X), a)


@pytest.mark.parametrize("params, exc, match", [
    (dict(kernel="polynomial", degree=-1), ValueError, "degree"),
    (dict(kernel="polynomial"), ValueError, "degree"),
    (dict(kernel="exponential", degree=2), ValueError, "degree"),
    (dict(scale=0.0), ValueError, "scale"),
    (dict(n_components=0), ValueError, "n_components"),
    (dict(p=1.0), ValueError, "p must"),
    (dict(h01="yes"), TypeError, "h01"),
    (dict(kernel="custom"), ValueError, "coefficients"),
    (dict(kernel="custom", coefficients=[1.0, -1.0]), ValueError, "coefficients"),
    (dict(coefficients=[1.0]), ValueError, "coefficients"),
    (dict(kernel="rbf"), ValueError, "kernel"),
])
def test_bad_parameters(params, exc, match):
    with pytest.raises(exc, match=match):
        RandomMaclaurinFeatures(**params).fit(np.ones((3, 2)))


def test_nan_input():
    with pytest.raises(ValueError, match="NaN"):
        RandomMaclaurinFeatures().fit(np.array([[0.0, np.nan]]))


@parametrize_with_checks([
    RandomMaclaurinFeatures(n_components=10, random_state=0),
    RandomMaclaurinFeatures(kernel="polynomial", degree=2, n_components=10, h01=True,
                            random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)
