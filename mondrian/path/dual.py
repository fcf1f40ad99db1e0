"""Ridge regression on the Mondrian features in the dual, every alpha at once.

On small data the labelled points are fewer than the features (N < C), and
ridge regression on Φ_λ is solved best in the dual.  With the kernel matrix

    K_λ = Φ_λ Φ_λᵀ,   K_λ[i, j] = (1/M)·#{trees in which i and j share their cell at λ}

(K_ii = 1; each off-diagonal entry is an unbiased estimate of the Laplace
kernel exp(-λ‖xᵢ - xⱼ‖₁), Prop. 1), the ridge weights are w = Φ_λᵀc with
(K_λ + αI)c = y (the paper's A = ΦᵀΦ + δ²I of Sec. 4.2.1, δ² = α, by the
push-through identity Φᵀ(ΦΦᵀ + αI)⁻¹ = (ΦᵀΦ + αI)⁻¹Φᵀ).  One
eigendecomposition K = U diag(s) Uᵀ then serves every alpha in O(N²) each:

* dual coefficients c_α = U diag(1/(s + α)) Uᵀy;
* hat matrix H_α = K(K + αI)⁻¹ = U diag(s/(s + α)) Uᵀ, so the residuals are
  y - H_α y = U diag(α/(s + α)) Uᵀy and 1 - (H_α)ᵢᵢ = Σₖ Uᵢₖ² α/(sₖ + α);
* the exact leave-one-out residuals of a linear smoother,
  eᵢ = (yᵢ - (H_α y)ᵢ)/(1 - (H_α)ᵢᵢ), hence the leave-one-out mean squared
  error: N-fold cross-validation at the price of one fit;
* the log marginal likelihood of y ~ N(0, s²(K + αI)) with the prior
  variance s² profiled out, -N/2·log(yᵀ(K + αI)⁻¹y/N) - ½Σ log(sₖ + α) + const.

Cell labels come from the forest's own point slices (exact for points the
trees were grown on), so K costs O(N²·M/8) comparisons (``c/dual.h``),
independently of how many cells there are, and the eigendecomposition
O(N³): the dual is the solver of choice up to a few thousand points.
"""
from __future__ import annotations

import concurrent.futures
import functools

import numpy as np
from threadpoolctl import ThreadpoolController

from .._ext._dual import LABEL_MAX_TREES, label_kernel, symmetric_eigh
from .._ext._dual import cell_labels as forest_cell_labels
from .._validation import resolve_n_jobs
from ..features.mondrian import MondrianFeatures

#: Rows up to which the eigendecomposition runs on one BLAS thread: on two
#: cores, with another process running, two OpenBLAS threads made a
#: 600 x 600 eigendecomposition 10x slower (0.49 s against 0.05 s).
SERIAL_EIGH_ROWS = 2000

#: From this many rows (up to SERIAL_EIGH_ROWS) a lifetime's evaluation is
#: mostly one eigendecomposition on one thread -- the labels and the kernel
#: matrix, on every core, take less -- so a second lifetime computed beside
#: it costs little wall time, and the scorers' ``prefetch`` computes the
#: lifetime the search will need next as it descends
#: (``search_lifetime(prefetch=)``, the same selection).  Below, the kernel
#: matrix of thousands of trees dominates and already takes every core: a
#: lifetime computed ahead and not needed would cost its full time (450
#: rows, binary-shaped: 0.94-1.14 -> 1.23-1.27 s), so ``prefetch`` declines.
PAIR_ROWS = 1000


def prefetch_lifetimes(compute, lifetimes, n_jobs: int, n_rows: int, record) -> list | None:
    """A dual scorer's ``prefetch`` (:func:`~mondrian.path.search.search_lifetime`):
    from :data:`PAIR_ROWS` rows, ``compute(lam, None)`` for every lifetime at
    once (:func:`concurrent_lifetimes`), and one callable per lifetime that
    records its result (``record(lam, part)``, which returns the errors) when
    it is called; a result never asked for leaves no trace.  None where
    computing ahead does not pay (fewer rows, one core, or too many rows for
    decompositions side by side): the search then evaluates one lifetime at
    a time."""
    if n_rows < PAIR_ROWS:
        return None
    lifetimes = [float(lam) for lam in lifetimes]
    parts = concurrent_lifetimes(compute, lifetimes, n_jobs, n_rows)
    if parts is None:
        return None
    return [functools.partial(record, lam, part) for lam, part in zip(lifetimes, parts)]


_CONTROLLER: list[ThreadpoolController] = []


def blas_threads(n_threads: int):
    """Context manager limiting the BLAS threads to ``n_threads``.

    The thread-pool controller is created once: finding the loaded BLAS
    libraries takes milliseconds, as long as a small eigendecomposition.
    """
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=n_threads, user_api="blas")


def blas_thread_count() -> int:
    """Threads the loaded BLAS uses now (its current limit; 1 if none found):
    e.g. 1 on a Dask worker, whose environment limits BLAS to one thread."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    counts = [int(lib.num_threads) for lib in _CONTROLLER[0].select(user_api="blas").lib_controllers]
    return max(1, min(counts)) if counts else 1


__all__ = ["cell_labels", "mondrian_kernel_matrix", "DualRidge", "DualScorer",
           "concurrent_lifetimes"]


def concurrent_lifetimes(compute, lifetimes: list, n_jobs: int, n_rows: int) -> list | None:
    """``[compute(lam, None) for lam in lifetimes]`` on up to ``n_jobs``
    Python threads, one BLAS thread each, or None where that does not pay:
    fewer than two threads, or more than :data:`SERIAL_EIGH_ROWS` rows (one
    decomposition then uses the BLAS threads).  ``compute(lam, None)`` must
    touch no shared state and leave the BLAS thread count alone: one limit
    is set around all the threads instead of each setting and restoring it
    under the others."""
    workers = min(len(lifetimes), n_jobs)
    if workers < 2 or n_rows > SERIAL_EIGH_ROWS:
        return None
    with blas_threads(1), concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda lam: compute(lam, None), lifetimes))


def cell_labels(features: MondrianFeatures, lifetime: float,
                rows: np.ndarray | None = None, n_jobs: int | None = None) -> np.ndarray:
    """Cell of every training point in every tree at ``lifetime``.

    Returns a C-contiguous array of shape (len(rows), M): entry (i, m)
    numbers point ``rows[i]``'s cell among tree m's cells at λ; uint8 when
    no tree has more than 256 cells at λ (the kernel matrix then compares
    twice the trees per instruction: 1127 points and 8873 trees, 0.10 s
    against 0.20 s on one thread), else uint16.  Two points share their
    cell in tree m exactly when their labels in column m are equal.

    Parameters
    ----------
    features : MondrianFeatures
        A fitted forest; ``rows`` index the points it was grown on.
    lifetime : float
        λ in [0, ``features.lifetime_``].
    rows : ndarray of int, optional
        Rows to return (default all, in fit order).
    n_jobs : int, optional
        Threads (default the forest's ``n_jobs``).
    """
    n_trees = features.n_trees
    if n_trees > LABEL_MAX_TREES:
        raise ValueError(f"the dual solver takes at most {LABEL_MAX_TREES} trees, "
                         f"got n_trees={n_trees}")
    lam = features._check_lifetime_arg(lifetime)
    labels = forest_cell_labels(features.forest_, lam,
                                resolve_n_jobs(features.n_jobs if n_jobs is None else n_jobs))
    if rows is not None:
        labels = np.ascontiguousarray(labels[np.asarray(rows, dtype=np.intp)])
    return labels


def mondrian_kernel_matrix(labels_a: np.ndarray, labels_b: np.ndarray | None = None, *,
                           n_jobs: int = 1) -> np.ndarray:
    """K[i, j] = (1/M)·#{m : labels_a[i, m] == labels_b[j, m]}.

    ``labels_b=None`` gives the symmetric matrix of ``labels_a`` with
    itself.  Labels are those of :func:`cell_labels` (one forest, one λ):
    uint8 or uint16; tables of both types are compared as uint16.
    """
    n_trees = labels_a.shape[1]
    if labels_b is not None and labels_b.dtype != labels_a.dtype:
        labels_a = np.ascontiguousarray(labels_a, dtype=np.uint16)
        labels_b = np.ascontiguousarray(labels_b, dtype=np.uint16)
    return label_kernel(labels_a, labels_b, 1.0 / n_trees, n_jobs)


class DualRidge:
    """Kernel ridge regression for every alpha from one eigendecomposition.

    Parameters
    ----------
    K : ndarray of shape (N, N)
        Symmetric positive semi-definite kernel matrix of the training
        points; it is overwritten.
    y : ndarray of shape (N,)
        Centred targets.
    n_jobs : int or None
        BLAS threads for the eigendecomposition above
        :data:`SERIAL_EIGH_ROWS` rows (below, one thread is faster on a
        small machine, and far faster when another process shares it).
        None leaves the BLAS thread count as the caller set it (as
        :meth:`DualScorer.evaluate_many` does around several
        decompositions running at once).

    Attributes
    ----------
    eigenvalues : ndarray of shape (N,)
        Eigenvalues s of K (clipped at 0 against rounding).
    """

    def __init__(self, K: np.ndarray, y: np.ndarray, *, n_jobs: int | None = 1):
        y = np.asarray(y, dtype=np.float64)
        if K.ndim != 2 or K.shape != (y.shape[0], y.shape[0]):
            raise ValueError(f"K must have shape ({y.shape[0]}, {y.shape[0]}), got {K.shape}")
        # Decomposed in place: a C-ordered, writeable float64 array (else a copy).
        K = np.require(K, dtype=np.float64, requirements=["C", "W"])
        if n_jobs is None:
            s, U = symmetric_eigh(K)
        else:
            with blas_threads(1 if y.shape[0] <= SERIAL_EIGH_ROWS else n_jobs):
                s, U = symmetric_eigh(K)
        self.eigenvalues = np.maximum(s, 0.0)
        # The eigenvalues are exact to about N·ε·max(s): an alpha below that
        # divides rounding noise by itself (alpha = 1e-300 gave predictions
        # of 1e285).  Such alphas score inf and are refused by the solve.
        self.alpha_floor = y.shape[0] * np.finfo(np.float64).eps * float(np.max(s, initial=0.0))
        self._U = U
        self._Uty = U.T @ y
        self._y = y

    def _check_alpha(self, alphas: np.ndarray) -> None:
        small = alphas[alphas < self.alpha_floor]
        if small.size:
            raise FloatingPointError(
                f"alpha={small[0]:g} is below the rounding error of the kernel matrix's "
                f"eigenvalues ({self.alpha_floor:.3g}, N·eps·largest eigenvalue): the dual "
                f"solve would amplify rounding noise; use a larger alpha")

    def _refuse_small(self, alphas: np.ndarray, scores: np.ndarray, worst: float) -> np.ndarray:
        """``scores`` with ``worst`` at the alphas below ``alpha_floor``."""
        return np.where(alphas < self.alpha_floor, worst, scores)

    def _shrink(self, alphas: np.ndarray) -> np.ndarray:
        """α/(s + α), shape (N, n_alphas)."""
        return alphas[None, :] / (self.eigenvalues[:, None] + alphas[None, :])

    def train_mse(self, alphas) -> np.ndarray:
        """Mean squared training residual ‖y - Kc_α‖²/N for each alpha
        (Σₖ (α/(sₖ + α))² (Uᵀy)ₖ² / N: U is orthogonal)."""
        alphas = np.asarray(alphas, dtype=np.float64)
        F = self._shrink(alphas)
        mse = np.sum(np.square(F * self._Uty[:, None]), axis=0) / self._y.shape[0]
        return self._refuse_small(alphas, mse, np.inf)

    def loo_mse(self, alphas) -> np.ndarray:
        """Exact leave-one-out mean squared error for each alpha."""
        alphas = np.asarray(alphas, dtype=np.float64)
        F = self._shrink(alphas)
        resid = self._U @ (F * self._Uty[:, None])
        one_minus_h = np.square(self._U) @ F
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            mse = np.mean(np.square(resid / one_minus_h), axis=0)
        return self._refuse_small(alphas, mse, np.inf)

    def log_marginal_likelihood(self, alphas) -> np.ndarray:
        """Log evidence of y ~ N(0, s²(K + αI)) with s² at its maximum,
        for each alpha (up to a constant common to all alphas and λ)."""
        alphas = np.asarray(alphas, dtype=np.float64)
        n = self._y.shape[0]
        denom = self.eigenvalues[:, None] + alphas[None, :]
        quad = np.sum(np.square(self._Uty)[:, None] / denom, axis=0)
        with np.errstate(divide="ignore"):
            # y = 0 (constant targets): s² -> 0 and the evidence is +inf.
            lml = -0.5 * n * np.log(quad / n) - 0.5 * np.sum(np.log(denom), axis=0)
        return self._refuse_small(alphas, lml, -np.inf)

    def dual_coef(self, alpha: float) -> np.ndarray:
        """c = (K + αI)⁻¹y, shape (N,)."""
        self._check_alpha(np.array([float(alpha)]))
        return self._U @ (self._Uty / (self.eigenvalues + float(alpha)))

    def predictions(self, K_cross: np.ndarray, alphas) -> np.ndarray:
        """K_cross @ c_α for each alpha, shape (n_rows, n_alphas); K_cross
        holds the kernel between other points (rows) and the training points."""
        alphas = np.asarray(alphas, dtype=np.float64)
        self._check_alpha(alphas)
        coef = self._U @ (self._Uty[:, None] / (self.eigenvalues[:, None] + alphas[None, :]))
        return K_cross @ coef

    def prediction_mse(self, K_cross: np.ndarray, y: np.ndarray, alphas) -> np.ndarray:
        """Mean squared error of :meth:`predictions` against ``y`` for each
        alpha, inf for the alphas below ``alpha_floor`` (as the other
        scores)."""
        alphas = np.asarray(alphas, dtype=np.float64)
        pred = self.predictions(K_cross, np.maximum(alphas, self.alpha_floor))
        mse = np.mean(np.square(pred - y[:, None]), axis=0)
        return self._refuse_small(alphas, mse, np.inf)


class DualScorer:
    """Validation errors of dual ridge regression at any lifetime of one
    forest, for every alpha, recorded as the lifetime search asks for them.

    Parameters
    ----------
    features : MondrianFeatures
        The forest; ``rows`` and ``val_rows`` index the points it was grown on.
    y : ndarray
        Centred targets of those points.
    alphas : ndarray
        Ridge regularisations.
    rows : ndarray of int
        Training rows.
    val_rows : ndarray of int, optional
        Held-out rows: the error is their mean squared error.  Without
        them it is the exact leave-one-out error over ``rows``, or the
        ``folds`` cross-validation error.
    folds : ndarray of int, optional
        Fold of each training row (k-fold cross-validation over ``rows``).
    tie : float, default=0.0
        Relative margin of :attr:`best`: the largest lifetime whose smallest
        error is within a factor 1 + ``tie`` of the smallest error so far.
    n_jobs : int
        Threads of the C kernels and of the eigendecompositions above
        :data:`SERIAL_EIGH_ROWS` rows; below, the lifetimes that
        :meth:`evaluate_many` is given run on that many Python threads.

    Attributes
    ----------
    best : dict
        ``error``, ``lifetime`` and ``ridge`` (the :class:`DualRidge` of all
        training rows there) of the selected lifetime so far (with
        ``tie=0``, the smallest error; ties go to the larger lifetime).
    """

    def __init__(self, features: MondrianFeatures, y: np.ndarray, alphas: np.ndarray,
                 rows: np.ndarray, *, val_rows: np.ndarray | None = None,
                 folds: np.ndarray | None = None, tie: float = 0.0, n_jobs: int = 1):
        self.features, self.y, self.alphas = features, y, alphas
        self.tie = float(tie)
        # Candidates for ``best``: the lifetimes within the margin of the
        # smallest error so far (the margin only shrinks, so one dropped is
        # never needed again), each with its eigendecomposition.
        self._near: dict[float, tuple[float, DualRidge]] = {}
        self.rows = rows
        self.val_rows = val_rows if val_rows is not None and val_rows.size else None
        self.folds = folds
        self.n_jobs = n_jobs
        self.method = ("holdout" if self.val_rows is not None else
                       "loo" if folds is None else "kfold")
        self.records: dict[str, list] = {"lifetimes": [], "n_features": [],
                                         "train_mse": [], "log_marginal_likelihood": []}

    def __call__(self, lifetime: float) -> np.ndarray:
        """The validation errors at ``lifetime`` (one per alpha), recorded."""
        threads = 1 if self.rows.shape[0] <= SERIAL_EIGH_ROWS else self.n_jobs
        with blas_threads(threads):
            return self._record(lifetime, *self._compute(lifetime, self.n_jobs))

    def evaluate_many(self, lifetimes) -> list[np.ndarray]:
        """``[self(lam) for lam in lifetimes]``, the lifetimes at once.

        Up to :data:`SERIAL_EIGH_ROWS` rows each eigendecomposition runs on
        one BLAS thread, so independent lifetimes go to the cores in
        parallel instead, one Python thread each (the labels, the kernel
        matrix and LAPACK run without the GIL).  Unlike a team of BLAS
        threads, independent decompositions never wait for each other,
        so a process sharing the cores slows them no more than it slows
        one after another.  Each result depends on its lifetime only and
        they are recorded in the order given: the same numbers, bit for
        bit, as one call after another.
        """
        lifetimes = [float(lam) for lam in lifetimes]
        parts = concurrent_lifetimes(self._compute, lifetimes, self.n_jobs, self.rows.shape[0])
        if parts is None:
            return [self(lam) for lam in lifetimes]
        return [self._record(lam, *part) for lam, part in zip(lifetimes, parts)]

    def prefetch(self, lifetimes) -> list | None:
        """Callables that record and return the errors at ``lifetimes``, as
        ``self(lam)`` would, computed at once (:func:`prefetch_lifetimes`),
        or None where that does not pay."""
        return prefetch_lifetimes(self._compute, lifetimes, self.n_jobs, self.rows.shape[0],
                                  lambda lam, part: self._record(lam, *part))

    def _compute(self, lifetime: float, n_jobs: int | None):
        """Errors, ridge and cell count at ``lifetime`` (no state is touched).
        ``n_jobs=None``: one thread for the C kernels, BLAS as set."""
        threads = 1 if n_jobs is None else n_jobs
        labels = cell_labels(self.features, lifetime, n_jobs=threads)
        train = labels[self.rows]
        y = self.y[self.rows]
        K = mondrian_kernel_matrix(train, n_jobs=threads)
        if self.method == "kfold":
            sse = np.zeros(self.alphas.shape[0])
            for f in np.unique(self.folds):
                tr, te = np.flatnonzero(self.folds != f), np.flatnonzero(self.folds == f)
                fold = DualRidge(K[np.ix_(tr, tr)], y[tr], n_jobs=n_jobs)
                sse += te.size * fold.prediction_mse(K[np.ix_(te, tr)], y[te], self.alphas)
            error = sse / y.shape[0]
        ridge = DualRidge(K, y, n_jobs=n_jobs)
        if self.method == "loo":
            error = ridge.loo_mse(self.alphas)
        elif self.method == "holdout":
            K_val = mondrian_kernel_matrix(labels[self.val_rows], train, n_jobs=threads)
            error = ridge.prediction_mse(K_val, self.y[self.val_rows], self.alphas)
        # Every alpha below the rounding level: nothing can be scored.
        ridge._check_alpha(np.array([np.max(self.alphas)]))
        n_cells = int(np.sum(labels.max(axis=0).astype(np.int64) + 1))
        return error, ridge, n_cells

    def _record(self, lifetime: float, error: np.ndarray, ridge: DualRidge,
                n_cells: int) -> np.ndarray:
        """Record one lifetime's results; returns its errors."""
        rec = self.records
        rec["lifetimes"].append(float(lifetime))
        rec["n_features"].append(n_cells)
        rec["train_mse"].append(ridge.train_mse(self.alphas))
        rec["log_marginal_likelihood"].append(ridge.log_marginal_likelihood(self.alphas))
        if np.isfinite(error.min()):
            self._near[float(lifetime)] = (float(error.min()), ridge)
        if not self._near:
            return error
        bound = (1.0 + self.tie) * min(e for e, _ in self._near.values())
        self._near = {lam: v for lam, v in self._near.items() if v[0] <= bound}
        return error

    @property
    def best(self) -> dict:
        """The selected lifetime so far (see ``tie``): ``error``, ``lifetime``, ``ridge``."""
        if not self._near:
            return {"error": np.inf}
        lifetime = max(self._near)
        error, ridge = self._near[lifetime]
        return {"error": error, "lifetime": lifetime, "ridge": ridge}

    def table(self, key: str) -> np.ndarray:
        """A recorded quantity, rows in increasing lifetime."""
        order = np.argsort(self.records["lifetimes"])
        return np.asarray(self.records[key])[order]
