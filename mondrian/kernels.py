"""Exact kernels: the ground truths that random features approximate."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import (check_coefficients, check_int, check_length_scales, check_lifetime,
                          check_positive_float)

__all__ = [
    "laplace_kernel",
    "gaussian_kernel",
    "exponential_kernel",
    "polynomial_kernel",
    "dot_product_kernel",
]


def _pair(X, Y, name_x: str = "X", name_y: str = "Y") -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of dense, finite 2-d float arrays with equal widths."""
    out = []
    for A, name in ((X, name_x), (Y, name_y)):
        if sp.issparse(A):
            raise TypeError(f"{name}: sparse input is not supported; pass a dense array")
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional, got shape {A.shape}")
        if A.shape[0] == 0 or A.shape[1] == 0:
            raise ValueError(f"{name} must be non-empty, got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise ValueError(f"{name} contains NaN or infinity")
        out.append(A)
    if out[0].shape[1] != out[1].shape[1]:
        raise ValueError(f"{name_x} has {out[0].shape[1]} features but {name_y} has {out[1].shape[1]}")
    return out[0], out[1]


def laplace_kernel(X, Y=None, lifetime: float = 1.0) -> np.ndarray:
    """The ℓ₁ Laplace kernel k(x, y) = exp(-λ‖x - y‖₁) (paper Sec. 3).

    The limit of the Mondrian kernel k_M as M → ∞ (Prop. 1).  Equal to
    scikit-learn's ``laplacian_kernel`` with ``gamma = lifetime``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    lifetime : float, default=1.0
        λ ≥ 0, the inverse kernel width.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    lifetime = check_lifetime(lifetime)
    X, Y = _pair(X, X if Y is None else Y)
    out = np.empty((X.shape[0], Y.shape[0]))
    # Rows in blocks so that the (block, n_y, D) difference stays small.
    block = max(1, int(2**22 // max(1, Y.shape[0] * X.shape[1])))
    for s in range(0, X.shape[0], block):
        diff = np.abs(X[s:s + block, None, :] - Y[None, :, :]).sum(axis=2)
        out[s:s + block] = np.exp(-lifetime * diff)
    return out


def gaussian_kernel(X, Y=None, length_scale=1.0) -> np.ndarray:
    """The Gaussian (squared-exponential, ARD) kernel
    k(x, y) = exp(-½ Σ_d (x_d - y_d)² / ℓ_d²).

    Random Fourier features (Rahimi & Recht 2007) approximate it with
    frequencies ω ~ N(0, diag(ℓ)⁻²).  With a scalar ℓ it equals
    scikit-learn's ``rbf_kernel`` with ``gamma = 1 / (2 ℓ²)``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    length_scale : float or array-like of shape (n_features,), default=1.0
        ℓ > 0, one per dimension (automatic relevance determination) or shared.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    X, Y = _pair(X, X if Y is None else Y)
    ls = check_length_scales(length_scale, X.shape[1])
    Xs, Ys = X / ls, Y / ls
    sq = (np.einsum("ij,ij->i", Xs, Xs)[:, None] + np.einsum("ij,ij->i", Ys, Ys)[None, :]
          - 2.0 * (Xs @ Ys.T))
    np.maximum(sq, 0.0, out=sq)
    return np.exp(-0.5 * sq)


def dot_product_kernel(X, Y=None, coefficients=(1.0,)) -> np.ndarray:
    """A dot-product kernel f(⟨x, y⟩) = Σₙ aₙ ⟨x, y⟩ⁿ with a finite Maclaurin series.

    Schoenberg's theorem (Kar & Karnick 2012, slides "structure theorems"):
    f is positive definite on every dimension iff all aₙ ≥ 0.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    coefficients : array-like of shape (K + 1,)
        a₀, …, a_K, finite and ≥ 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    X, Y = _pair(X, X if Y is None else Y)
    a = check_coefficients(coefficients)
    G = X @ Y.T
    out = np.full_like(G, a[-1])
    for coef in a[-2::-1]:      # Horner's rule
        out *= G
        out += coef
    return out


def exponential_kernel(X, Y=None, scale: float = 1.0) -> np.ndarray:
    """The exponential dot-product kernel k(x, y) = exp(⟨x, y⟩ / σ²), σ² = ``scale``.

    Its Maclaurin coefficients are aₙ = 1 / (n! σ²ⁿ) (Kar & Karnick 2012).
    On unit-norm rows it equals e^{1/σ²} · exp(-‖x - y‖² / (2σ²)), a scaled
    Gaussian kernel.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    scale : float, default=1.0
        σ² > 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    scale = check_positive_float(scale, "scale")
    X, Y = _pair(X, X if Y is None else Y)
    return np.exp((X @ Y.T) / scale)


def polynomial_kernel(X, Y=None, degree: int = 2, scale: float = 1.0) -> np.ndarray:
    """The inhomogeneous polynomial kernel k(x, y) = (1 + ⟨x, y⟩ / s)^q.

    Maclaurin coefficients aₙ = C(q, n) / sⁿ for n ≤ q, zero beyond.  Equal
    to scikit-learn's ``polynomial_kernel(degree=q, gamma=1/s, coef0=1)``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    degree : int, default=2
        q ≥ 0.
    scale : float, default=1.0
        s > 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    degree = check_int(degree, "degree", minimum=0)
    scale = check_positive_float(scale, "scale")
    X, Y = _pair(X, X if Y is None else Y)
    return (1.0 + (X @ Y.T) / scale) ** degree
