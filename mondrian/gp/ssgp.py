"""Sparse-spectrum Gaussian-process regression (Lázaro-Gredilla et al. 2010).

The ARD Gaussian kernel k(x, x') = σ_f² exp(-½ (x - x')ᵀ Θ⁻¹ (x - x')),
Θ = diag(ℓ₁², …, ℓ_D²), is by Bochner's theorem (Hoang et al. 2020,
Theorem 1, Eq. 4) the expectation k(x, x') = σ_f² E[cos ωᵀ(x - x')] over
ω ~ N(0, Θ⁻¹) (the paper's r = ω / 2π ~ N(0, (4π²Θ)⁻¹)).  With p spectral
points ω_j = Θ^{-1/2} ε_j, ε_j ~ N(0, I), and the 2p features

    φ(x) = (cos ω₁ᵀx, sin ω₁ᵀx, …, cos ω_pᵀx, sin ω_pᵀx),

the sparse-spectrum kernel is k'(x, x') = (σ_f²/p) φ(x)ᵀφ(x') and its Gram
matrix K' = (σ_f²/p) ΦΦᵀ has rank at most 2p (Hoang et al. 2020, Sec. 2.2).
The GP with kernel k' and Gaussian noise σ_n² is Bayesian linear regression
on φ with weights w ~ N(0, (σ_f²/p) I); with

    A = (σ_f²/p) ΦᵀΦ + σ_n² I = RᵀR        (2p × 2p, R upper triangular)

Woodbury's identity and the determinant lemma give the exact negative log
marginal likelihood of Hoang et al. (2020), Eq. (3), for K = K', in O(n p²):

    NLML = [yᵀy - (σ_f²/p) ‖R⁻ᵀΦᵀy‖²] / (2σ_n²) + Σᵢ log R_ii
           + (n/2 - p) log σ_n² + (n/2) log 2π,

and the predictive distribution of Eq. (2), for a test point x*,

    mean   (σ_f²/p) φ*ᵀ A⁻¹ Φᵀy,
    var f* σ_n² (σ_f²/p) φ*ᵀ A⁻¹ φ*,       var y* = var f* + σ_n²

(DESIGN.md §7).  ΦᵀΦ and Φᵀy are accumulated over blocks of rows, so the
memory is O(p² + block) for any n; the analytic gradient costs one more
pass over the rows with one (block × 2p)·(2p × 2p) product per block.

Two errors of the SSGP paper's public code are avoided here: its spectral
points are drawn from Uniform[0, 1) instead of N(0, I), and its NLML drops
the log-determinant.  The predictive variance above is the posterior
variance of the weights, σ_n² (σ_f²/p) A⁻¹, pushed through φ*.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import warnings

import numpy as np
import scipy.linalg as la
from scipy.linalg import lapack
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._dask import is_dask_collection
from .._ext._fourier import fourier_features, ssgp_pairing
from .._validation import (all_finite, available_cores, available_memory, check_array_input,
                           check_bool, check_int, check_length_scales, check_positive_float,
                           check_random_generator, check_target_scale, format_bytes)
from .._progress import check_verbose, progress
from .._scale import feature_deviations
from ..path.dual import blas_thread_count, blas_threads

__all__ = ["SparseSpectrumGPRegressor", "sparse_spectrum_nlml", "initial_theta",
           "length_scale_bounds", "HYPERPARAMETER_BOUNDS"]

#: Bounds of σ_f² and σ_n² during training (scikit-learn's default
#: ``ConstantKernel`` and ``WhiteKernel`` bounds; in units of the normalised
#: y with ``normalize_y``), and of every ℓ_d relative to input d's spread
#: (:func:`length_scale_bounds`: on standardised inputs, scikit-learn's
#: ``RBF`` bounds).  The exact GP of :func:`mondrian.gp.exact_gp_regressor`
#: searches the same box.
HYPERPARAMETER_BOUNDS = (1e-5, 1e5)

#: Rows per block of ``predict`` and ``sample_y`` when ``block_size=None``
#: and the features of all rows take more than ``_CACHE_BYTES``: blocks of
#: about 16 MiB of features (4096 rows at 2p = 512).
_BLOCK_BYTES = 16 * 2 ** 20

#: Up to this many bytes of features (n × 2p × 8) the forward pass keeps Φ
#: for the gradient pass instead of recomputing it.
_CACHE_BYTES = 64 * 2 ** 20

#: Rows per block of an evaluation's passes when ``block_size=None``: about
#: this many bytes of features (4096 rows at 2p = 512).  Each worker thread
#: holds a block's features, their product ΦM and the pairing H (2.5 times
#: this); on one thread, blocks of 512 to 8192 rows at 2p = 512 gave the
#: same time within the noise (syrk and gemm at full speed from 512 rows).
_PASS_BYTES = 16 * 2 ** 20

#: An evaluation's passes split the blocks into at most this many groups of
#: consecutive blocks, each with its own sums (see ``_row_groups``), and at
#: most as many as keep the groups' 2p × 2p sums within
#: ``_ACCUMULATOR_BYTES`` (but always 2, for two threads).
_GROUPS = 8
_ACCUMULATOR_BYTES = 64 * 2 ** 20

_LOG_2PI = float(np.log(2.0 * np.pi))

#: Up to this many flops per product ΦᵀΦ (n·(2p)²) the fit runs on one BLAS
#: thread: on Abalone (2927 × 2·16 features), with other processes on the
#: two cores, two OpenBLAS threads made an NLML-and-gradient evaluation 30x
#: slower than one (0.27 s against 0.009 s) as the threads wait for each
#: other; above it a product is long enough for the threads to pay.
SERIAL_FLOPS = 2e9

#: The ``n_frequency_draws`` starting draws of ε are ranked by the NLML on at
#: most this many rows (a random subset when there are more): on 10⁶ rows
#: x 8 at p = 256 ranking ten draws on all rows cost about 94 s of CPU.
DRAW_ROWS = 20_000

#: ``race_iterations`` > 0: each of the ``n_frequency_draws`` draws of ε is
#: trained by that many L-BFGS-B iterations on at most this many random rows,
#: and the lowest NLML continues on all rows.  On Abalone (2927 rows; seeds
#: 0-29; p = 16, 32, 64; ``python asv_bench/ssgp_abalone.py --seeds 30``)
#: racing on 1000 rows gave the mean test RMSE 1.958, 1.948, 1.946 in 0.20,
#: 0.62, 1.22 s (median), ranking the draws at the start
#: (``race_iterations=0``) 1.965, 1.955, 1.949 in 0.11, 0.38, 0.85 s.  A
#: prototype racing on all rows ranked no better (1.953, 1.948, 1.946) and
#: took twice as long at p = 64.
RACE_ROWS = 1000

#: ``n_restarts='auto'``: min(AUTO_MAX_RESTARTS, ⌊RESTART_BUDGET / (n p²)⌋)
#: further runs, n p² being the leading cost of one NLML evaluation: the
#: runs are kept where they are cheap, and where few spectral points make
#: one run's result depend most on its draw.  On Abalone (2927 rows, seeds
#: 0-29, ``python asv_bench/ssgp_abalone.py --seeds 30 --restarts 0 4``)
#: four further runs took the fits with test RMSE above 1.96 from 14 to 4
#: of 30 at p = 16 (mean 1.958 -> 1.949, median time 0.28 -> 0.91 s), from
#: 3 to 1 at p = 32 (1.71 s), and none at p = 64 (2 -> 2, 2.8 s); eight
#: further runs (``--restarts 8``) took p = 16 from 4 to 2 of 30 (worst
#: 1.9733 -> 1.9635, seed 0 1.961 -> 1.940; median 0.82 s, largest 1.02 s)
#: and left p = 32 at 1 of 30 for 1.9 s.  The budget gives 8, 2 and 0
#: there, and none at the default p = 100 on more than 600 rows.
RESTART_BUDGET = 6e6
AUTO_MAX_RESTARTS = 8


def auto_restarts(n_rows: int, p: int) -> int:
    """The further runs of ``n_restarts='auto'`` for n_rows rows and p
    spectral points (:data:`RESTART_BUDGET`, :data:`AUTO_MAX_RESTARTS`)."""
    return int(min(AUTO_MAX_RESTARTS, RESTART_BUDGET // (float(n_rows) * p * p)))


#: Correction pairs L-BFGS-B keeps (scipy's ``maxcor``, default 10) in a run
#: that trains θ = (log σ_f², log ℓ, log σ_n²) on all its rows -- and in the
#: exact GP set up identically (:class:`mondrian.gp.exact.LBFGSBOptimizer`).
#: With many inputs ten pairs forget the curvature across the length
#: scales: on 2400 rows of 50 binary inputs (p = 100) the run took 1000
#: iterations and 16 s, still falling, and 166 iterations (4.1 s) with 30,
#: the same test RMSE; raw CPU (21 inputs) 88 -> 61 iterations, 3.75 ->
#: 2.66 s, the same 2.561 % error.  Abalone (10 inputs, seeds 0-29) and
#: the real sets of 4-10 inputs: the same iterations and errors.  Not used
#: with ``optimize_frequencies``: the p·D more parameters then overfit as
#: the NLML falls (Abalone p = 16: test RMSE 2.08 after 1000 iterations with
#: 10 pairs, 2.11 with 30), and the race's few iterations keep scipy's
#: default.
LBFGS_MEMORY = 30


#: ``subsample='auto'``: above ``SUBSAMPLE_FACTOR * SUBSAMPLE_ROWS`` rows (and
#: with the spectral points fixed) the hyperparameters are first trained on
#: ``SUBSAMPLE_ROWS`` random rows, then refined on all rows by Newton steps
#: preconditioned with the subsample's Hessian (see ``fit``).
SUBSAMPLE_ROWS = 20_000
SUBSAMPLE_FACTOR = 4

#: Between the subsample and all rows, the refinement passes through nested
#: random subsets LEVEL_FACTOR times larger each (the last at most n / 2),
#: each starting from the previous one's optimum and Hessian:
#: the optimum moves with n (the log-determinant's share of the NLML does),
#: so each stage starts close to its optimum.  With dask data the subsets
#: are gathered to the client, at most MAX_GATHERED_ROWS rows.
LEVEL_FACTOR = 4
MAX_GATHERED_ROWS = 1_000_000

#: Newton refinement: relative step of the finite differences of the
#: analytic gradient that give the subsample's Hessian (in log space).
_HESSIAN_STEP = 1e-4
#: ... and the smallest curvature it keeps, relative to the largest.
_HESSIAN_FLOOR = 1e-4


def _pass_limit(workers: int):
    """One BLAS thread inside data-parallel passes (``workers`` > 1)."""
    return blas_threads(1) if workers > 1 else contextlib.nullcontext()


#: Peak memory of one run, in (2p x 2p) float64 matrices (the Gram matrix,
#: its factor, the gradient's products and L-BFGS's copies): measured 16
#: (p = 1000 on 150 rows: 514 MB above the start).
RUN_MATRICES = 16


def _check_run_memory(p: int, workers: int) -> None:
    """MemoryError, naming n_components, when the runs' (2p x 2p) matrices
    cannot fit in the memory the system reports available."""
    need = RUN_MATRICES * workers * (2 * p) ** 2 * 8
    free = available_memory()
    if free is not None and need > free:
        raise MemoryError(
            f"n_components={p}: a fit holds about {RUN_MATRICES} matrices of (2p)² doubles "
            f"per run ({workers} at once), {format_bytes(need)}, more than the "
            f"{format_bytes(free)} available; use fewer components")


def _blas_limit(n: int, n_features2: int):
    """One BLAS thread for small products (see ``SERIAL_FLOPS``), else no limit."""
    if n * n_features2 ** 2 <= SERIAL_FLOPS:
        return blas_threads(1)
    return contextlib.nullcontext()


# --------------------------------------------------------------------------- core
def _block_rows(n: int, n_features2: int, block_size: int | None) -> int:
    """Rows per block: ``block_size`` if given, else all rows if their features
    fit in ``_CACHE_BYTES``, else about ``_BLOCK_BYTES`` of features."""
    if block_size is not None:
        return block_size
    if n * n_features2 * 8 <= _CACHE_BYTES:
        return max(n, 1)
    return max(256, _BLOCK_BYTES // (8 * n_features2))


def _feature_threads(n: int, n_features2: int) -> int:
    """Threads of the cos/sin pass over n rows: one where BLAS runs on one
    thread (``SERIAL_FLOPS``; small problems, whose restarts run in
    parallel), else as many as the BLAS uses (at most the cores)."""
    if n * n_features2 ** 2 <= SERIAL_FLOPS:
        return 1
    return max(1, min(available_cores(), blas_thread_count()))


def _features(X: np.ndarray, omega: np.ndarray, n_threads: int = 1) -> np.ndarray:
    """Φ with columns 2j, 2j+1 = cos, sin of ω_jᵀx (C, _ext/c/fourier.c: the
    angles XΩ are formed a tile of rows at a time and never stored)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], 2 * omega.shape[1]))
    return fourier_features(X, np.ascontiguousarray(omega), out, 1.0, n_threads=n_threads)


def _pass_rows(n_features2: int, block_size: int | None) -> int:
    """Rows per block of the two passes of an evaluation: ``block_size`` if
    given, else about :data:`_PASS_BYTES` of features."""
    if block_size is not None:
        return block_size
    return max(256, _PASS_BYTES // (8 * n_features2))


def _row_groups(n: int, n_features2: int, rows: int) -> list[tuple[int, int]]:
    """The rows of a pass as consecutive groups of whole blocks, each with its
    own accumulators (summed in group order at the end).  The grouping
    depends on n, 2p and the block size only: worker threads take groups as
    they come free, and the sums do not depend on the thread count or on
    the order in which the groups finish."""
    n_blocks = -(-n // rows)
    cap = max(2, _ACCUMULATOR_BYTES // (8 * n_features2 ** 2))
    n_groups = max(1, min(n_blocks, _GROUPS, cap))
    bounds = [min(n, rows * (n_blocks * g // n_groups)) for g in range(n_groups + 1)]
    return [(bounds[g], bounds[g + 1]) for g in range(n_groups) if bounds[g + 1] > bounds[g]]


def _map_groups(groups, workers: int, task):
    """[task(start, stop, scratch) for each group], on ``workers`` threads
    that each take the next group as they come free; ``scratch`` is a dict
    private to the thread (its buffers live across its groups)."""
    if workers <= 1 or len(groups) <= 1:
        scratch = {}
        return [task(start, stop, scratch) for start, stop in groups]
    results = [None] * len(groups)
    order = iter(range(len(groups)))
    lock = threading.Lock()

    def worker():
        scratch = {}
        while True:
            with lock:
                g = next(order, None)
            if g is None:
                return
            results[g] = task(*groups[g], scratch)

    with concurrent.futures.ThreadPoolExecutor(min(workers, len(groups))) as pool:
        futures = [pool.submit(worker) for _ in range(min(workers, len(groups)))]
        for future in futures:
            future.result()
    return results


def _buffer(scratch: dict, name: str, shape: tuple[int, int]) -> np.ndarray:
    """A C-contiguous (shape[0], shape[1]) view of a thread's buffer ``name``,
    allocated once for the largest block."""
    buf = scratch.get(name)
    if buf is None or buf.shape[0] < shape[0] or buf.shape[1] != shape[1]:
        buf = scratch[name] = np.empty(shape)
    return buf[:shape[0]]


def _normal_sums(X: np.ndarray, y: np.ndarray, omega: np.ndarray, rows: int, workers: int = 1,
                 keep: bool = False):
    """ΦᵀΦ and Φᵀy over blocks of ``rows`` rows, in groups of blocks that
    ``workers`` threads share (each with one BLAS thread: see
    :func:`_nlml`); with ``keep``, also Φ of every row (else None).

    Per block: the features from X in C (angles, cos/sin and Φᵀy fused),
    then ΦᵀΦ by BLAS syrk into a thread's buffer, added to the group's sum.
    """
    n = X.shape[0]
    m2 = 2 * omega.shape[1]
    Phi = np.empty((n, m2)) if keep else None

    def task(start, stop, scratch):
        G = np.zeros((m2, m2))
        b = np.zeros(m2)
        product = _buffer(scratch, "gram", (m2, m2))
        for lo in range(start, stop, rows):
            hi = min(lo + rows, stop)
            Pb = Phi[lo:hi] if keep else _buffer(scratch, "phi", (hi - lo, m2))
            fourier_features(X[lo:hi], omega, Pb, 1.0, y[lo:hi], b)
            np.matmul(Pb.T, Pb, out=product)                 # BLAS syrk
            G += product
        return G, b

    parts = _map_groups(_row_groups(n, m2, rows), workers, task)
    G, b = parts[0]
    for Gg, bg in parts[1:]:
        G += Gg
        b += bg
    return G, b, Phi


def _gradient_sums(X: np.ndarray, y: np.ndarray, omega: np.ndarray, M: np.ndarray,
                   alpha_as: np.ndarray, rows: int, workers: int = 1,
                   Phi: np.ndarray | None = None) -> np.ndarray:
    """W = XᵀH for ∂NLML/∂Φ = E = ΦM - y α'ᵀ (α' = ``alpha_as``, see
    :func:`_nlml`), over blocks of ``rows`` rows shared by ``workers``
    threads as in :func:`_normal_sums` (Φ of every row may be given).

    Per block: the features (unless given), E₀ = ΦM by BLAS gemm into a
    thread's buffer, the pairing H_ij = E_i,2j+1 cos t_ij - E_i,2j sin t_ij
    with the rank-one term applied on the fly (C), and XᵀH (BLAS).
    """
    n, D = X.shape
    p = omega.shape[1]
    m2 = 2 * p

    def task(start, stop, scratch):
        W = np.zeros((D, p))
        product = _buffer(scratch, "w", (D, p))
        for lo in range(start, stop, rows):
            hi = min(lo + rows, stop)
            if Phi is not None:
                Pb = Phi[lo:hi]
            else:
                Pb = fourier_features(X[lo:hi], omega, _buffer(scratch, "phi", (hi - lo, m2)))
            Eb = np.matmul(Pb, M, out=_buffer(scratch, "e", (hi - lo, m2)))   # BLAS gemm
            Hb = ssgp_pairing(Eb, Pb, _buffer(scratch, "h", (hi - lo, p)), y[lo:hi], alpha_as)
            np.matmul(X[lo:hi].T, Hb, out=product)
            W += product
        return W

    parts = _map_groups(_row_groups(n, m2, rows), workers, task)
    W = parts[0]
    for Wg in parts[1:]:
        W += Wg
    return W


class _Evaluation:
    """NLML at one (θ, ε), with the factor and weights the posterior needs."""

    __slots__ = ("nlml", "grad_theta", "grad_eps", "R", "alpha", "a", "s", "omega")


def _nlml_dual(X: np.ndarray, y: np.ndarray, omega: np.ndarray, a: float, s: float,
               ls: np.ndarray) -> _Evaluation:
    """:func:`_nlml` with its gradient through the n x n Gram matrix, for
    fewer rows than features (n < 2p, in memory): K = aΦΦᵀ + sI = LLᵀ,
    β = K⁻¹y, B = K⁻¹ - ββᵀ, and

    * NLML = yᵀβ/2 + Σ log L_ii + (n/2) log 2π (the same number as the
      2p x 2p form, by the determinant lemma and Woodbury's identity),
    * ∂/∂log σ_f² = tr(B(K - sI))/2 = (n - s tr K⁻¹ - yᵀβ + s βᵀβ)/2,
    * ∂/∂log σ_n² = s tr B/2 = s (tr K⁻¹ - βᵀβ)/2,
    * ∂/∂Φ = E = a BΦ, then the pairing and XᵀH as in :func:`_nlml`.

    O(n² p + n³) instead of O(n p² + p³).  It has no 2p x 2p factor R
    (``R`` is None; α = A⁻¹Φᵀy = Φᵀβ is set): a fitted state is always
    taken from :func:`_nlml` itself."""
    n, D = X.shape
    p = omega.shape[1]
    Phi = fourier_features(X, omega, np.empty((n, 2 * p)))
    K = Phi @ Phi.T
    K *= a
    K.flat[::n + 1] += s
    L, info = lapack.dpotrf(K, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"K = (σ_f²/p)ΦΦᵀ + σ_n²I is not positive definite "
                                    f"(dpotrf info={info})")
    beta = la.cho_solve((L, True), y, check_finite=False)
    Kinv = la.cho_solve((L, True), np.eye(n), check_finite=False)
    ybeta, bb, tr = float(y @ beta), float(beta @ beta), float(np.trace(Kinv))
    out = _Evaluation()
    out.nlml = 0.5 * ybeta + float(np.sum(np.log(np.diag(L)))) + 0.5 * n * _LOG_2PI
    out.R, out.a, out.s, out.omega = None, a, s, omega
    out.alpha = Phi.T @ beta
    grad = np.empty(D + 2)
    grad[0] = 0.5 * (n - s * tr - ybeta + s * bb)
    grad[1 + D] = 0.5 * s * (tr - bb)
    Kinv -= np.outer(beta, beta)
    E = Kinv @ Phi
    E *= a
    H = ssgp_pairing(E, Phi, np.empty((n, p)))
    W = X.T @ H
    grad[1:1 + D] = -np.sum(omega * W, axis=1)
    out.grad_theta = grad
    out.grad_eps = (W / ls[:, None]).T
    return out


def _nlml(X: np.ndarray, y: np.ndarray, yy: float, eps: np.ndarray, theta: np.ndarray, *,
          gradient: bool, block_size: int | None, dual: bool = False) -> _Evaluation:
    """The SSGP negative log marginal likelihood and (optionally) its gradient.

    ``theta`` = (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²) (scikit-learn's
    layout for ``ConstantKernel * RBF + WhiteKernel``), ``eps`` (p, D) the
    standardised spectral points, ω_j = ε_j / ℓ.  Raises
    ``np.linalg.LinAlgError`` if A is not numerically positive definite.

    Gradient (A = aG + sI, a = σ_f²/p, s = σ_n², G = ΦᵀΦ, b = Φᵀy,
    α = A⁻¹b, q = (yᵀy - a bᵀα)/s):

    * ∂/∂log σ_f² = a ∂/∂a = -a αᵀα/2 + (2p - s tr A⁻¹)/2,
    * ∂/∂log σ_n² = s ∂/∂s = -q/2 + a αᵀα/2 + s tr A⁻¹/2 + n/2 - p,
    * ∂/∂Φ = E = Φ M - (a/s) y αᵀ with M = a A⁻¹ + (a²/s) ααᵀ; with the
      angles t = XΩ (Ω = [ω₁ … ω_p], D × p) and Φ = [cos t, sin t] paired,
      ∂/∂t_ij = E_i,2j+1 cos t_ij - E_i,2j sin t_ij =: H_ij, so
      ∂/∂Ω = XᵀH, ∂/∂ε_jd = (XᵀH)_dj / ℓ_d and
      ∂/∂log ℓ_d = -Σ_j Ω_dj (XᵀH)_dj.  The rank-one part of E is applied
      row by row in the pairing (C), so the only n × 2p × 2p work besides
      ΦᵀΦ is the gemm ΦM.

    The two passes over the rows (ΦᵀΦ and Φᵀy; then ΦM and XᵀH) are split
    into groups of blocks shared by the worker threads (see ``_row_groups``;
    features kept between the passes up to ``_CACHE_BYTES``).

    ``dual=True`` (the optimiser's evaluations): with the gradient and fewer
    rows than features (n < 2p, in memory), the same numbers through the
    n x n Gram matrix (:func:`_nlml_dual`), without the 2p x 2p factor.
    """
    n, D = X.shape
    p = eps.shape[0]
    m2 = 2 * p
    a = float(np.exp(theta[0])) / p
    ls = np.exp(theta[1:1 + D])
    s = float(np.exp(theta[1 + D]))
    omega = np.ascontiguousarray((eps / ls).T)            # (D, p)

    dask_data = is_dask_collection(X)
    if not dask_data:
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        if dual and gradient and n < m2:
            return _nlml_dual(X, y, omega, a, s, ls)
    if dask_data:
        from .._dask import ssgp_normal_sums
        G, b = ssgp_normal_sums(X, y, omega)
        Phi = None
    else:
        rows = _pass_rows(m2, block_size)
        workers = _feature_threads(n, m2)
        keep = gradient and n * m2 * 8 <= _CACHE_BYTES
        # Data-parallel passes: each of ``workers`` threads makes its own
        # blocks' features and runs BLAS on them on one thread, so the
        # threads meet once per pass, not at every BLAS call.  With another
        # process on one of two cores, numpy's two-thread syrk over
        # 2·10⁵ x 512 features took 6.2 s, two threads of one-thread syrks
        # on half the blocks each 1.9 s (asv_bench/ssgp_scale.py).
        with _pass_limit(workers):
            G, b, Phi = _normal_sums(X, y, omega, rows, workers, keep)
    A = a * G
    A.flat[::m2 + 1] += s
    R, info = lapack.dpotrf(A, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"A = (σ_f²/p)ΦᵀΦ + σ_n²I is not positive definite "
                                    f"(dpotrf info={info})")
    c = la.solve_triangular(R, b, trans="T", check_finite=False)   # R⁻ᵀ b
    bab = float(c @ c)                                             # bᵀA⁻¹b
    quad = (yy - a * bab) / s
    out = _Evaluation()
    out.nlml = (0.5 * quad + float(np.sum(np.log(np.diag(R))))
                + (0.5 * n - p) * float(np.log(s)) + 0.5 * n * _LOG_2PI)
    out.alpha = la.solve_triangular(R, c, check_finite=False)     # A⁻¹ b
    out.R, out.a, out.s, out.omega = R, a, s, omega
    out.grad_theta = out.grad_eps = None
    if not gradient:
        return out

    alpha = out.alpha
    Ainv, info = lapack.dpotri(R, lower=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"inverse of the Cholesky factor failed (dpotri info={info})")
    Ainv = np.triu(Ainv)
    Ainv += np.triu(Ainv, 1).T
    tr = float(np.trace(Ainv))
    aa = float(alpha @ alpha)
    grad = np.empty(D + 2)
    grad[0] = -0.5 * a * aa + 0.5 * (m2 - s * tr)
    grad[1 + D] = -0.5 * quad + 0.5 * a * aa + 0.5 * s * tr + 0.5 * n - p

    M = a * Ainv
    M += (a * a / s) * np.outer(alpha, alpha)
    alpha_as = (a / s) * alpha
    if dask_data:
        from .._dask import ssgp_gradient_sums
        W = ssgp_gradient_sums(X, y, omega, M, alpha_as)
    else:
        with _pass_limit(workers):
            W = _gradient_sums(X, y, omega, M, alpha_as, rows, workers, Phi)
    grad[1:1 + D] = -np.sum(omega * W, axis=1)
    out.grad_theta = grad
    out.grad_eps = (W / ls[:, None]).T
    return out


def _check_theta(theta, n_features: int, name: str = "theta") -> np.ndarray:
    theta = np.asarray(theta)
    if theta.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {theta.dtype}")
    theta = theta.astype(np.float64)
    if theta.shape != (n_features + 2,):
        raise ValueError(f"{name} must have shape ({n_features + 2},) = (log σ_f², log ℓ_1..ℓ_D, "
                         f"log σ_n²) for D = {n_features}, got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"{name} must be finite (logarithms of positive parameters), "
                         f"got {theta!r}")
    return theta


def _check_spectral_points(eps, n_features: int, name: str = "spectral_points") -> np.ndarray:
    eps = np.asarray(eps)
    if eps.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {eps.dtype}")
    eps = np.ascontiguousarray(eps, dtype=np.float64)
    if eps.ndim != 2 or eps.shape[0] < 1 or eps.shape[1] != n_features:
        raise ValueError(f"{name} must have shape (p, {n_features}) with p >= 1, "
                         f"got shape {eps.shape}")
    if not np.all(np.isfinite(eps)):
        raise ValueError(f"{name} must be finite")
    return eps


def _check_block_size(block_size) -> int | None:
    return None if block_size is None else check_int(block_size, "block_size")


def sparse_spectrum_nlml(X, y, spectral_points, theta, *, eval_gradient: bool = False,
                         block_size: int | None = None):
    """Exact negative log marginal likelihood of a sparse-spectrum GP.

    Hoang et al. (2020), Eq. (3), with the Gram matrix K' = (σ_f²/p) ΦΦᵀ of
    the p spectral points ω_j = ε_j / ℓ (Eq. 4), computed in O(n p²) time
    and O(p² + block) memory through the Cholesky factor of
    A = (σ_f²/p) ΦᵀΦ + σ_n² I (see the module docstring).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Targets, used as given (zero prior mean: centre them first if needed).
    spectral_points : array-like of shape (p, n_features)
        The standardised spectral points ε_j (ε_j ~ N(0, I) a priori).
    theta : array-like of shape (n_features + 2,)
        (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²): the layout of
        scikit-learn's ``ConstantKernel * RBF(ℓ) + WhiteKernel`` ``theta``.
    eval_gradient : bool, default=False
        Also return the analytic gradient.
    block_size : int, optional
        Rows per block of the two passes over the rows (ΦᵀΦ and Φᵀy, then
        the gradient's ΦM); default blocks of about 16 MiB of features.
        The blocks are shared by up to as many threads as the BLAS may use
        (one BLAS thread each) when n·(2p)² exceeds
        :data:`SERIAL_FLOPS`; the result does not depend on the thread
        count.  The features of all rows are kept between the passes when
        they take at most 64 MiB (n·2p·8 bytes).

    Returns
    -------
    nlml : float
    grad_theta : ndarray of shape (n_features + 2,)
        ∂NLML/∂theta; only with ``eval_gradient``.
    grad_spectral_points : ndarray of shape (p, n_features)
        ∂NLML/∂ε; only with ``eval_gradient``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If A is not numerically positive definite (σ_n² far below the
        scale of (σ_f²/p)ΦᵀΦ).
    """
    X, y = check_regression_data(X, y)
    eps = _check_spectral_points(spectral_points, X.shape[1])
    theta = _check_theta(theta, X.shape[1])
    gradient = check_bool(eval_gradient, "eval_gradient")
    block_size = _check_block_size(block_size)
    with _blas_limit(X.shape[0], 2 * eps.shape[0]):
        ev = _nlml(X, y, float(y @ y), eps, theta, gradient=gradient, block_size=block_size)
    if gradient:
        return ev.nlml, ev.grad_theta, ev.grad_eps
    return ev.nlml


def check_regression_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) as C-contiguous float64: X a non-empty 2-d array of finite real
    numbers, y a finite real vector (or column) of its length; ValueError
    naming the argument otherwise."""
    X = _check_inputs(X)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.dtype.kind not in "iuf" or y.shape != (X.shape[0],):
        raise ValueError(f"y must be a 1-d array of real numbers of length {X.shape[0]} "
                         f"(the rows of X), got shape {y.shape} and dtype {y.dtype}")
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not all_finite(y):
        raise ValueError("y must be finite (no NaN or infinity)")
    return X, y


def _normalize(y: np.ndarray, normalize_y: bool) -> tuple[np.ndarray, float, float]:
    """scikit-learn's ``normalize_y``: subtract the mean, divide by the std (1 if 0)."""
    if not normalize_y:
        return y, 0.0, 1.0
    mean = float(np.mean(y))
    std = float(np.std(y))
    if std == 0.0:
        std = 1.0
    return (y - mean) / std, mean, std


def _check_inputs(X) -> np.ndarray:
    """X as C-contiguous float64: a non-empty 2-d array of finite real
    numbers; ValueError naming X otherwise."""
    X = np.asarray(X)
    if X.dtype.kind not in "iuf" or X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-d array of real numbers, got shape "
                         f"{X.shape} and dtype {X.dtype}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not all_finite(X):
        raise ValueError("X must be finite (no NaN or infinity)")
    return X


def length_scale_bounds(X) -> np.ndarray:
    """Bounds of the length scales, relative to each input's spread: ℓ_d
    within [10⁻⁵·r_d, 10⁵·s_d] (:data:`HYPERPARAMETER_BOUNDS`), s_d the
    standard deviation of input d and r_d its robust scale.

    r_d is the features' scale of ``feature_scale='std'``
    (:func:`mondrian._scale.feature_std`): the deviation, or IQR/1.349 where
    the deviation is more than 30 times that (a gross outlier or an extreme
    tail), at least half the gap of a two-valued input; both are 1 for a
    constant input.  On standardised inputs without such tails these are
    scikit-learn's default ``RBF`` bounds [1e-5, 1e5]; on inputs in other
    units they move with the units, so that a fit on X·diag(c) is the fit
    on X with every ℓ_d times c_d.  Absolute bounds cannot fit inputs in
    very large or very small units: on the raw CPU data, whose inputs span
    1 to 10⁶, they held nine of 21 length scales at 10⁵ and tripled the
    test error (8.06 % against 2.56 % at seed 0).  The lower bound follows
    the robust scale, so that one far value (10⁹ among 1500 standard normal
    ones: a deviation of 3·10⁷) cannot lift it above the scale on which the
    other values matter; the upper bound the plain deviation, so that an
    irrelevant input's ℓ_d can go beyond its whole spread, heavy tail
    included (a robust upper bound, a hundredth of the deviation of the
    standardised CPU data's input 18, held its ℓ at 10³).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The training inputs (numpy or dask).

    Returns
    -------
    ndarray of shape (n_features, 2)
        (lower, upper) of each ℓ_d: the ``length_scale_bounds`` of
        scikit-learn's ``RBF`` (:func:`mondrian.gp.exact_gp_kernel`).
    """
    if is_dask_collection(X):
        from .._dask import dask_feature_deviations
        robust, std = dask_feature_deviations(X)
    else:
        robust, std = feature_deviations(_check_inputs(X))
    std[~(std > 0)] = 1.0
    lo, hi = HYPERPARAMETER_BOUNDS
    return np.column_stack([lo * robust, hi * std])


def _log_box(ls_bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of θ = (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²): the
    log of :data:`HYPERPARAMETER_BOUNDS` for the variances, of
    ``ls_bounds`` (:func:`length_scale_bounds`) for the length scales."""
    lo_v, hi_v = np.log(HYPERPARAMETER_BOUNDS)
    log_ls = np.log(ls_bounds)
    return (np.concatenate([[lo_v], log_ls[:, 0], [lo_v]]),
            np.concatenate([[hi_v], log_ls[:, 1], [hi_v]]))


def initial_theta(X, y) -> np.ndarray:
    """The usual SSGP starting point (Lázaro-Gredilla et al. 2010), as ``theta``.

    ℓ_d = half the range of input dimension d, σ_f² = var y and
    σ_n² = var y / 4, each projected onto its bounds
    (:data:`HYPERPARAMETER_BOUNDS`, :func:`length_scale_bounds`; as L-BFGS-B
    does with a starting point outside its box).  A
    dimension with zero range starts at ℓ_d = 1: the likelihood does not
    depend on ℓ_d then.  Constant y (var y = 0) starts at σ_f² = 1,
    σ_n² = 1/4.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        The targets as the model sees them (after any normalisation).

    Returns
    -------
    ndarray of shape (n_features + 2,)
        (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²).
    """
    X = _check_inputs(X)
    return _start_theta(_input_range(X), _variance(y), length_scale_bounds(X))


def _start_theta(input_range: np.ndarray, var: float, ls_bounds: np.ndarray) -> np.ndarray:
    """:func:`initial_theta` from the inputs' ranges, var y and the length
    scales' bounds."""
    half_range = 0.5 * np.asarray(input_range, dtype=np.float64)
    ls = np.where(half_range > 0, half_range, 1.0)
    if not var > 0:
        var = 1.0
    lo, hi = _log_box(ls_bounds)
    theta = np.concatenate([[np.log(var)], np.log(ls), [np.log(var / 4.0)]])
    return np.clip(theta, lo, hi)


def _variance(y) -> float:
    """var y (numpy or dask y)."""
    if is_dask_collection(y):
        return float(y.var().compute())
    return float(np.var(np.asarray(y, dtype=np.float64)))


def _input_range(X) -> np.ndarray:
    """max - min of each input (numpy or dask X)."""
    if is_dask_collection(X):
        import dask
        lo_x, hi_x = dask.compute(X.min(axis=0), X.max(axis=0))
        return np.asarray(hi_x, dtype=np.float64) - np.asarray(lo_x, dtype=np.float64)
    return np.ptp(np.asarray(X, dtype=np.float64), axis=0)


def _warn_clipped_variances(var: float, signal_variance, noise_variance) -> None:
    """Warn when a starting variance (σ_f² = var y or σ_n² = var y / 4 of the
    targets as the model sees them) lies outside
    :data:`HYPERPARAMETER_BOUNDS` and starts at the bound: only without
    ``normalize_y``, for targets of deviation above 316 or below 0.006 (given
    starting values outside the bounds raise instead)."""
    lo, hi = HYPERPARAMETER_BOUNDS
    starts = [(name, value) for name, value, given in (
        ("signal_variance", var, signal_variance), ("noise_variance", var / 4.0, noise_variance))
        if given is None and var > 0 and not lo <= value <= hi]
    if starts:
        warnings.warn(
            f"SparseSpectrumGPRegressor: the starting {' and '.join(n for n, _ in starts)} "
            f"({', '.join(f'{v:.3g}' for _, v in starts)}, from var y) lie outside "
            f"HYPERPARAMETER_BOUNDS [{lo:g}, {hi:g}] and start at the bound; the bounds are "
            "those of normalised targets: use normalize_y=True (the default)",
            ConvergenceWarning, stacklevel=3)


def _warn_length_scale_bounds(log_length_scales: np.ndarray, ls_bounds: np.ndarray) -> None:
    """Warn when trained length scales are held by their lower bound.

    The bounds (:func:`length_scale_bounds`) move with each input's units,
    so they hold a length scale only where the data ask for one beyond
    them.  The lower bound keeps ℓ_d above 10⁻⁵ of the input's robust scale:
    an input whose effect varies on a finer scale than that is not fitted,
    and the user must hear it.  The upper bound, 10⁵ deviations, is where
    an irrelevant input's ℓ_d goes, and there it is harmless: the range of
    n values is at most √(2n) deviations (Σ(x - x̄)² ≥ range²/2), so across
    it the kernel changes by less than 1 - exp(-n/10¹⁰), 1e-4 at n = 10⁶;
    it is not reported.
    """
    low = np.flatnonzero(log_length_scales <= np.log(ls_bounds[:, 0]) + 1e-6)
    if low.size:
        warnings.warn(
            f"SparseSpectrumGPRegressor: the length scale of input(s) {low.tolist()} is at "
            f"its lower bound ({', '.join(f'{v:.3g}' for v in np.exp(log_length_scales[low]))}"
            f"; 1e-5 times the input's robust scale): those inputs vary on a "
            "finer scale than the bound allows", ConvergenceWarning, stacklevel=3)


# ---------------------------------------------------------------------- estimator
class SparseSpectrumGPRegressor(RegressorMixin, BaseEstimator):
    """Sparse-spectrum Gaussian-process regression (Lázaro-Gredilla et al. 2010).

    A GP with the sparse-spectrum approximation
    k'(x, x') = (σ_f²/p) Σ_j cos ω_jᵀ(x - x') of the ARD Gaussian kernel
    σ_f² exp(-½ (x - x')ᵀΘ⁻¹(x - x')) (Hoang et al. 2020, Sec. 2.2, Eq. 4),
    ω_j = Θ^{-1/2} ε_j, plus Gaussian noise σ_n².  ``fit`` minimises the
    exact negative log marginal likelihood (Eq. 3 with K = K') and its
    analytic gradient with L-BFGS-B over log σ_f², log ℓ_d, log σ_n² and,
    with ``optimize_frequencies``, the standardised spectral points ε_j.
    Each evaluation costs O(n p²) time and O(p² + block) memory.

    Initialisation (Lázaro-Gredilla et al. 2010): ℓ_d = half the range of
    input d, σ_f² = var y, σ_n² = var y / 4 (:func:`initial_theta`).  Then
    ``n_frequency_draws`` draws of ε ~ N(0, I) race: each is trained by
    ``race_iterations`` L-BFGS-B iterations on :data:`RACE_ROWS` random rows
    (in parallel), and the one with the lowest NLML continues on all rows
    from where its race ended.  ``n_restarts`` further runs race fresh draws
    from the same start; the run with the lowest final NLML is kept.
    σ_f² and σ_n² stay within :data:`HYPERPARAMETER_BOUNDS`, each ℓ_d within
    [10⁻⁵, 10⁵] times the spread of input d (:func:`length_scale_bounds`),
    so inputs in any units are fitted alike: X·diag(c) gives the same
    model with every ℓ_d times c_d (on standardised inputs the bounds are
    scikit-learn's).

    Parameters
    ----------
    n_components : int, default=100
        Number p of spectral points; the model has 2p features (cos, sin).
    length_scale : float or array-like of shape (n_features,), optional
        Starting ℓ (> 0, shared or per input); default half the range of
        each input.
    signal_variance : float, optional
        Starting σ_f² > 0; default var y (of the normalised y: 1).
    noise_variance : float, optional
        Starting σ_n² > 0; default var y / 4.  Given starting values must
        lie within their bounds: :data:`HYPERPARAMETER_BOUNDS` for σ_f² and
        σ_n², :func:`length_scale_bounds` for ℓ_d
        (:func:`length_scale_bounds`).
    optimize_frequencies : bool, default=False
        Also train the spectral points ε (the SSGP of Lázaro-Gredilla et
        al.).  False (default) keeps the drawn ε and trains Θ, so that
        ω = Θ^{-1/2}ε remain draws from the spectral density of the
        trained kernel: the model Hoang et al. (2020) analyse.  Training ε
        adds p·D parameters and overfits: on Abalone (p = 16) the NLML
        kept falling over 1000 L-BFGS-B iterations while the test RMSE rose
        from 1.95 (iteration 25) to 2.03; with ε fixed the fit stops after
        about 100 iterations at a test RMSE of 1.93-1.97.
    n_restarts : int or 'auto', default='auto'
        Additional optimisation runs, each from fresh frequency draws; the
        run with the lowest final NLML is kept.  'auto': as many (at most
        :data:`AUTO_MAX_RESTARTS`) as fit in :data:`RESTART_BUDGET` / (n p²)
        (:func:`auto_restarts`): 8 at p = 16 and 2 at p = 32 on Abalone's
        2927 rows, none at p = 64 nor at the default p = 100 above 600
        rows, and none with ``optimize_frequencies`` (trained spectral
        points overfit as the NLML falls, so the lowest-NLML run is not the
        one to keep); the number used is ``n_restarts_``.
    n_frequency_draws : int, default=10
        Draws of ε per run, of which one is optimised: the winner of the
        race (``race_iterations``), or with ``race_iterations=0`` the one
        with the lowest NLML at the initial hyperparameters (on at most
        :data:`DRAW_ROWS` random rows).
    race_iterations : int, default=10
        L-BFGS-B iterations each draw gets, on at most :data:`RACE_ROWS`
        random rows, before the one with the lowest NLML is optimised on all
        rows.  The NLML after a few iterations predicts the final one
        (Spearman 0.56-0.86 after 5-20 on Abalone); at the start, where the
        length scales are far from their optimum, it does not (-0.05 to
        0.33).  On Abalone (seeds 0-29) the race lowered the mean test RMSE
        from 1.965, 1.955, 1.949 to 1.958, 1.948, 1.946 at p = 16, 32, 64,
        and the fits over 1.96 from 21, 7, 4 to 14, 3, 2 of 30, for 45-80 %
        more time.  0: rank the draws at the start instead.  At most
        ``max_iter`` (so not used with ``max_iter=0``).
    normalize_y : bool, default=True
        Subtract the training mean of y and divide by its standard deviation
        before fitting (scikit-learn's ``GaussianProcessRegressor``
        semantics: the hyperparameters and the log marginal likelihood refer
        to the normalised targets; predictions are mapped back).  False
        fits y as given under a zero prior mean, with σ_f² and σ_n² within
        :data:`HYPERPARAMETER_BOUNDS` in y's units (``fit`` warns when
        var y or var y / 4 starts outside them).
    tol : float, default=1e-6
        L-BFGS-B stops a run when an iteration lowers the NLML by less than
        ``tol`` relative to its value (scipy's ``ftol``).  scipy's own
        default, 2.2e-9, is far below the NLML's sampling noise: on Abalone
        (p = 16, 32, 64; seeds 0-2; two restarts) 1e-6 gave the same test
        RMSE to three decimals in half as many iterations.
    max_iter : int, default=1000
        L-BFGS-B iterations per run.  A run stopped by this limit is
        reported with a ``ConvergenceWarning`` if it is the one kept.
        0: no training; the model at the starting hyperparameters with the
        best of the ``n_frequency_draws`` draws (over all runs).  With a
        subsample, also the most Newton steps of the refinement.
    subsample : 'auto', int or None, default='auto'
        Train on a random subsample first, then on ever larger ones.  An int
        m < n: every run (draws, restarts, L-BFGS-B) works on m random rows
        (drawn from ``random_state``); the best run's θ is then refined on
        nested random subsets of 4m, 16m, … rows (up to n/2) and finally on
        all n rows, each stage by quasi-Newton steps from the previous
        stage's optimum and Hessian (the first: the subsample's, by finite
        differences of the analytic gradient, D + 2 evaluations on m rows),
        scaled by the ratio of the row counts and corrected by BFGS
        updates, with a backtracking (Armijo) line search and the bounds
        handled by fixing the coordinates a bound stops.  A stage ends when
        the predicted decrease of its next step (the Newton decrement) is
        below ``tol`` relative to its NLML.  The NLML is a sum over rows, so
        a stage's Hessian is the next one's up to sampling error and the
        change of the optimum with n; the last stage, over all rows, then
        takes a few passes where L-BFGS-B from the subsample's optimum (with
        no curvature at its start) takes tens.  'auto':
        m = :data:`SUBSAMPLE_ROWS` when n exceeds :data:`SUBSAMPLE_FACTOR`
        times that and the spectral points are fixed, else no subsample.
        None: no subsample.  Not used with ``optimize_frequencies`` (p·D
        more parameters: a Hessian would cost p·D passes).
    block_size : int, optional
        Rows per block of the passes of each NLML evaluation (ΦᵀΦ and Φᵀy,
        then the gradient's ΦM; default blocks of about 16 MiB of
        features, shared by the threads as in :func:`sparse_spectrum_nlml`)
        and of ``predict`` (default all rows if their features take at
        most 64 MiB, n·2p·8 bytes, else 16 MiB blocks).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the spectral points; an int or SeedSequence makes ``fit``
        reproducible.
    callback : callable, optional
        Called after every L-BFGS-B iteration of the runs on all rows (not
        of the draws' races) as
        ``callback(estimator, restart, iteration)``, with the estimator's
        fitted attributes set to the current iterate (so ``predict`` works
        inside it, e.g. to record a test error along the optimisation).
        Costs one extra forward pass per iteration.
    verbose : int, default=0
        0: silent; 1 or more: a progress report over the runs
        (``n_restarts + 1`` steps) on stderr (a tqdm bar if tqdm is
        installed, else plain lines).

    Attributes
    ----------
    theta_ : ndarray of shape (n_features + 2,)
        Fitted (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²): the layout of
        ``GaussianProcessRegressor(ConstantKernel * RBF + WhiteKernel)
        .kernel_.theta``.
    signal_variance_ : float
        σ_f².
    length_scale_ : ndarray of shape (n_features,)
        ℓ_d.
    length_scale_bounds_ : ndarray of shape (n_features, 2)
        The bounds of each ℓ_d during training
        (:func:`length_scale_bounds`: :data:`HYPERPARAMETER_BOUNDS` times
        the input's spread).
    noise_variance_ : float
        σ_n².
    spectral_points_ : ndarray of shape (n_components, n_features)
        The standardised spectral points ε_j.
    frequencies_ : ndarray of shape (n_features, n_components)
        ω_j = ε_j / ℓ as columns (the layout of
        :class:`~mondrian.RandomFourierFeatures`).
    log_marginal_likelihood_value_ : float
        Log marginal likelihood (-NLML) of the (normalised) training targets
        at the fitted parameters.
    n_restarts_ : int
        The further runs made (``n_restarts`` resolved).
    nlml_restarts_ : ndarray of shape (n_runs,)
        Final NLML of every run (``n_restarts_`` + 1 of them); the first
        lowest is the run kept.
    n_iter_ : int
        L-BFGS-B iterations of the run kept (on all its rows, after its
        race), plus the Newton steps of every later stage when a subsample
        was used.
    subsample_rows_ : int
        Rows the runs were trained on (n without a subsample).
    n_refine_steps_ : int
        Newton steps on all rows (0 without a subsample).
    subsample_levels_ : list of int
        Rows of each training stage (``[n]`` without a subsample).
    weights_mean_ : ndarray of shape (2 * n_components,)
        Posterior mean of the feature weights, (σ_f²/p) A⁻¹Φᵀy.
    y_train_mean_, y_train_std_ : float
        The normalisation of y (0 and 1 without ``normalize_y``).
    X_train_ : ndarray of shape (n_samples, n_features)
        Training inputs (for :meth:`log_marginal_likelihood`).
    y_train_ : ndarray of shape (n_samples,)
        Training targets after normalisation.
    n_features_in_ : int

    See Also
    --------
    mondrian.gp.exact_gp_regressor : the exact GP set up identically.
    mondrian.RandomFourierFeatures : the same features with fixed frequencies.

    Notes
    -----
    ``predict(..., return_std=True)`` returns the standard deviation of a
    *noisy* observation y*, √(σ_n² + σ_n²(σ_f²/p) φ*ᵀA⁻¹φ*), as scikit-learn's
    ``GaussianProcessRegressor`` does with a ``WhiteKernel`` in its kernel;
    ``include_noise=False`` gives that of the latent f*.

    References
    ----------
    M. Lázaro-Gredilla, J. Quiñonero-Candela, C. E. Rasmussen and
    A. R. Figueiras-Vidal, "Sparse spectrum Gaussian process regression",
    JMLR 11, 2010.  M. Hoang, N. Hoang, H. Pham and D. Woodruff, "Revisiting
    the sample complexity of sparse spectrum approximation of Gaussian
    processes", NeurIPS 2020, Sec. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.gp import SparseSpectrumGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (200, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(200)
    >>> gp = SparseSpectrumGPRegressor(n_components=10, random_state=0).fit(X, y)
    >>> mean, std = gp.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    def __init__(self, n_components: int = 100, *, length_scale=None,
                 signal_variance: float | None = None, noise_variance: float | None = None,
                 optimize_frequencies: bool = False, n_restarts: int | str = "auto",
                 n_frequency_draws: int = 10, race_iterations: int = 10,
                 normalize_y: bool = True, tol: float = 1e-6,
                 max_iter: int = 1000, subsample="auto", block_size: int | None = None,
                 random_state=None, callback=None, verbose: int = 0):
        self.n_components = n_components
        self.length_scale = length_scale
        self.signal_variance = signal_variance
        self.noise_variance = noise_variance
        self.optimize_frequencies = optimize_frequencies
        self.n_restarts = n_restarts
        self.n_frequency_draws = n_frequency_draws
        self.race_iterations = race_iterations
        self.normalize_y = normalize_y
        self.tol = tol
        self.max_iter = max_iter
        self.subsample = subsample
        self.block_size = block_size
        self.random_state = random_state
        self.callback = callback
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def fit(self, X, y) -> "SparseSpectrumGPRegressor":
        """Train the hyperparameters (and spectral points) by L-BFGS-B on the NLML.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        p = check_int(self.n_components, "n_components")
        optimize_eps = check_bool(self.optimize_frequencies, "optimize_frequencies")
        if isinstance(self.n_restarts, str):
            if self.n_restarts != "auto":
                raise ValueError(f"n_restarts must be 'auto' or an integer >= 0, got "
                                 f"{self.n_restarts!r}")
            n_restarts = None  # resolved once the rows are known
        else:
            n_restarts = check_int(self.n_restarts, "n_restarts", minimum=0)
        n_draws = check_int(self.n_frequency_draws, "n_frequency_draws")
        race_iters = check_int(self.race_iterations, "race_iterations", minimum=0)
        normalize_y = check_bool(self.normalize_y, "normalize_y")
        tol = check_positive_float(self.tol, "tol")
        max_iter = check_int(self.max_iter, "max_iter", minimum=0)
        block_size = _check_block_size(self.block_size)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable or None, got "
                            f"{type(self.callback).__name__}")
        dask_data = is_dask_collection(X) or is_dask_collection(y)
        if dask_data:
            from .._dask import ssgp_data
            X, y = ssgp_data(X, y)
            self.n_features_in_ = X.shape[1]
        else:
            X, y = check_array_input(self, X, y=y, reset=True, y_numeric=True)
            y = np.ascontiguousarray(column_or_1d(y, warn=True), dtype=np.float64)
        # yᵀy, the quadratic forms and the normalisation square the targets.
        check_target_scale(y, what="a Gaussian process likelihood")
        verbose = check_verbose(self.verbose)
        rng = check_random_generator(self.random_state)

        yn, self.y_train_mean_, self.y_train_std_ = _normalize(y, normalize_y)
        self.X_train_, self.y_train_ = X, yn
        n, D = X.shape
        input_range = _input_range(X)
        self.length_scale_bounds_ = ls_bounds = length_scale_bounds(X)
        theta0 = self._initial_theta(input_range, yn, ls_bounds)
        _warn_clipped_variances(_variance(yn), self.signal_variance, self.noise_variance)
        lo, hi = _log_box(ls_bounds)
        bounds = list(zip(lo, hi)) + ([(None, None)] * (p * D) if optimize_eps else [])
        m = self._subsample_rows(n, optimize_eps)
        if n_restarts is None:
            # Trained spectral points overfit as the NLML falls (see
            # optimize_frequencies): the lowest-NLML run is not the one to
            # keep, and each run takes up to max_iter iterations.
            n_restarts = 0 if optimize_eps else auto_restarts(n, p)
        self.n_restarts_ = n_restarts
        streams = rng.spawn(n_restarts + 1)
        # The runs train on Xr, yr: all rows, or m rows drawn from a stream
        # spawned after the runs' own (so that without a subsample every
        # result is what it was before subsampling existed).
        Xr, yr = X, yn
        levels = _subsample_levels(m, n, dask_data)
        if m < n:
            # Nested random subsets: the first levels[k] rows of one draw.
            picked = rng.spawn(1)[0].choice(n, levels[-2], replace=False)

            def level_rows(size):
                rows = np.sort(picked[:size])
                if dask_data:
                    from .._dask import gather_rows
                    return gather_rows(X, yn, rows)
                return X[rows], yn[rows]

            Xr, yr = level_rows(m)
        nr = Xr.shape[0]
        yyr = float(yr @ yr)
        runs_on_dask = dask_data and m == n

        racing = race_iters > 0 and max_iter > 0
        run_options = {"maxiter": max_iter, "ftol": tol}
        if not optimize_eps:
            run_options["maxcor"] = LBFGS_MEMORY

        def draw_rows(stream: np.random.Generator, limit: int):
            """At most ``limit`` random rows of the runs' data, in memory."""
            if nr > limit:
                rows = np.sort(stream.choice(nr, limit, replace=False))
            elif runs_on_dask:
                rows = np.arange(nr)
            else:
                return Xr, yr
            if runs_on_dask:
                from .._dask import gather_rows
                return gather_rows(Xr, yr, rows)
            return Xr[rows], yr[rows]

        def race(stream: np.random.Generator):
            """The draw whose ``race_iters`` L-BFGS-B iterations on at most
            RACE_ROWS rows reach the lowest NLML (the first of equal ones),
            and the point they reached (the run's start).  The NLML after a
            few iterations predicts the final one (Spearman 0.56-0.86 after
            5-20 on Abalone); at the starting hyperparameters it does not."""
            Xd, yd = draw_rows(stream, RACE_ROWS)
            yyd = float(yd @ yd)
            draws = [stream.standard_normal((p, D)) for _ in range(n_draws)]

            def trained(eps):
                short = _Run(Xd, yd, yyd, eps, optimize_eps, block_size)
                res = minimize(short.fun, short.pack(theta0, eps), jac=True, method="L-BFGS-B",
                               bounds=bounds,
                               options={"maxiter": min(race_iters, max_iter), "ftol": tol})
                return float(res.fun), res.x

            if race_threads > 1:
                with blas_threads(1), concurrent.futures.ThreadPoolExecutor(race_threads) as pool:
                    results = list(pool.map(trained, draws))
            else:
                results = [trained(eps) for eps in draws]
            k = min(range(n_draws), key=lambda i: (results[i][0], i))
            return draws[k], results[k][1]

        def one_run(restart: int, stream: np.random.Generator):
            if racing:
                eps0, z0 = race(stream)
                run = _Run(Xr, yr, yyr, eps0, optimize_eps, block_size)
            else:
                # The draws are ranked at the start on at most DRAW_ROWS
                # rows: a start, not a fit, need not cost n_draws passes
                # over all the data.
                Xd, yd = draw_rows(stream, DRAW_ROWS)
                yyd = float(yd @ yd)
                eps0, best0 = None, np.inf
                for _ in range(n_draws):
                    eps = stream.standard_normal((p, D))
                    value = _safe_nlml(Xd, yd, yyd, eps, theta0, block_size)
                    if eps0 is None or value < best0:
                        eps0, best0 = eps, value
                run = _Run(Xr, yr, yyr, eps0, optimize_eps, block_size)
                z0 = run.pack(theta0, eps0)
            cb = None
            if self.callback is not None and m == n:
                def cb(xk):
                    # scipy passes the iterate (an OptimizeResult only to a
                    # callback whose one parameter is intermediate_result)
                    run.iteration += 1
                    theta, eps = run.unpack(getattr(xk, "x", xk))
                    ev = run.evaluate_at(theta, eps)
                    if np.isfinite(ev.nlml):
                        self._set_state(ev, theta, eps)
                        self.callback(self, restart, run.iteration)
            if max_iter > 0:
                res = minimize(run.fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                               callback=cb, options=run_options)
                z, nit, status = res.x, int(res.nit), int(res.status)
            else:
                z, nit, status = z0, 0, 0
            theta, eps = run.unpack(z)
            return run.evaluate_at(theta, eps), theta, eps, nit, status

        serial = nr * (2 * p) ** 2 <= SERIAL_FLOPS
        # Small problems run on one BLAS thread each, so independent runs go
        # to the cores in parallel (not with a callback, which may touch the
        # estimator); every run has its own stream, so the result does not
        # depend on the order in which they finish.
        workers = min(len(streams), available_cores()) if (
            serial and self.callback is None and not runs_on_dask) else 1
        # The cores the runs leave free race a run's draws (each on one
        # BLAS thread: a race is small, RACE_ROWS x 2p features).
        race_threads = max(1, available_cores() // workers) if racing else 1
        _check_run_memory(p, workers)
        with _blas_limit(nr, 2 * p), progress(n_restarts + 1, f"{type(self).__name__} runs",
                                              verbose) as bar:
            if workers > 1:
                with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                    futures = [pool.submit(one_run, r, st) for r, st in enumerate(streams)]
                    for future in concurrent.futures.as_completed(futures):
                        future.result()
                        bar.update()
                    results = [future.result() for future in futures]
            else:
                results = []
                for r, st in enumerate(streams):
                    results.append(one_run(r, st))
                    bar.update()
        finals = [result[0].nlml for result in results]
        # The first run with the lowest NLML, as a sequential loop keeps it.
        best = None
        for index, result in enumerate(results):
            if best is None or result[0].nlml < best[0].nlml:
                best, best_index = result, index
        ev, theta, eps, nit, status = best
        if not np.isfinite(ev.nlml):
            raise np.linalg.LinAlgError("SparseSpectrumGPRegressor: the NLML is not finite at "
                                        "the end of every run (A not positive definite)")
        self.subsample_rows_ = nr
        self.n_refine_steps_ = 0
        self.subsample_levels_ = levels
        if m < n and max_iter > 0:
            with _blas_limit(nr, 2 * p):
                hessian = _hessian(Xr, yr, yyr, eps, theta, block_size)
            for previous, size in zip(levels[:-1], levels[1:]):
                Xl, yl = (X, yn) if size == n else level_rows(size)
                callback = None
                if self.callback is not None and size == n:
                    def callback(step_ev, step_theta, step, base=nit):
                        self._set_state(step_ev, step_theta, eps)
                        self.callback(self, best_index, base + step)
                with _blas_limit(size, 2 * p):
                    ev, theta, steps, refine_status, hessian = _newton_refine(
                        Xl, yl, float(yl @ yl), eps, theta, hessian * (size / previous),
                        (lo, hi), tol, max_iter, block_size, callback)
                nit += steps
                status = max(status, refine_status)
            self.n_refine_steps_ = steps
            # The kept run's final NLML is now that of all rows.
            finals[best_index] = ev.nlml
        self._set_state(ev, theta, eps)
        self.nlml_restarts_ = np.asarray(finals)
        self.n_iter_ = nit
        if status == 1:
            warnings.warn(f"SparseSpectrumGPRegressor: L-BFGS-B stopped at max_iter={max_iter} "
                          "iterations; increase max_iter", ConvergenceWarning, stacklevel=2)
        _warn_length_scale_bounds(theta[1:1 + D], ls_bounds)
        return self

    def _subsample_rows(self, n: int, optimize_eps: bool) -> int:
        """Rows the runs train on (``subsample``); n means all of them."""
        sub = self.subsample
        if sub is None:
            return n
        if isinstance(sub, str):
            if sub != "auto":
                raise ValueError(f"subsample must be 'auto', a positive int or None, got {sub!r}")
            if optimize_eps or n <= SUBSAMPLE_FACTOR * SUBSAMPLE_ROWS:
                return n
            return SUBSAMPLE_ROWS
        m = check_int(sub, "subsample")
        if optimize_eps:
            raise ValueError("subsample: a subsample is not used with optimize_frequencies=True "
                             "(set subsample=None)")
        return min(m, n)

    def _initial_theta(self, input_range: np.ndarray, yn, ls_bounds: np.ndarray) -> np.ndarray:
        """:func:`initial_theta` (from the inputs' ranges), with the user's
        starting values where given."""
        theta = _start_theta(input_range, _variance(yn), ls_bounds)
        D = input_range.shape[0]
        given = []
        if self.signal_variance is not None:
            theta[0] = np.log(check_positive_float(self.signal_variance, "signal_variance"))
            given.append(("signal_variance", 0, 1))
        if self.length_scale is not None:
            theta[1:1 + D] = np.log(check_length_scales(self.length_scale, D, "length_scale"))
            given.append(("length_scale", 1, 1 + D))
        if self.noise_variance is not None:
            theta[1 + D] = np.log(check_positive_float(self.noise_variance, "noise_variance"))
            given.append(("noise_variance", 1 + D, 2 + D))
        lo, hi = _log_box(ls_bounds)
        for name, i, j in given:
            value = np.exp(theta[i:j])
            out = (theta[i:j] < lo[i:j]) | (theta[i:j] > hi[i:j])
            if not np.any(out):
                continue
            if name == "length_scale":
                at = np.flatnonzero(out)
                raise ValueError(
                    f"length_scale must lie within its bounds (relative to each input's spread, "
                    f"length_scale_bounds): input(s) {at.tolist()} have "
                    f"{', '.join(f'{v:g}' for v in value[at])} outside "
                    f"{', '.join(f'[{a:.3g}, {b:.3g}]' for a, b in ls_bounds[at])}")
            a, b = HYPERPARAMETER_BOUNDS
            raise ValueError(f"{name} must lie within HYPERPARAMETER_BOUNDS = [{a:g}, {b:g}] "
                             f"(in units of the normalised y where it applies), "
                             f"got {float(value[0])!r}")
        return theta

    def _set_state(self, ev: _Evaluation, theta: np.ndarray, eps: np.ndarray) -> None:
        D = eps.shape[1]
        self.theta_ = theta.copy()
        self.signal_variance_ = float(np.exp(theta[0]))
        self.length_scale_ = np.exp(theta[1:1 + D])
        self.noise_variance_ = float(np.exp(theta[1 + D]))
        self.spectral_points_ = eps.copy()
        self.frequencies_ = ev.omega
        self.log_marginal_likelihood_value_ = -ev.nlml
        self.weights_mean_ = ev.a * ev.alpha
        self._R = ev.R
        self._a = ev.a

    # -------------------------------------------------------------- predict
    def predict(self, X, return_std: bool = False, return_cov: bool = False, *,
                include_noise: bool = True):
        """Predictive mean, and optionally standard deviation or covariance.

        Hoang et al. (2020), Eq. (2) with K = K': mean (σ_f²/p)φ*ᵀA⁻¹Φᵀy,
        latent covariance σ_n²(σ_f²/p) Φ*A⁻¹Φ*ᵀ, plus σ_n² I for noisy
        observations (mapped back through the normalisation of y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the predictive standard deviation at each point.
        return_cov : bool, default=False
            Also return the joint predictive covariance (n_samples²
            memory).  At most one of ``return_std`` and ``return_cov``.
        include_noise : bool, default=True
            Predict noisy observations y* = f* + noise (variance + σ_n²,
            as scikit-learn's GP with a ``WhiteKernel``); False: the latent
            function f*.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std``.
        cov : ndarray of shape (n_samples, n_samples)
            Only with ``return_cov``.
        """
        return_std = check_bool(return_std, "return_std")
        return_cov = check_bool(return_cov, "return_cov")
        include_noise = check_bool(include_noise, "include_noise")
        if return_std and return_cov:
            raise ValueError("return_std and return_cov: at most one of them can be True")
        check_is_fitted(self, "theta_")
        if is_dask_collection(X):
            if return_cov:
                raise ValueError("return_cov=True with a dask X: the n x n covariance "
                                 "does not fit a block-wise computation; use return_std")
            from .._dask import ssgp_predict_blocks
            return ssgp_predict_blocks(self, X, return_std, include_noise)
        X = check_array_input(self, X, reset=False)
        n = X.shape[0]
        m2 = 2 * self.frequencies_.shape[1]
        rows = _block_rows(n, m2, _check_block_size(self.block_size))
        s, a = self.noise_variance_, self._a
        scale2 = self.y_train_std_ ** 2
        mean = np.empty(n)
        var = np.empty(n) if return_std else None
        V = np.empty((m2, n)) if return_cov else None
        threads = _feature_threads(n, m2)
        with _blas_limit(n, m2):
            for start in range(0, n, rows):
                Phi = _features(X[start:start + rows], self.frequencies_, threads)
                mean[start:start + rows] = Phi @ self.weights_mean_
                if return_std or return_cov:
                    Vb = la.solve_triangular(self._R, Phi.T, trans="T", check_finite=False)
                    if return_std:
                        var[start:start + rows] = s * a * np.einsum("ij,ij->j", Vb, Vb)
                    else:
                        V[:, start:start + rows] = Vb
        mean = mean * self.y_train_std_ + self.y_train_mean_
        if return_std:
            if include_noise:
                var += s
            return mean, np.sqrt(var * scale2)
        if return_cov:
            cov = (s * a) * (V.T @ V)
            if include_noise:
                cov.flat[::n + 1] += s
            return mean, cov * scale2
        return mean

    def sample_y(self, X, n_samples: int = 1, random_state=0, *,
                 include_noise: bool = True) -> np.ndarray:
        """Draw functions (or noisy observations) from the predictive distribution.

        Exact draws in O(n p) per sample: weights w from their posterior
        N((σ_f²/p)A⁻¹Φᵀy, σ_n²(σ_f²/p)A⁻¹), then f* = Φ*w (plus
        N(0, σ_n²) noise with ``include_noise``), mapped back through the
        normalisation of y.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
        n_samples : int, default=1
            Number of draws.
        random_state : None, int, SeedSequence, Generator or RandomState, default=0
            As in scikit-learn's ``GaussianProcessRegressor.sample_y``.
        include_noise : bool, default=True
            Add observation noise (the distribution of ``predict``'s default).

        Returns
        -------
        ndarray of shape (n_samples_X, n_samples)
        """
        n_samples = check_int(n_samples, "n_samples")
        include_noise = check_bool(include_noise, "include_noise")
        rng = check_random_generator(random_state)
        check_is_fitted(self, "theta_")
        X = check_array_input(self, X, reset=False)
        m2 = 2 * self.frequencies_.shape[1]
        s, a = self.noise_variance_, self._a
        z = rng.standard_normal((m2, n_samples))
        W = self.weights_mean_[:, None] + np.sqrt(s * a) * la.solve_triangular(
            self._R, z, check_finite=False)
        F = np.empty((X.shape[0], n_samples))
        rows = _block_rows(X.shape[0], m2, _check_block_size(self.block_size))
        threads = _feature_threads(X.shape[0], m2)
        for start in range(0, X.shape[0], rows):
            F[start:start + rows] = _features(X[start:start + rows], self.frequencies_,
                                              threads) @ W
        if include_noise:
            F += np.sqrt(s) * rng.standard_normal(F.shape)
        return F * self.y_train_std_ + self.y_train_mean_

    def log_marginal_likelihood(self, theta=None, eval_gradient: bool = False):
        """Log marginal likelihood of the training data at ``theta``.

        As ``GaussianProcessRegressor.log_marginal_likelihood``: the log
        evidence (-NLML, Hoang et al. 2020, Eq. 3 with K = K') of the
        (normalised) training targets, at the fitted spectral points.

        Parameters
        ----------
        theta : array-like of shape (n_features + 2,), optional
            (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²); default the fitted
            ``theta_`` (then the stored value is returned).
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta``.

        Returns
        -------
        log_likelihood : float
        log_likelihood_gradient : ndarray of shape (n_features + 2,)
            Only with ``eval_gradient``.
        """
        check_is_fitted(self, "theta_")
        eval_gradient = check_bool(eval_gradient, "eval_gradient")
        if theta is None and not eval_gradient:
            return self.log_marginal_likelihood_value_
        theta = self.theta_ if theta is None else _check_theta(theta, self.n_features_in_)
        X, yn = self.X_train_, self.y_train_
        with _blas_limit(X.shape[0], 2 * self.spectral_points_.shape[0]):
            ev = _nlml(X, yn, float(yn @ yn), self.spectral_points_, theta,
                       gradient=eval_gradient, block_size=_check_block_size(self.block_size))
        if eval_gradient:
            return -ev.nlml, -ev.grad_theta
        return -ev.nlml


def _safe_nlml(X, y, yy, eps, theta, block_size) -> float:
    try:
        return _nlml(X, y, yy, eps, theta, gradient=False, block_size=block_size).nlml
    except np.linalg.LinAlgError:
        return np.inf


def _subsample_levels(m: int, n: int, dask_data: bool) -> list[int]:
    """Row counts of the training stages: the subsample m, then m·4^k while
    at most n / 2 (and, for dask data, gathered to the client: at most
    :data:`MAX_GATHERED_ROWS`), then all n rows."""
    levels = [m]
    if m < n:
        while (levels[-1] * LEVEL_FACTOR <= n // 2
               and not (dask_data and levels[-1] * LEVEL_FACTOR > MAX_GATHERED_ROWS)):
            levels.append(levels[-1] * LEVEL_FACTOR)
        levels.append(n)
    return levels


def _hessian(X, y, yy, eps, theta, block_size) -> np.ndarray:
    """Hessian of the NLML in θ at ``theta`` (ε fixed): forward differences
    of the analytic gradient, one evaluation per coordinate, symmetrised."""
    k = theta.size
    g0 = _nlml(X, y, yy, eps, theta, gradient=True, block_size=block_size).grad_theta
    H = np.empty((k, k))
    for j in range(k):
        step = np.zeros(k)
        step[j] = _HESSIAN_STEP
        try:
            gj = _nlml(X, y, yy, eps, theta + step, gradient=True,
                       block_size=block_size).grad_theta
        except np.linalg.LinAlgError:
            step[j] = -_HESSIAN_STEP
            gj = 2.0 * g0 - _nlml(X, y, yy, eps, theta + step, gradient=True,
                                  block_size=block_size).grad_theta
        H[:, j] = (gj - g0) / _HESSIAN_STEP
    return 0.5 * (H + H.T)


def _newton_direction(hessian: np.ndarray, grad: np.ndarray, free: np.ndarray) -> np.ndarray:
    """-H⁻¹g on the free coordinates (zero on the others), with the
    eigenvalues of H floored at 1e-8 of the largest one (a flat direction
    of the NLML gives a long step, which the line search and the bounds
    shorten, not an infinite one)."""
    d = np.zeros_like(grad)
    if not np.any(free):
        return d
    Hf = hessian[np.ix_(free, free)]
    w, V = np.linalg.eigh(Hf)
    floor = 1e-8 * max(float(np.max(np.abs(w))), np.finfo(float).tiny)
    w = np.maximum(w, floor)
    d[free] = -(V @ ((V.T @ grad[free]) / w))
    return d


def _newton_refine(X, y, yy, eps, theta, hessian, box, tol, max_steps, block_size, callback):
    """Minimise the NLML of all rows in θ from ``theta`` by quasi-Newton steps
    that start from ``hessian`` (the subsample's, scaled) and correct it by
    BFGS updates along the way, with an Armijo backtracking line search.

    Coordinates at a bound whose gradient pushes outwards stay there; steps
    are clipped to the box.  Stops when the predicted decrease -½ gᵀd of
    the next step (the Newton decrement) is at most ``tol`` relative to the
    NLML, when no step along the direction lowers it, or after
    ``max_steps`` steps (status 1).  Returns (evaluation, θ, steps, status,
    the updated Hessian).
    """
    lo, hi = box
    # A positive definite start: |eigenvalues| floored at HESSIAN_FLOOR of
    # the largest.  The NLML is nearly flat along the length scales of
    # irrelevant inputs (curvature ~0 of either sign in a finite-difference
    # Hessian); there the start's curvature is a guess that BFGS corrects,
    # not an infinite step.
    w, V = np.linalg.eigh(0.5 * (hessian + hessian.T))
    w = np.abs(w)
    w = np.maximum(w, _HESSIAN_FLOOR * max(float(w.max()), np.finfo(float).tiny))
    H = (V * w) @ V.T
    ev = _nlml(X, y, yy, eps, theta, gradient=True, block_size=block_size)
    steps = 0
    while True:
        g = ev.grad_theta
        free = ~(((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0)))
        d = _newton_direction(H, g, free)
        slope = float(g @ d)
        if not slope < 0 or -0.5 * slope <= tol * max(abs(ev.nlml), 1.0):
            return ev, theta, steps, 0, H
        if steps >= max_steps:
            return ev, theta, steps, 1, H
        t = 1.0
        accepted = None
        for _ in range(30):
            trial = np.clip(theta + t * d, lo, hi)
            try:
                trial_ev = _nlml(X, y, yy, eps, trial, gradient=True, block_size=block_size)
            except np.linalg.LinAlgError:
                trial_ev = None
            if trial_ev is not None and \
                    trial_ev.nlml <= ev.nlml + 1e-4 * float(g @ (trial - theta)):
                accepted = (trial_ev, trial)
                break
            # The minimiser of the quadratic through f(0), f'(0) and f(t),
            # kept within [t/10, t/2].
            shrink = 0.5
            if trial_ev is not None and np.isfinite(trial_ev.nlml):
                excess = trial_ev.nlml - ev.nlml - slope * t
                if excess > 0:
                    shrink = min(0.5, max(0.1, -slope * t / (2.0 * excess)))
            t *= shrink
        if accepted is None:
            return ev, theta, steps, 0, H
        # BFGS update of the Hessian with the step taken and the change of
        # the gradient (skipped unless the curvature condition sᵀy > 0 holds).
        step, change = accepted[1] - theta, accepted[0].grad_theta - g
        sy = float(step @ change)
        Hs = H @ step
        sHs = float(step @ Hs)
        if sy > 1e-12 * np.linalg.norm(step) * np.linalg.norm(change) and sHs > 0:
            H += np.outer(change, change) / sy - np.outer(Hs, Hs) / sHs
        ev, theta = accepted
        steps += 1
        if callback is not None:
            callback(ev, theta, steps)

class _Run:
    """One L-BFGS-B run: the packing of (θ, ε) and the last evaluation."""

    def __init__(self, X, y, yy, eps0, optimize_eps, block_size):
        self.X, self.y, self.yy = X, y, yy
        self.eps0 = eps0
        self.optimize_eps = optimize_eps
        self.block_size = block_size
        self.D = X.shape[1]
        self.iteration = 0
        self._last = None

    def pack(self, theta, eps):
        return np.concatenate([theta, eps.ravel()]) if self.optimize_eps else theta.copy()

    def unpack(self, z):
        D = self.D
        theta = np.array(z[:D + 2])
        eps = z[D + 2:].reshape(-1, D).copy() if self.optimize_eps else self.eps0
        return theta, eps

    def fun(self, z):
        theta, eps = self.unpack(z)
        try:
            ev = _nlml(self.X, self.y, self.yy, eps, theta, gradient=True,
                       block_size=self.block_size, dual=True)
        except np.linalg.LinAlgError:
            # Outside the numerically positive-definite region: an infinite
            # value makes the line search step back.
            return np.inf, np.zeros_like(z)
        self._last = (z.copy(), ev)
        grad = ev.grad_theta
        if self.optimize_eps:
            grad = np.concatenate([grad, ev.grad_eps.ravel()])
        return ev.nlml, grad

    def evaluate_at(self, theta, eps) -> _Evaluation:
        z = self.pack(theta, eps)
        if self._last is not None and np.array_equal(self._last[0], z) and \
                self._last[1].R is not None:
            return self._last[1]
        try:
            return _nlml(self.X, self.y, self.yy, eps, theta, gradient=False,
                         block_size=self.block_size)
        except np.linalg.LinAlgError:
            ev = _Evaluation()
            ev.nlml = np.inf
            return ev
