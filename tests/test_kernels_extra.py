"""Exact kernels: Gaussian (ARD), exponential dot-product, polynomial, general dot-product."""
import math

import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import polynomial_kernel as sk_poly
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from mondrian import dot_product_kernel, exponential_kernel, gaussian_kernel, polynomial_kernel


def test_gaussian_matches_sklearn_and_definition(rng):
    X, Y = rng.random((7, 3)), rng.random((5, 3))
    np.testing.assert_allclose(gaussian_kernel(X, Y, 0.8), rbf_kernel(X, Y, gamma=1 / (2 * 0.64)),
                               rtol=1e-12)
    ls = np.array([0.5, 1.0, 3.0])
    direct = np.exp(-0.5 * (((X[:, None, :] - Y[None, :, :]) / ls) ** 2).sum(axis=2))
    np.testing.assert_allclose(gaussian_kernel(X, Y, ls), direct, rtol=1e-12)
    np.testing.assert_allclose(np.diag(gaussian_kernel(X, length_scale=ls)), 1.0)


def test_exponential_and_polynomial(rng):
    X, Y = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(exponential_kernel(X, Y, 2.0), np.exp(X @ Y.T / 2.0), rtol=1e-13)
    np.testing.assert_allclose(polynomial_kernel(X, Y, 3, 2.0),
                               sk_poly(X, Y, degree=3, gamma=0.5, coef0=1.0), rtol=1e-12)
    assert np.all(polynomial_kernel(X, Y, 0, 2.0) == 1.0)


def test_dot_product_series(rng):
    X = rng.normal(size=(5, 3)) / 2
    a = [1 / math.factorial(n) for n in range(25)]
    np.testing.assert_allclose(dot_product_kernel(X, coefficients=a), exponential_kernel(X),
                               rtol=1e-12)
    np.testing.assert_allclose(dot_product_kernel(X, coefficients=[1, 2, 1]),
                               polynomial_kernel(X, degree=2), rtol=1e-12)


def test_exponential_is_scaled_gaussian_on_the_sphere(rng):
    """On unit-norm rows exp(⟨x,y⟩/σ²) = e^{1/σ²} exp(-‖x-y‖²/(2σ²))."""
    X = rng.normal(size=(6, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(exponential_kernel(X, scale=0.5),
                               np.exp(2.0) * gaussian_kernel(X, length_scale=np.sqrt(0.5)),
                               rtol=1e-12)


def test_usable_in_sklearn(rng):
    """SVC and Nystroem accept the kernels as callables (exact baselines)."""
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    svc = SVC(kernel=lambda A, B: polynomial_kernel(A, B, degree=2), C=1e3).fit(X, y)
    assert svc.score(X, y) == 1.0   # x0·x1 is a degree-2 feature: separable, hard margin
    ny = Nystroem(kernel=lambda a, b: float(exponential_kernel(a[None], b[None], 4.0)[0, 0]),
                  n_components=40, random_state=0).fit(X)
    Z = ny.transform(X)
    np.testing.assert_allclose(Z @ Z.T, exponential_kernel(X, scale=4.0), atol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda X: gaussian_kernel(X, length_scale=0.0), "length_scale"),
    (lambda X: gaussian_kernel(X, length_scale=[1.0, 1.0]), "length_scale"),
    (lambda X: gaussian_kernel(X, length_scale=[1.0, np.nan, 1.0]), "length_scale"),
    (lambda X: exponential_kernel(X, scale=-1.0), "scale"),
    (lambda X: polynomial_kernel(X, degree=-1), "degree"),
    (lambda X: polynomial_kernel(X, scale=0.0), "scale"),
    (lambda X: dot_product_kernel(X, coefficients=[]), "coefficients"),
    (lambda X: dot_product_kernel(X, coefficients=[1.0, -0.5]), "coefficients"),
    (lambda X: dot_product_kernel(X, coefficients=[0.0, 0.0]), "coefficients"),
    (lambda X: gaussian_kernel(np.array([[np.nan, 0.0, 1.0]])), "NaN"),
    (lambda X: exponential_kernel(X, X[:, :2]), "features"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.ones((3, 3)))


def test_polynomial_degree_type():
    with pytest.raises(TypeError, match="degree"):
        polynomial_kernel(np.ones((2, 2)), degree=2.5)
