"""Exact kernels: the ground truths that random features approximate."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import check_lifetime

__all__ = ["laplace_kernel"]


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
