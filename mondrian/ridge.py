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
from scipy.linalg import lapack
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from ._dask import is_dask_collection
from ._validation import (all_finite, available_memory, check_array_input, check_bool, check_int,
                          check_positive_float, largest_magnitude, resolve_n_jobs)
from .features.mondrian import (MEMORY_SHARE, MondrianFeatures, SharesTreesOnCopy,
                                _column_rank)

__all__ = ["MondrianKernelRidge", "ridge_solve", "RidgeSolution", "gram_cholesky_pays"]

#: Largest min(C, N) for which ``solver='auto'`` picks the dense Cholesky
#: solve: an (n x n) float64 matrix of 3000² entries takes 72 MB and factorises
#: in well under a second; above it, CG on the sparse system is cheaper.
AUTO_CHOLESKY_MAX = 3000

#: :class:`MondrianKernelRidge` builds ΦᵀΦ in C from the trees (much faster
#: than the sparse product), so with ``solver='auto'`` it factorises the
#: primal system at least up to this many columns (a 6000² matrix takes 288
#: MB; on the CPU data, 5056 columns: 1.4 s against 2.9 s for CG at tol
#: 1e-8), and above while :func:`gram_cholesky_pays`.
AUTO_GRAM_CHOLESKY_MAX = 6000

#: The cost model of :func:`gram_cholesky_pays`, in flops of the Cholesky
#: factorisation (about 3·10¹⁰ a second on two cores here): one tree-pair
#: count of the Gram matrix costs GRAM_PAIR_COST of them (1 ns), one stored
#: entry of Φ in one CG iteration (its products with Φ and Φᵀ) CG_ENTRY_COST
#: (2.3 ns: CPU data, 350 trees, 5.3 ms an iteration), and CG to the default
#: tol=1e-8 takes about CG_ITERATIONS iterations (550 on the CPU data).
GRAM_PAIR_COST = 30.0
CG_ENTRY_COST = 70.0
CG_ITERATIONS = 500
#: Bytes per entry of the C x C system that the exact route holds at its peak
#: (the Gram matrix, its reordered copy and the factor).
CHOLESKY_BYTES = 24.0

_SOLVERS = ("auto", "cholesky", "cg")

#: ``partial_fit`` updates the Cholesky factor R of ΦᵀΦ + αI by a block of b
#: new rows (2·b·C² flops) while that is cheaper than factorising again from
#: the Gram matrix of every point seen (C³/3 flops): while 6·b < C.
ONLINE_UPDATE_RATIO = 6


def gram_cholesky_pays(n_points: int, n_columns: int, n_trees: int) -> bool:
    """Whether ``MondrianKernelRidge(solver='auto')`` takes the exact primal
    route for N points, C columns and M trees: C ≤ N, and either C ≤
    :data:`AUTO_GRAM_CHOLESKY_MAX`, or the Gram matrix (N·M²/2 tree-pair
    counts) and its factorisation (C³/3 flops) cost less than CG to the
    default tolerance (:data:`CG_ITERATIONS` iterations over the N·M entries
    of Φ) and the C x C system fits in
    :data:`~mondrian.features.mondrian.MEMORY_SHARE` of the available memory.
    On 10⁶ synthetic rows of 8 features (100 trees at λ₀, 7919 columns) CG
    took 322 s where this route takes seconds."""
    n, c, m = float(n_points), float(n_columns), float(n_trees)
    if c > n:
        return False
    if c <= AUTO_GRAM_CHOLESKY_MAX:
        return True
    available = available_memory()
    if available is None or CHOLESKY_BYTES * c * c > MEMORY_SHARE * available:
        return False
    exact = c**3 / 3.0 + GRAM_PAIR_COST * n * m * (m - 1.0) / 2.0
    return exact < CG_ITERATIONS * CG_ENTRY_COST * n * m


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
    Phi, y = _check_system(Phi, y)
    n, c = Phi.shape
    tol = check_positive_float(tol, "tol")
    max_iter = 10 * c if max_iter is None else check_int(max_iter, "max_iter")
    if x0 is not None:
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.shape != (c,) + y.shape[1:]:
            raise ValueError(f"x0 must have shape {(c,) + y.shape[1:]}, got {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 contains NaN or infinity")
    if gram is not None:
        if not isinstance(gram, np.ndarray) or gram.dtype != np.float64:
            gram = np.array(gram, dtype=np.float64)
        if gram.shape != (c, c):
            raise ValueError(f"gram must have shape ({c}, {c}), got {gram.shape}")
        if not all_finite(gram):
            raise ValueError("gram contains NaN or infinity")
    if solver == "auto":
        solver = "cholesky" if min(n, c) <= AUTO_CHOLESKY_MAX else "cg"
    if solver == "cholesky":
        if c <= n:
            if gram is not None:
                A = gram
            else:
                A = Phi.T @ Phi
                A = A.toarray() if sp.issparse(A) else np.array(A)
            A[np.diag_indices_from(A)] += alpha
            coef = la.cho_solve(_cholesky_of(A, alpha, "ΦᵀΦ"), Phi.T @ y, check_finite=False)
            return RidgeSolution(_finite_weights(coef), "cholesky-primal", 0)
        K = Phi @ Phi.T
        K = K.toarray() if sp.issparse(K) else np.array(K)
        K[np.diag_indices_from(K)] += alpha
        beta = la.cho_solve(_cholesky_of(K, alpha, "ΦΦᵀ"), y, check_finite=False)
        return RidgeSolution(_finite_weights(np.asarray(Phi.T @ beta)), "cholesky-dual", 0)
    coef, n_iter = _cg_normal(Phi, np.asarray(Phi.T @ y), alpha, tol=tol, max_iter=max_iter,
                              x0=x0)
    return RidgeSolution(_finite_weights(coef), "cg", n_iter)


def _check_system(Phi, y) -> tuple:
    """Phi as a float64 sparse matrix or 2-d array, y as float64 of shape
    (N,) or (N, K), both finite and non-empty, with products that stay
    finite (ΦᵀΦ and Φᵀy square the entries)."""
    if sp.issparse(Phi):
        if Phi.ndim != 2:
            raise ValueError(f"Phi must be 2-dimensional, got shape {Phi.shape}")
        if Phi.dtype != np.float64:
            Phi = Phi.astype(np.float64)
        values = Phi.data if hasattr(Phi, "data") else Phi.tocsr().data
    else:
        try:
            Phi = np.asarray(Phi, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Phi must be a sparse matrix or a numeric array: {exc}") from None
        if Phi.ndim != 2:
            raise ValueError(f"Phi must be 2-dimensional, got shape {Phi.shape}")
        values = Phi
    if Phi.shape[0] == 0 or Phi.shape[1] == 0:
        raise ValueError(f"Phi must be non-empty, got shape {Phi.shape}")
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y must be a numeric array: {exc}") from None
    if y.ndim not in (1, 2):
        raise ValueError(f"y must have shape (N,) or (N, K), got {y.shape}")
    if y.shape[0] != Phi.shape[0]:
        raise ValueError(f"y has {y.shape[0]} rows but Phi has {Phi.shape[0]}")
    for value, name in ((values, "Phi"), (y, "y")):
        if not all_finite(value):
            raise ValueError(f"{name} contains NaN or infinity")
        largest = largest_magnitude(value) if value.size else 0.0
        # Squares and sums of up to N·C of them must stay finite.
        if largest > _MAX_ENTRY:
            raise ValueError(f"{name} is too large for a ridge solve in double precision "
                             f"(largest |entry| {largest:.3g} > {_MAX_ENTRY:g}); rescale {name}")
    return Phi, y


#: Largest |entry| of Φ and y that :func:`ridge_solve` accepts: squared and
#: summed over up to 10¹² terms, 1e140 stays far below the float64 maximum.
_MAX_ENTRY = 1e140


def _cholesky_of(A: np.ndarray, alpha: float, what: str):
    """Cholesky factor of the symmetric A = what + αI, in A's memory, or
    FloatingPointError naming alpha.  LAPACK factorises Fortran-ordered
    matrices: a C-ordered A is given as its transpose (the same matrix),
    whose upper factor is A's lower one, instead of being copied (a copy of
    the Gram matrix of 10⁵ rows and 100 trees, 4919 columns: 0.19 GB and
    0.14-0.19 s, against 0.55-0.62 s for the factorisation itself)."""
    transposed = A.flags.c_contiguous and not A.flags.f_contiguous
    try:
        if transposed:
            return la.cho_factor(A.T, lower=False, overwrite_a=True, check_finite=False)
        return la.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    except la.LinAlgError:
        raise _alpha_too_small(what, alpha) from None


def _alpha_too_small(what: str, alpha: float) -> FloatingPointError:
    """The error of a Cholesky factorisation of what + αI that failed."""
    return FloatingPointError(
        f"{what} + alpha·I is not positive definite in floating point (alpha={alpha:g} "
        f"is too small for the scale of Phi); use a larger alpha")


def _finite_weights(coef: np.ndarray) -> np.ndarray:
    """The weights, or FloatingPointError if the solve overflowed."""
    if not np.all(np.isfinite(coef)):
        raise FloatingPointError("the ridge solve overflowed (non-finite weights); use a "
                                 "larger alpha or rescale Phi and y")
    return coef


def _cg_normal(Phi, rhs: np.ndarray, alpha: float, *, tol: float, max_iter: int,
               x0: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Solve (ΦᵀΦ + αI)w = rhs by Jacobi-preconditioned conjugate gradients
    (see :func:`ridge_solve`); returns the weights and the largest number of
    iterations over the columns of ``rhs``."""
    c = Phi.shape[1]
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
    return (out[:, 0] if rhs.ndim == 1 else out), max(iterations)


class MondrianKernelRidge(SharesTreesOnCopy, RegressorMixin, BaseEstimator):
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
    lifetime : float or 'auto', default='auto'
        Kernel lifetime λ (inverse width).  'auto': the data's scale λ₀ = 1/(median
        ℓ₁ distance between rows of X), see :class:`~mondrian.MondrianFeatures`
        (the fitted value is ``features_.lifetime_``).
    alpha : float, default=1.0
        Ridge regularisation α > 0; the paper's δ² (noise variance with unit
        prior weight variance).
    solver : {'auto', 'cholesky', 'cg'}, default='auto'
        See :func:`ridge_solve`: exact Cholesky (primal or dual, whichever is
        smaller) or Jacobi-preconditioned conjugate gradients to ``tol``.
        'auto' factorises the primal system, with ΦᵀΦ built in C
        (:meth:`MondrianFeatures.gram`), for C ≤ N columns up to 6000, and
        above where that costs less than CG and fits in memory
        (:func:`gram_cholesky_pays`); otherwise it follows
        :func:`ridge_solve`.
    tol : float, default=1e-8
        Relative residual tolerance of the 'cg' solver.  On the CPU data
        (M = 350, λ = 1e-6, α = 0.1) 1e-8 gives weights within 3e-6
        relative of the exact solution (550 iterations), 1e-10 within 3e-8.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
    n_jobs : int or None, default=None
        Threads for the trees and features (None or -1: all cores; capped at the
        cores available).
    store_points : bool, default=True
        Keep the training points in the forest (see
        :class:`~mondrian.MondrianFeatures`).  With ``False`` memory is
        O(nodes + C²) however long the stream: ``fit`` factorises
        ΦᵀΦ + αI at once and ``partial_fit`` only updates that factor, so
        the exact route is always taken (``solver='cg'`` is refused).
    max_nodes : int or None, default=None
        Cap on each tree's nodes for ``partial_fit`` (see
        :class:`~mondrian.MondrianFeatures`); with it C, hence memory, stays
        bounded over a stream.
    rotation : {None, 'uniform'}, default=None
        'uniform': every tree cuts in its own Haar-random rotation of the
        inputs (the uniformly rotated Mondrian kernel, whose limit is
        :func:`~mondrian.kernels.rotated_laplace_kernel`); see
        :class:`MondrianFeatures`.
    feature_scale : 'auto', 'std', None or array-like of shape (n_features,), default='auto'
        Per-feature length scales of the trees, as in
        :class:`~mondrian.MondrianFeatures` ('auto': the features' standard
        deviations over the first ``fit`` or ``partial_fit`` with
        ``lifetime='auto'`` and at least 10 rows, X as given otherwise).
        Fitted value: ``features_.feature_scale_``.

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

    Notes
    -----
    Online learning (paper Sec. 5): :meth:`partial_fit` inserts new points
    into the trees (:meth:`MondrianFeatures.partial_fit`) and updates the
    weights to the exact ridge solution on every point seen so far, with the
    target centred by the mean of every target seen -- what ``fit`` on all
    of them would give with the same trees.  New cells are new columns,
    zero for every earlier point, appended after the existing ones, so the
    earlier weights keep their indices.
    """

    def __init__(self, n_trees: int = 100, lifetime: float | str = "auto", alpha: float = 1.0, *,
                 solver: str = "auto", tol: float = 1e-8, random_state=None,
                 n_jobs: int | None = None, store_points: bool = True,
                 max_nodes: int | None = None, rotation: str | None = None,
                 feature_scale="auto"):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.alpha = alpha
        self.solver = solver
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.store_points = store_points
        self.max_nodes = max_nodes
        self.rotation = rotation
        self.feature_scale = feature_scale

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
        store_points = check_bool(self.store_points, "store_points")
        if not store_points and self.solver == "cg":
            raise ValueError("store_points=False needs the exact solver (the factor is "
                             "updated without the points); use solver='auto' or 'cholesky'")
        if is_dask_collection(X) or is_dask_collection(y):
            from ._dask import fit_ridge
            fit_ridge(self, X, y, alpha)
            return self
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = y.astype(np.float64, copy=False)
        features = MondrianFeatures(n_trees=self.n_trees, lifetime=self.lifetime,
                                    random_state=self.random_state, n_jobs=self.n_jobs,
                                    max_nodes=self.max_nodes, rotation=self.rotation,
                                    feature_scale=self.feature_scale)
        Phi = features.fit_transform(X)
        mean = y.mean(axis=0)
        n, c = Phi.shape
        solver = self.solver
        if solver == "auto" and gram_cholesky_pays(n, c, features.forest_.n_trees):
            solver = "cholesky"
        gram = features.gram() if solver == "cholesky" and c <= n else None
        sol = ridge_solve(Phi, y - mean, alpha, solver=solver, tol=self.tol, gram=gram)
        # What partial_fit needs of these points (its factor is made on demand,
        # or now if the points are not kept).
        online = _OnlineRidge(n, y.sum(axis=0), np.asarray(Phi.T @ y),
                              np.asarray(Phi.T @ np.ones(n)), None)
        if not store_points:
            online.factor, online.order = _factor(features, alpha)
            online.alpha = alpha
            features.set_params(store_points=False)
            features.forest_.drop_points()
        self._online = online
        # The targets of the forest's points, for forest_regressor.
        self._y = np.array(y) if store_points else None
        self.features_ = features
        self.coef_ = sol.coef
        self.intercept_ = mean
        self.solver_ = sol.solver
        self.n_iter_ = sol.n_iter
        return self

    def partial_fit(self, X, y) -> "MondrianKernelRidge":
        """Learn from a new batch of points: exact online ridge (Sec. 5).

        Before any ``fit`` this is ``fit(X, y)``.  Afterwards the points are
        inserted into the trees (:meth:`MondrianFeatures.partial_fit`: the
        forest stays distributed as one grown in batch on every point seen)
        and the weights become the ridge solution on every point seen,
        ŵ = (ΦᵀΦ + αI)⁻¹Φᵀ(y - ȳ), ȳ the mean of every target seen.

        The exact update keeps the upper Cholesky factor R (RᵀR = ΦᵀΦ + αI)
        and the sums Φᵀy, Φᵀ1, Σy.  At any lifetime an insertion only adds
        cells (a new point never moves an earlier one to another cell;
        ``c/insert.h``), and the new columns are zero for every earlier
        point, so before the new rows are counted the matrix is
        diag(ΦᵀΦ + αI, αI) and its factor diag(R, √α·I): the columns are
        added in O(C·k) without touching R.  The b new rows φᵢ then give
        R'ᵀR' = RᵀR + Σᵢ φᵢφᵢᵀ: b rank-1 updates, done together as the QR
        factorisation of R stacked on the b × C block of rows (LAPACK's
        ``dtpqrt``, Householder reflections, 2·b·C² flops).  When
        ``ONLINE_UPDATE_RATIO``·b ≥ C, factorising ΦᵀΦ + αI again (C³/3
        flops, ΦᵀΦ from the trees) is cheaper and is done instead.  Then
        ŵ costs two triangular solves.  Memory: C² doubles for R; with
        ``solver='auto'`` this route is taken up to 6000 columns
        (``AUTO_GRAM_CHOLESKY_MAX``) and above where ``fit`` would take it
        (:func:`gram_cholesky_pays` for every point seen).

        Above that size (or with ``solver='cg'``) the weights are found by
        conjugate gradients on the features of every point seen (kept by
        the forest), warm-started at the previous weights padded with zeros
        for the new columns (the new cells' weights start at 0, which keeps
        every earlier point's prediction), to the relative tolerance
        ``tol``.

        With ``store_points=False`` the factor is always updated (it cannot
        be made again without the points), whatever C.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Required; as many targets as in ``fit``.

        Returns
        -------
        self
        """
        if not hasattr(self, "coef_"):
            return self.fit(X, y)
        alpha = check_positive_float(self.alpha, "alpha")
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}")
        tol = check_positive_float(self.tol, "tol")
        if y is None:
            raise ValueError("MondrianKernelRidge.partial_fit requires y (the targets of X)")
        X, y = check_array_input(self, X, reset=False, y=y, y_numeric=True)
        y = y.astype(np.float64, copy=False)
        state = self._online
        features = self.features_
        stores = features.forest_.stores_points
        if not stores and (self.solver == "cg" or alpha != state.alpha):
            raise ValueError("the model keeps no training points (store_points=False): "
                             "its factor can only be updated, with the alpha and exact "
                             f"solver of fit (alpha={state.alpha!r}); refit to change them")
        if y.ndim != self.coef_.ndim or (y.ndim == 2 and y.shape[1] != self.coef_.shape[1]):
            fitted = ("one target" if self.coef_.ndim == 1
                      else f"{self.coef_.shape[1]} targets")
            raise ValueError(f"y has shape {y.shape}, but the model was fitted on {fitted}")
        features.partial_fit(X)
        if stores and getattr(self, "_y", None) is not None:
            self._y = np.concatenate([self._y, y])
        Phi = features.transform(X)
        b, c = Phi.shape
        state.add(Phi, y)
        mean = state.y_sum / state.n
        rhs = state.phi_t_y - np.multiply.outer(state.phi_t_1, mean)
        # Up to AUTO_GRAM_CHOLESKY_MAX columns the factor is kept even with
        # more columns than points (early in a stream); above, where fit
        # would factorise.
        exact = self.solver == "cholesky" or (self.solver == "auto" and (
            not stores or c <= AUTO_GRAM_CHOLESKY_MAX
            or gram_cholesky_pays(state.n, c, features.forest_.n_trees)))
        if exact:
            if (state.factor is None or state.alpha != alpha
                    or (stores and ONLINE_UPDATE_RATIO * b >= c)):
                state.factor, state.order = _factor(features, alpha)
                state.alpha = alpha
            else:
                state.factor, state.order = _factor_update(state.factor, state.order, Phi,
                                                           alpha)
            R, order = state.factor, state.order
            z = la.solve_triangular(R, rhs[order], trans="T", lower=False, check_finite=False)
            coef = np.empty_like(rhs)
            coef[order] = la.solve_triangular(R, z, lower=False, check_finite=False)
            solver, n_iter = "cholesky-primal", 0
        else:
            state.factor = None
            x0 = _pad_rows(self.coef_, c)
            coef, n_iter = _cg_normal(features.training_features(), rhs, alpha, tol=tol,
                                      max_iter=10 * c, x0=x0)
            solver = "cg"
        self.coef_ = coef
        self.intercept_ = mean
        self.solver_ = solver
        self.n_iter_ = n_iter
        return self

    def forest_regressor(self, *, lifetime: float | None = None, smoothing: bool = True,
                         noise_variance="auto", prior_scale="auto", random_state=None):
        """The Mondrian forest on this kernel's trees and training points.

        The paper's Sec. 6 contrasts the two ways of fitting one set of M
        Mondrian samples: the Mondrian kernel fits the weights of all trees'
        cells jointly (this estimator's ridge, eq. (3)), the Mondrian forest
        each tree's on its own and averages the trees (eq. (4)).  This
        returns the forest, fitted on the same trees (shared, not copied:
        see :meth:`MondrianForestRegressor.from_features`) and the same
        training targets, so the comparison of Fig. 9 is on the same
        samples.

        Parameters
        ----------
        lifetime : float or None, default=None
            Lifetime λ ≤ this estimator's ``lifetime`` of the forest's
            predictions (the same trees serve every smaller λ); None: the
            kernel's.
        smoothing : bool, default=True
            False: the forest as the paper's Sec. 8.3 ran it (every leaf
            predicts the mean of its targets).
        noise_variance, prior_scale : 'auto' or float, default='auto'
            The smoothing's hyperparameters (see
            :class:`~mondrian.MondrianForestRegressor`); 'auto' selects
            them by leave-one-out on these trees.
        random_state : None, int, SeedSequence or Generator, default=None
            For the sample of rows behind ``lifetime_scale_``; None: this
            estimator's ``random_state``.

        Returns
        -------
        MondrianForestRegressor
            Fitted.

        Raises
        ------
        ValueError
            If the model keeps no training points (``store_points=False``
            or a dask fit) or was fitted on several targets.
        """
        check_is_fitted(self, "coef_")
        from .forest import MondrianForestRegressor
        y = getattr(self, "_y", None)
        if y is None or not self.features_.forest_.stores_points:
            raise ValueError("the model keeps no training points (store_points=False or a "
                             "dask fit): the forest's node statistics need them")
        if y.ndim == 2:
            if y.shape[1] != 1:
                raise ValueError(f"the model was fitted on {y.shape[1]} targets; the forest "
                                 f"regressor takes one")
            y = y[:, 0]
        return MondrianForestRegressor.from_features(
            self.features_, y, lifetime=lifetime, smoothing=smoothing,
            noise_variance=noise_variance, prior_scale=prior_scale,
            random_state=self.random_state if random_state is None else random_state,
            n_jobs=self.n_jobs)

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
        if is_dask_collection(X):
            from ._dask import predict_blocks
            return predict_blocks(self, X)
        X = check_array_input(self, X, reset=False)
        return self.features_.dot(X, self.coef_) + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.multi_output = True
        return tags


class _OnlineRidge:
    """What :meth:`MondrianKernelRidge.partial_fit` keeps of every point seen:
    their number n, Σy, Φᵀy and Φᵀ1 (columns in the stable numbering of
    :meth:`MondrianFeatures.partial_fit`), and the upper Cholesky factor of
    ΦᵀΦ + αI with the α it was made for (None until the exact route needs
    it, or on the CG route).  The factor's rows are the columns ``order``
    (row r is column order[r]): the trees' own column order at its last
    factorisation, then the columns appended since."""

    __slots__ = ("n", "y_sum", "phi_t_y", "phi_t_1", "factor", "order", "alpha")

    def __init__(self, n, y_sum, phi_t_y, phi_t_1, factor):
        self.n = n
        self.y_sum = y_sum
        self.phi_t_y = phi_t_y
        self.phi_t_1 = phi_t_1
        self.factor = factor
        self.order = None
        self.alpha = None

    def add(self, Phi, y: np.ndarray) -> None:
        """Count the rows Φ (with new columns appended) and their targets y."""
        c = Phi.shape[1]
        self.phi_t_y = _pad_rows(self.phi_t_y, c) + np.asarray(Phi.T @ y)
        self.phi_t_1 = _pad_rows(self.phi_t_1, c) + np.asarray(Phi.T @ np.ones(Phi.shape[0]))
        self.n += Phi.shape[0]
        self.y_sum = self.y_sum + y.sum(axis=0)


def _pad_rows(a: np.ndarray, c: int) -> np.ndarray:
    """``a`` with zero rows appended up to ``c`` rows (new columns' weights)."""
    if a.shape[0] == c:
        return a
    out = np.zeros((c,) + a.shape[1:], dtype=np.float64)
    out[: a.shape[0]] = a
    return out


def _factor(features: MondrianFeatures, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Upper Cholesky factor R (Fortran order) of ΦᵀΦ + αI, ΦᵀΦ from the trees
    in their own column order (no C x C permutation), and that order as
    stable column numbers (see :class:`_OnlineRidge`)."""
    lam = features.lifetime_
    A = features.forest_.gram(lam, resolve_n_jobs(features.n_jobs))
    rank = _column_rank(features.forest_, lam)
    order = np.arange(A.shape[0]) if rank is None else rank
    A[np.diag_indices_from(A)] += alpha
    # A is symmetric: its transpose is the Fortran-ordered matrix LAPACK
    # factorises in place.
    try:
        return la.cholesky(A.T, lower=False, overwrite_a=True, check_finite=False), order
    except la.LinAlgError:
        raise _alpha_too_small("ΦᵀΦ", alpha) from None


def _factor_update(R: np.ndarray, order: np.ndarray, Phi,
                   alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Factor of RᵀR (padded by √α·I to Phi's columns) + ΦᵀΦ: the QR of
    [R; Φ] (LAPACK dtpqrt), whose triangular factor is the new R; new
    columns are appended to ``order``."""
    c_old, c = R.shape[0], Phi.shape[1]
    if c > c_old:
        grown = np.zeros((c, c), dtype=np.float64, order="F")
        grown[:c_old, :c_old] = R
        new = np.arange(c_old, c)
        grown[new, new] = np.sqrt(alpha)
        R = grown
        order = np.concatenate([order, new])
    dense = Phi.toarray() if sp.issparse(Phi) else np.asarray(Phi)
    B = np.asfortranarray(dense[:, order], dtype=np.float64)
    R, _, _, info = lapack.dtpqrt(0, max(1, min(32, B.shape[0], c)), R, B, overwrite_a=1,
                                   overwrite_b=1)
    if info != 0:
        raise RuntimeError(f"LAPACK dtpqrt failed (info={info})")
    return R, order
