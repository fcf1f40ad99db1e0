"""The exact Laplace kernel."""
import numpy as np
from sklearn.metrics.pairwise import laplacian_kernel

from mondrian import laplace_kernel


def test_laplace_kernel_matches_definition_and_sklearn():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(7, 4)), rng.normal(size=(5, 4))
    K = laplace_kernel(X, Y, lifetime=0.7)
    direct = np.exp(-0.7 * np.abs(X[:, None, :] - Y[None, :, :]).sum(-1))
    assert np.allclose(K, direct, rtol=1e-14, atol=0)
    assert np.allclose(K, laplacian_kernel(X, Y, gamma=0.7), rtol=1e-14, atol=0)
    assert np.array_equal(laplace_kernel(X), laplace_kernel(X, X))
    assert np.all(laplace_kernel(X, Y, lifetime=0.0) == 1.0)


def test_laplace_kernel_blocks_cover_all_rows():
    # Large inputs are processed in row blocks; the result must not depend on that.
    rng = np.random.default_rng(1)
    X, Y = rng.random((3000, 3)), rng.random((700, 3))
    K = laplace_kernel(X, Y, 2.0)
    rows = [0, 1996, 1997, 2999]
    direct = np.exp(-2.0 * np.abs(X[rows, None, :] - Y[None, :, :]).sum(-1))
    assert np.allclose(K[rows], direct, rtol=1e-14, atol=0)
