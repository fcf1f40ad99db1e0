"""Ridge regression on Mondrian features (Balog et al. 2016, Sec. 4.2.1).

The MAP weights of primal ridge regression are ŵ = A⁻¹Φᵀy with
A = ΦᵀΦ + αI (the paper's δ² is ``alpha``).  :func:`ridge_solve` computes
them exactly by a Cholesky factorisation of the smaller of the primal
(C × C) and dual (N × N) systems, or iteratively by preconditioned conjugate
gradients on the sparse primal system.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import check_array_input, check_int, check_positive_float
from .features.mondrian import MondrianFeatures

__all__ = ["MondrianKernelRidge", "ridge_solve", "RidgeSolution"]

#: Largest min(C, N) for which ``solver='auto'`` picks the dense Cholesky
#: solve: an (n x n) float64 matrix of 3000² entries takes 72 MB and factorises
#: in well under a second; above it, CG on the sparse system is cheaper.
AUTO_CHOLESKY_MAX = 3000

#: :class:`MondrianKernelRidge` builds ΦᵀΦ in C from the trees (much faster
#: than the sparse product), so with ``solver='auto'`` it factorises the
#: primal system up to this many columns (a 6000² matrix takes 288 MB; on the
#: CPU data, 5056 columns: 1.4 s against 2.9 s for CG at tol 1e-8).
AUTO_GRAM_CHOLESKY_MAX = 6000

_SOLVERS = ("auto", "cholesky", "cg")


class RidgeSolution:
    """Weights of a ridge solve with how they were obtained.

    Attributes
    ----------
    coef : ndarray of shape (n_columns,) or (n_columns, n_targets)
    solver : {'cholesky-primal', 'cholesky-dual', 'cg'}
    n_iter : int
        CG iterations (the largest over targets); 0 for Cholesky.
    """

    __slots__ = ("coef", "solver", "n_iter")

    def __init__(self, coef: np.ndarray, solver: str, n_iter: int):
        self.coef = coef
        self.solver = solver
        self.n_iter = n_iter


def ridge_solve(Phi, y, alpha: float, *, solver: str = "auto", tol: float = 1e-10,
                max_iter: int | None = None, x0: np.ndarray | None = None,
                gram: np.ndarray | None = None) -> RidgeSolution:
    """Minimise ‖y - Φw‖² + α‖w‖² for sparse or dense Φ.

    Parameters
    ----------
    Phi : sparse matrix or ndarray of shape (N, C)
    y : ndarray of shape (N,) or (N, K)
    alpha : float
        Regularisation α > 0 (the paper's δ²).
    solver : {'auto', 'cholesky', 'cg'}, default='auto'
        'cholesky': exact solve of the primal system (ΦᵀΦ + αI)w = Φᵀy when
        C ≤ N, else of the dual (ΦΦᵀ + αI)β = y with w = Φᵀβ; memory
        O(min(C, N)²).  'cg': conjugate gradients on the primal system with
        the Jacobi preconditioner diag(ΦᵀΦ) + α, stopped when the residual
        satisfies ‖Φᵀy - (ΦᵀΦ + αI)w‖ ≤ tol·‖Φᵀy‖; memory O(nnz(Φ)).
        'auto': 'cholesky' when min(C, N) ≤ ``AUTO_CHOLESKY_MAX``, else 'cg'.
    tol : float, default=1e-10
        Relative residual tolerance of 'cg'.
    max_iter : int, optional
        Iteration cap of 'cg' (default 10·C); reaching it raises
        ``RuntimeError`` rather than returning unconverged weights.
    x0 : ndarray, optional
        Initial weights for 'cg' (a warm start).
    gram : ndarray of shape (C, C), optional
        ΦᵀΦ if already known (e.g. :meth:`MondrianFeatures.gram`), used by the
        primal Cholesky solve instead of forming it; it is overwritten.

    Returns
    -------
    RidgeSolution
    """
    alpha = check_positive_float(alpha, "alpha")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    y = np.asarray(y, dtype=np.float64)
    n, c = Phi.shape
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} rows but Phi has {n}")
    if solver == "auto":
        solver = "cholesky" if min(n, c) <= AUTO_CHOLESKY_MAX else "cg"
    if solver == "cholesky":
        if c <= n:
            if gram is not None:
                if gram.shape != (c, c):
                    raise ValueError(f"gram must have shape ({c}, {c}), got {gram.shape}")
                A = gram
            else:
                A = Phi.T @ Phi
                A = A.toarray() if sp.issparse(A) else np.array(A)
            A[np.diag_indices_from(A)] += alpha
            coef = la.cho_solve(la.cho_factor(A, lower=True, overwrite_a=True,
                                              check_finite=False),
                                Phi.T @ y, check_finite=False)
            return RidgeSolution(coef, "cholesky-primal", 0)
        K = Phi @ Phi.T
        K = K.toarray() if sp.issparse(K) else np.array(K)
        K[np.diag_indices_from(K)] += alpha
        beta = la.cho_solve(la.cho_factor(K, lower=True, overwrite_a=True, check_finite=False),
                            y, check_finite=False)
        return RidgeSolution(np.asarray(Phi.T @ beta), "cholesky-dual", 0)
    tol = check_positive_float(tol, "tol")
    max_iter = 10 * c if max_iter is None else check_int(max_iter, "max_iter")
    # Φᵀ as a transposed view (no copy), and diag(ΦᵀΦ) from the stored entries:
    # the solver needs O(nnz(Φ)) memory beyond Φ only for a few vectors.
    Phi_t = Phi.T
    op = spla.LinearOperator((c, c), matvec=lambda w: Phi_t @ (Phi @ w) + alpha * w,
                             dtype=np.float64)
    if sp.issparse(Phi):
        csr = Phi if Phi.format == "csr" else sp.csr_array(Phi)
        diag = np.bincount(csr.indices, weights=csr.data * csr.data, minlength=c)
    else:
        diag = np.einsum("ij,ij->j", Phi, Phi)
    inv_diag = 1.0 / (diag + alpha)
    precond = spla.LinearOperator((c, c), matvec=lambda r: inv_diag * r, dtype=np.float64)
    rhs = np.asarray(Phi_t @ y)
    cols = rhs[:, None] if rhs.ndim == 1 else rhs
    out = np.empty_like(cols)
    iterations = []  # per target column

    def _count(_):
        iterations[-1] += 1

    for k in range(cols.shape[1]):
        iterations.append(0)
        start = None if x0 is None else (x0 if x0.ndim == 1 else x0[:, k])
        out[:, k], info = spla.cg(op, cols[:, k], x0=start, rtol=tol, atol=0.0,
                                  maxiter=max_iter, M=precond, callback=_count)
        if info != 0:
            raise RuntimeError(f"conjugate gradients did not reach tol={tol} in "
                               f"{max_iter} iterations; raise max_iter or use solver='cholesky'")
    return RidgeSolution(out[:, 0] if rhs.ndim == 1 else out, "cg", max(iterations))


class MondrianKernelRidge(RegressorMixin, BaseEstimator):
    """Ridge regression with the Mondrian kernel (paper Sec. 4.2.1).

    Fits :class:`~mondrian.MondrianFeatures` on X and solves ridge
    regression on the sparse features, with the target centred by its
    training mean: ŵ = (ΦᵀΦ + αI)⁻¹Φᵀ(y - ȳ).  As ``n_trees`` → ∞ this
    tends to kernel ridge regression with the Laplace kernel
    exp(-λ‖x - x'‖₁) (Prop. 1), at O(N·M) cost per pass over the data.

    Parameters
    ----------
    n_trees : int, default=100
        Number M of Mondrian trees.
    lifetime : float, default=1.0
        Kernel lifetime λ (inverse width).
    alpha : float, default=1.0
        Ridge regularisation α > 0; the paper's δ² (noise variance with unit
        prior weight variance).
    solver : {'auto', 'cholesky', 'cg'}, default='auto'
        See :func:`ridge_solve`: exact Cholesky (primal or dual, whichever is
        smaller) or Jacobi-preconditioned conjugate gradients to ``tol``.
        'auto' factorises the primal system, with ΦᵀΦ built in C
        (:meth:`MondrianFeatures.gram`), while the number of columns C is at
        most min(N, 6000), and otherwise follows :func:`ridge_solve`.
    tol : float, default=1e-8
        Relative residual tolerance of the 'cg' solver.  On the CPU data
        (M = 350, λ = 1e-6, α = 0.1) 1e-8 gives weights within 3e-6
        relative of the exact solution (550 iterations), 1e-10 within 3e-8.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
    n_jobs : int or None, default=None
        Threads for the trees and features (None or -1: all cores; capped at the
        cores available).
    rotation : {None, 'uniform'}, default=None
        'uniform': every tree cuts in its own Haar-random rotation of the
        inputs (the uniformly rotated Mondrian kernel, whose limit is
        :func:`~mondrian.kernels.rotated_laplace_kernel`); see
        :class:`MondrianFeatures`.

    Attributes
    ----------
    features_ : MondrianFeatures
        The fitted feature map.
    coef_ : ndarray of shape (n_columns,) or (n_columns, n_targets)
    intercept_ : float or ndarray of shape (n_targets,)
        The training-target mean.
    solver_ : str
        The solver used ('cholesky-primal', 'cholesky-dual' or 'cg').
    n_iter_ : int
        CG iterations (0 for Cholesky).
    n_features_in_ : int
    """

    def __init__(self, n_trees: int = 100, lifetime: float = 1.0, alpha: float = 1.0, *,
                 solver: str = "auto", tol: float = 1e-8, random_state=None,
                 n_jobs: int | None = None, rotation: str | None = None):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.alpha = alpha
        self.solver = solver
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.rotation = rotation

    def fit(self, X, y) -> "MondrianKernelRidge":
        """Grow the trees on X and solve for the weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        alpha = check_positive_float(self.alpha, "alpha")
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}")
        check_positive_float(self.tol, "tol")
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = y.astype(np.float64, copy=False)
        features = MondrianFeatures(n_trees=self.n_trees, lifetime=self.lifetime,
                                    random_state=self.random_state, n_jobs=self.n_jobs,
                                    rotation=self.rotation)
        Phi = features.fit_transform(X)
        mean = y.mean(axis=0)
        n, c = Phi.shape
        solver = self.solver
        if solver == "auto" and c <= min(n, AUTO_GRAM_CHOLESKY_MAX):
            solver = "cholesky"
        gram = features.gram() if solver == "cholesky" and c <= n else None
        sol = ridge_solve(Phi, y - mean, alpha, solver=solver, tol=self.tol, gram=gram)
        self.features_ = features
        self.coef_ = sol.coef
        self.intercept_ = mean
        self.solver_ = sol.solver
        self.n_iter_ = sol.n_iter
        return self

    def predict(self, X) -> np.ndarray:
        """Predictions Φ(X)ŵ + ȳ.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        check_is_fitted(self, "coef_")
        X = check_array_input(self, X, reset=False)
        return self.features_.transform(X) @ self.coef_ + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.multi_output = True
        return tags
