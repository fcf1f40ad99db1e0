"""Theory made checkable: the papers' bounds as functions, next to the quantities they bound.

* Balog et al. (2016), *The Mondrian Kernel*: the uniform error bound of
  Prop. 2 as an explicit function of (M, λ, D, δ, ∣𝒳∣)
  (:func:`mondrian_kernel_error_bound`, with the constants of its proof in
  Supplement A corrected), an empirical estimate of the probability it bounds
  (:func:`mondrian_kernel_failure_frequency`), and the number of cells of a
  Mondrian process (Prop. 3: :func:`n_cells_tail_bound`,
  :func:`expected_n_cells`).
* Hoang, Hoang, Pham & Woodruff (2020), *Revisiting the sample complexity of
  sparse spectrum approximation of Gaussian processes*: the spectral distance
  ‖K − K′‖₂ of Definition 1 without dense n×n matrices when a side is a
  feature map (:func:`spectral_distance`, :class:`FeatureKernel`), the sample
  complexity of Lemma 5 / Theorem 2 (:func:`ssgp_sample_complexity`),
  Conditions 1–3 as diagnostics on a dataset
  (:func:`check_cluster_conditions`), and Theorem 3's bounds on the GP
  predictive mean and variance (:func:`predictive_bounds`, corrected: the
  paper's multiplicative mean bound is false), with the dense GP posterior
  they are checked against (:func:`gp_posterior`).

Every statement is deterministic given its hypothesis; where a paper hides a
constant in O(·), the constant is a parameter, never an invented value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._validation import (check_fraction, check_int, check_length_scales, check_positive_float,
                          check_random_generator)

__all__ = [
    "FeatureKernel",
    "spectral_distance",
    "linear_dimension",
    "KernelErrorBound",
    "mondrian_kernel_error_bound",
    "FailureFrequency",
    "mondrian_kernel_failure_frequency",
    "n_cells_tail_bound",
    "expected_n_cells",
    "ssgp_sample_complexity",
    "ClusterConditions",
    "check_cluster_conditions",
    "GPPosterior",
    "gp_posterior",
    "PredictiveBounds",
    "predictive_bounds",
]

# Below this size spectral_distance(method='auto') forms both matrices and
# uses LAPACK's eigvalsh: exact to rounding, and at n = 500 on one BLAS
# thread it took 30 ms here against 20 ms for eigsh(k=1, tol=0).  It runs on
# one BLAS thread (path.dual.blas_threads): on the 2 shared cores two
# OpenBLAS threads made the same n = 500 eigvalsh take 7.6 s.
_DENSE_MAX_N = 500


# --------------------------------------------------------------------------- helpers
def _finite_dense(A, name: str, *, ndim: int | None = None) -> np.ndarray:
    if sp.issparse(A):
        raise TypeError(f"{name}: sparse input is not supported here; pass a dense array")
    try:
        arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def _exp_or_inf(log_value: float) -> float:
    """exp of a log-probability bound, inf when it overflows (a vacuous bound)."""
    return math.exp(log_value) if log_value < 709.0 else math.inf


# --------------------------------------------------------------------------- spectral distance
class FeatureKernel:
    """The kernel matrix ``scale · Φ Φᵀ`` of a feature map, never formed.

    Pass it to :func:`spectral_distance` to stand for an n×n kernel matrix
    through its n×F feature matrix Φ: a product with a vector costs two
    products with Φ (O(nnz(Φ)) for a sparse Φ).

    Parameters
    ----------
    features : ndarray or scipy sparse matrix of shape (n, F)
        Φ, finite, with n ≥ 1 rows and F ≥ 1 columns.
    scale : float, default=1.0
        A factor > 0.  Feature maps of this package are normalised so that
        ``scale=1`` gives their kernel estimate: ``MondrianFeatures`` has
        entries 1/√M, so ΦΦᵀ = k_M (Balog et al. 2016, eq. (2)); the SSGP
        feature matrix of [cos, sin] without σ_f has scale σ_f²/m.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.theory import FeatureKernel
    >>> Phi = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> FeatureKernel(Phi, scale=2.0).toarray()
    array([[2., 2.],
           [2., 4.]])
    """

    def __init__(self, features, scale: float = 1.0):
        if sp.issparse(features):
            Phi = sp.csr_array(features, dtype=np.float64)
            if Phi.ndim != 2:
                raise ValueError(f"features must be 2-dimensional, got shape {Phi.shape}")
            if Phi.shape[0] == 0 or Phi.shape[1] == 0:
                raise ValueError(f"features must be non-empty, got shape {Phi.shape}")
            if not np.all(np.isfinite(Phi.data)):
                raise ValueError("features contains NaN or infinity")
        else:
            Phi = _finite_dense(features, "features", ndim=2)
        self.features = Phi
        self.scale = check_positive_float(scale, "scale")

    @property
    def shape(self) -> tuple[int, int]:
        n = self.features.shape[0]
        return (n, n)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``scale · Φ (Φᵀ v)`` for a vector or a block of column vectors."""
        Phi = self.features
        return self.scale * (Phi @ (Phi.T @ v))

    def toarray(self) -> np.ndarray:
        """The dense n×n matrix (n² memory: for small n only)."""
        Phi = self.features
        G = Phi @ Phi.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        return self.scale * G

    def __repr__(self) -> str:
        kind = "sparse" if sp.issparse(self.features) else "dense"
        return f"FeatureKernel({kind} features of shape {self.features.shape}, scale={self.scale!r})"


def _symmetric_tolerance(scale: float) -> float:
    return 1e-10 * max(scale, np.finfo(float).tiny)


def _as_symmetric_operator(K, name: str):
    """(n, matvec, to_dense) for a dense array, sparse matrix, LinearOperator or FeatureKernel."""
    if isinstance(K, FeatureKernel):
        return K.shape[0], K.matvec, K.toarray
    if isinstance(K, spla.LinearOperator):
        n, m = K.shape
        if n != m or n == 0:
            raise ValueError(f"{name} must be a square, non-empty operator, got shape {K.shape}")
        # Symmetry cannot be read off an operator: probe it with two fixed
        # vectors, |uᵀ(Kv) − vᵀ(Ku)| relative to ‖Ku‖‖v‖ + ‖Kv‖‖u‖.
        probe = np.random.default_rng(0).standard_normal((n, 2))
        Ku, Kv = K.matvec(probe[:, 0]), K.matvec(probe[:, 1])
        if not (np.all(np.isfinite(Ku)) and np.all(np.isfinite(Kv))):
            raise ValueError(f"{name} returns NaN or infinity")
        gap = abs(probe[:, 0] @ Kv - probe[:, 1] @ Ku)
        size = np.linalg.norm(Ku) * np.linalg.norm(probe[:, 1]) + \
            np.linalg.norm(Kv) * np.linalg.norm(probe[:, 0])
        if gap > 1e-8 * size:
            raise ValueError(f"{name} is not symmetric: uᵀ{name}v − vᵀ{name}u = {gap:.3g} "
                             "for random u, v")
        return n, (lambda v: K.matmat(v) if v.ndim == 2 else K.matvec(v)), \
            (lambda: K.matmat(np.eye(n)))
    if sp.issparse(K):
        K = sp.csr_array(K, dtype=np.float64)
        if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
            raise ValueError(f"{name} must be a square, non-empty matrix, got shape {K.shape}; "
                             "wrap a feature matrix Φ in FeatureKernel(Φ)")
        if not np.all(np.isfinite(K.data)):
            raise ValueError(f"{name} contains NaN or infinity")
        asym = abs(K - K.T).max() if K.nnz else 0.0
        if asym > _symmetric_tolerance(abs(K).max() if K.nnz else 0.0):
            raise ValueError(f"{name} is not symmetric (max |{name} − {name}ᵀ| = {asym:.3g})")
        return K.shape[0], (lambda v: K @ v), K.toarray
    A = _finite_dense(K, name, ndim=2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square, got shape {A.shape}; "
                         "wrap a feature matrix Φ in FeatureKernel(Φ)")
    asym = float(np.max(np.abs(A - A.T)))
    if asym > _symmetric_tolerance(float(np.max(np.abs(A)))):
        raise ValueError(f"{name} is not symmetric (max |{name} − {name}ᵀ| = {asym:.3g})")
    return A.shape[0], (lambda v: A @ v), (lambda: A)


def spectral_distance(K, K_other, *, method: str = "auto", tol: float = 0.0,
                      random_state=None) -> float:
    """Spectral distance ‖K − K′‖₂ of two symmetric matrices (Hoang et al. 2020, Def. 1).

    The largest ∣eigenvalue∣ of the symmetric difference D = K − K′.  (The
    paper's Definition 1 writes λ_max(K − K′); for an indefinite difference
    the spectral norm is the largest *magnitude*, which is what its
    Theorems 2–4 use, through ‖·‖₂ ≤ ‖·‖_F and −λI ⪯ K − K′ ⪯ λI.)

    Each side may be a dense array, a scipy sparse matrix (taken as the n×n
    kernel matrix itself), a ``scipy.sparse.linalg.LinearOperator``, or a
    :class:`FeatureKernel` standing for ``scale · ΦΦᵀ`` without forming it.
    With ``method='lanczos'`` no n×n matrix is ever formed: memory is that of
    the inputs plus O(n) vectors (times ARPACK's ≤ 20 Lanczos vectors), and
    each iteration costs one product with each side.

    Parameters
    ----------
    K, K_other : array-like, sparse matrix, LinearOperator or FeatureKernel
        Symmetric n×n matrices (same n).  Dense and sparse inputs are checked
        for symmetry to a relative 1e-10; an operator is probed with two
        random vectors.
    method : {'auto', 'dense', 'lanczos'}, default='auto'
        'dense' forms both matrices and takes ``numpy.linalg.eigvalsh`` of the
        difference (exact to rounding, O(n²) memory, O(n³) time).
        'lanczos' runs ``scipy.sparse.linalg.eigsh(k=1, which='LM')``
        (implicitly restarted Lanczos) on the difference operator.  'auto'
        is 'dense' for n ≤ 500 and 'lanczos' above.  'lanczos' needs n ≥ 3
        (ARPACK) and raises a ValueError below.
    tol : float, default=0.0
        Relative accuracy requested from ARPACK; 0 means machine precision.
    random_state : None, int, SeedSequence or Generator, default=None
        Source of the Lanczos start vector (the result is the same to
        ``tol`` for any start vector not orthogonal to the top eigenvector).

    Returns
    -------
    float
        ‖K − K′‖₂ ≥ 0.

    Raises
    ------
    ValueError
        Non-square, empty, non-finite or non-symmetric input, mismatched
        sizes, unknown ``method``, or Lanczos without convergence.
    """
    n, mv1, dense1 = _as_symmetric_operator(K, "K")
    n2, mv2, dense2 = _as_symmetric_operator(K_other, "K_other")
    if n != n2:
        raise ValueError(f"K is {n}x{n} but K_other is {n2}x{n2}")
    if method not in ("auto", "dense", "lanczos"):
        raise ValueError(f"method must be 'auto', 'dense' or 'lanczos', got {method!r}")
    tol = check_positive_float(tol, "tol", allow_zero=True)
    if method == "auto":
        method = "dense" if n <= _DENSE_MAX_N else "lanczos"
    if method == "dense":
        D = np.asarray(dense1(), dtype=np.float64) - np.asarray(dense2(), dtype=np.float64)
        D = 0.5 * (D + D.T)  # exact symmetry for LAPACK; inputs were checked
        from .path.dual import blas_threads
        with blas_threads(1):
            w = np.linalg.eigvalsh(D)
        return float(max(abs(w[0]), abs(w[-1])))
    if n < 3:
        raise ValueError(f"method='lanczos' needs n >= 3 (ARPACK), got n={n}; use method='dense'")
    rng = check_random_generator(random_state)

    def diff(v):
        v = np.asarray(v, dtype=np.float64)
        return np.asarray(mv1(v), dtype=np.float64) - np.asarray(mv2(v), dtype=np.float64)

    op = spla.LinearOperator((n, n), matvec=diff, matmat=diff, dtype=np.float64)
    v0 = rng.standard_normal(n)
    try:
        w = spla.eigsh(op, k=1, which="LM", v0=v0, tol=tol, return_eigenvectors=False,
                       maxiter=max(1000, 10 * n))
    except spla.ArpackNoConvergence as exc:  # pragma: no cover - ARPACK's own failure
        raise ValueError(f"Lanczos did not converge to tol={tol!r}: {exc}") from exc
    return float(abs(w[0]))


# --------------------------------------------------------------------------- Prop. 2
def linear_dimension(X) -> float:
    """Linear dimension ∣𝒳∣ = Σ_d (max_d − min_d) of the bounding box of X.

    Balog et al. (2016), Supplement A, Definition 1: the ℓ₁ diameter of the
    smallest axis-aligned box holding the points (their own ℓ₁ diameter is
    at most this).  The "data's diameter" in :func:`mondrian_kernel_error_bound`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    float
    """
    X = _finite_dense(X, "X", ndim=2)
    return float(np.sum(np.ptp(X, axis=0)))


@dataclass(frozen=True)
class KernelErrorBound:
    """Result of :func:`mondrian_kernel_error_bound`.

    Attributes
    ----------
    bound : float
        The bound on P[sup ∣k_M − k∣ > δ]; ≥ 1 means vacuous; inf when it
        overflows double precision (then see ``log_bound``).
    log_bound : float
        Its natural logarithm (−inf for the trivial cases where it is 0).
    epsilon : float
        The grid spacing ε at which the bound is attained (nan when trivial).
    epsilon_max : float
        The largest admissible ε: min(−ln(1 − δ/4)/(λD), ∣𝒳∣/2).
    n_cells : float
        The cell count n of the bad event A₁ at the optimum (Prop. 3).
    """

    bound: float
    log_bound: float
    epsilon: float
    epsilon_max: float
    n_cells: float

    def __float__(self) -> float:
        return self.bound


def mondrian_kernel_error_bound(n_trees: int, lifetime: float, delta: float, *,
                                n_dims: int, diameter: float) -> KernelErrorBound:
    r"""Balog et al. (2016) Prop. 2 / Prop. 4: an explicit bound on P[sup ∣k_M − k∣ > δ].

    For M independent Mondrian trees of lifetime λ on an axis-aligned box
    𝒳 ⊂ R^D of linear dimension ∣𝒳∣ (Supplement A, Def. 1), the Mondrian
    kernel k_M (eq. (2)) and the Laplace kernel k = exp(−λ‖x − x′‖₁) satisfy

    .. math::

        P\Big[\sup_{x,x'\in\mathcal X}|k_M(x,x') - k(x,x')| > \delta\Big]
        \le \min_{0<\varepsilon\le\varepsilon_{\max}}
        \Big(\tfrac{27}{2}\,M^4\lambda^2|\mathcal X|\,\varepsilon\,
        e^{2\lambda|\mathcal X|}\Big)^{1/3}
        + 2\Big(\tfrac{2|\mathcal X|}{\varepsilon}\Big)^{2D} e^{-M\delta^2/2},

    with :math:`\varepsilon_{\max} = \min(-\ln(1-\delta/4)/(\lambda D),\ |\mathcal X|/2)`.
    The minimiser is closed-form (the objective c₁ε^{1/3} + c₂ε^{−2D} falls
    then rises): ε* = (6D c₂/c₁)^{3/(6D+1)}, clipped to ε_max.  Everything is
    computed in logarithms, so huge M or λ∣𝒳∣ do not overflow.

    Corrections to the proof in Supplement A (each checked in the tests by
    minimising the three-term bound numerically):

    * **Sign.** The admissible spacing is ε ≤ −ln(1 − δ/4)/(λD) (positive);
      the paper prints ln(1 − δ/4)/(λD), which is negative.  It comes from
      2(1 − e^{−Dλε}) ≤ δ/2.
    * **Minimisation over n.** P(A₁) + P(A₂) ≤ M e^{λ∣𝒳∣}/n + 2(Mnλ)²∣𝒳∣ε is
      minimised at n³ = e^{λ∣𝒳∣}/(4Mλ²∣𝒳∣ε) with value
      (27/2 · M⁴λ²∣𝒳∣ε e^{2λ∣𝒳∣})^{1/3}; the paper prints
      (4λ²M²∣𝒳∣ε e^{2λ∣𝒳∣})^{1/3}, which drops the M of the union bound in
      P(A₁) (so its polynomial factor in Prop. 2 is M^{2/3}; with the M kept
      it is M^{(4/3)·6D/(6D+1)}; the exponent −Mδ²/(12D + 2) is unchanged).
    * **Grid size.** The grid has at most (2∣𝒳∣/ε)^D points (this needs
      ε ≤ ∣𝒳∣/2, hence the second cap on ε), so P(A₃) ≤ 2(2∣𝒳∣/ε)^{2D}
      e^{−Mδ²/2}; the paper's final line drops the 2 inside the power.
    * The paper's ε₀ (missing its exponent 3/(6D+1)) is replaced by the exact
      minimiser.

    Parameters
    ----------
    n_trees : int
        M ≥ 1.
    lifetime : float
        λ > 0.
    delta : float
        δ > 0.  For δ ≥ 1 the event is empty (k_M and k lie in [0, 1] and
        differ by less than 1), and the bound returned is exactly 0.
    n_dims : int
        D ≥ 1, the input dimension.
    diameter : float
        ∣𝒳∣ ≥ 0, the linear dimension of a box containing the domain, e.g.
        :func:`linear_dimension` of the data.  For ∣𝒳∣ = 0 (a single point)
        k_M = k = 1 and the bound is exactly 0.

    Returns
    -------
    KernelErrorBound

    See Also
    --------
    mondrian_kernel_failure_frequency : the empirical probability on a finite set.
    """
    M = check_int(n_trees, "n_trees")
    lam = check_positive_float(lifetime, "lifetime")
    delta = check_positive_float(delta, "delta")
    D = check_int(n_dims, "n_dims")
    L = check_positive_float(diameter, "diameter", allow_zero=True)
    if delta >= 1.0 or L == 0.0:
        return KernelErrorBound(0.0, -math.inf, math.nan, math.nan, math.nan)
    eps_max = min(-math.log1p(-delta / 4.0) / (lam * D), L / 2.0)
    log_c1 = (math.log(13.5) + 4.0 * math.log(M) + 2.0 * math.log(lam) + math.log(L)
              + 2.0 * lam * L) / 3.0
    log_c2 = math.log(2.0) + 2.0 * D * math.log(2.0 * L) - M * delta * delta / 2.0
    log_eps = min(3.0 / (6.0 * D + 1.0) * (math.log(6.0 * D) + log_c2 - log_c1),
                  math.log(eps_max))
    log_bound = float(np.logaddexp(log_c1 + log_eps / 3.0, log_c2 - 2.0 * D * log_eps))
    eps = math.exp(log_eps)
    # n* from d/dn [M e^{λL}/n + 2 M² n² λ² L ε] = 0.
    log_n = (lam * L - math.log(4.0 * M) - 2.0 * math.log(lam) - math.log(L) - log_eps) / 3.0
    return KernelErrorBound(_exp_or_inf(log_bound), log_bound, eps, eps_max,
                            _exp_or_inf(log_n))


@dataclass(frozen=True)
class FailureFrequency:
    """Result of :func:`mondrian_kernel_failure_frequency`.

    Attributes
    ----------
    frequency : float
        Fraction of forests with max ∣k_M − k∣ > δ over the given points.
    standard_error : float
        Its binomial standard error √(f(1 − f)/R) (0 when f ∈ {0, 1}).
    sup_errors : ndarray of shape (n_repeats,)
        max_{i,j} ∣k_M(x_i, x_j) − k(x_i, x_j)∣ of each forest.
    """

    frequency: float
    standard_error: float
    sup_errors: np.ndarray


def mondrian_kernel_failure_frequency(X, n_trees: int, lifetime: float, delta: float, *,
                                      n_repeats: int = 100, random_state=None,
                                      n_jobs: int | None = 1) -> FailureFrequency:
    """Empirical P[max ∣k_M − k∣ > δ] over independent forests (the event of Prop. 2).

    Grows ``n_repeats`` independent Mondrian forests of ``n_trees`` trees and
    lifetime λ on the points X (each from its own child stream of
    ``random_state``), and counts the forests for which
    max_{i,j} ∣k_M(x_i, x_j) − exp(−λ‖x_i − x_j‖₁)∣ > δ.

    The supremum is taken over the **given finite set** of points, not over
    the continuum 𝒳 of Prop. 2: the event here implies the event there, so
    the frequency estimates a lower bound of the probability that
    :func:`mondrian_kernel_error_bound` bounds (for 𝒳 = the bounding box of
    X).  By projectivity (Sec. 2.2) the cells of a tree grown on X are those
    of a Mondrian on X's bounding box, restricted to X, so the law of k_M on
    X is exactly that of Prop. 2.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The points; O(n²) memory for the kernel matrices.
    n_trees : int
        M ≥ 1.
    lifetime : float
        λ > 0.
    delta : float
        δ > 0.
    n_repeats : int, default=100
        R ≥ 1 independent forests.
    random_state : None, int, SeedSequence or Generator, default=None
        Forest r is grown from the r-th child of ``Generator.spawn``, so the
        result is reproducible for an int or SeedSequence.
    n_jobs : int or None, default=1
        Threads for growing each forest.

    Returns
    -------
    FailureFrequency
    """
    from .features import MondrianFeatures
    from .kernels import laplace_kernel

    X = _finite_dense(X, "X", ndim=2)
    M = check_int(n_trees, "n_trees")
    lam = check_positive_float(lifetime, "lifetime")
    delta = check_positive_float(delta, "delta")
    R = check_int(n_repeats, "n_repeats")
    children = check_random_generator(random_state).spawn(R)
    K = laplace_kernel(X, lifetime=lam)
    sup = np.empty(R)
    for r, child in enumerate(children):
        Phi = MondrianFeatures(n_trees=M, lifetime=lam, random_state=child,
                               n_jobs=n_jobs).fit_transform(X)
        K_M = (Phi @ Phi.T).toarray()
        sup[r] = np.max(np.abs(K_M - K))
    f = float(np.mean(sup > delta))
    return FailureFrequency(f, math.sqrt(f * (1.0 - f) / R), sup)


# --------------------------------------------------------------------------- Prop. 3
def n_cells_tail_bound(n: float, lifetime: float, diameter: float) -> float:
    """Balog et al. (2016) Prop. 3: P[N_λ > n] ≤ e^{λ∣𝒳∣} / n.

    N_λ is the number of cells of a Mondrian process of lifetime λ on a box
    of linear dimension ∣𝒳∣.  The proof dominates the cell splitting by a
    Yule process of birth rate ∣𝒳∣, whose size at time λ is geometric with
    mean e^{λ∣𝒳∣}; Markov's inequality gives the bound.  In particular
    E[N_λ] ≤ e^{λ∣𝒳∣} (``n_cells_tail_bound(1, λ, ∣𝒳∣)``); the exact mean is
    :func:`expected_n_cells`.

    Parameters
    ----------
    n : float
        Threshold n > 0.
    lifetime : float
        λ ≥ 0.
    diameter : float
        ∣𝒳∣ ≥ 0.

    Returns
    -------
    float
        e^{λ∣𝒳∣}/n (may exceed 1, then vacuous; inf on overflow).
    """
    n = check_positive_float(n, "n")
    lam = check_positive_float(lifetime, "lifetime", allow_zero=True)
    L = check_positive_float(diameter, "diameter", allow_zero=True)
    return _exp_or_inf(lam * L - math.log(n))


def expected_n_cells(lifetime: float, box_widths) -> float:
    """Exact E[N_λ] = Π_d (1 + λ w_d) for a Mondrian process on a box of widths w.

    Mourtada, Gaïffas & Scornet (2020, *Minimax optimal rates for Mondrian
    trees and forests*, Ann. Statist., Prop. 2).  It refines the bound of
    Balog et al. (2016) Prop. 3, E[N_λ] ≤ e^{λ∣𝒳∣} with ∣𝒳∣ = Σ_d w_d, by
    1 + x ≤ eˣ.  In one dimension the cuts are a Poisson process of rate λ
    and E[N_λ] = 1 + λw.  A tree grown on data counts only the cells that
    hold data, so its leaves number at most this in expectation (on the data's
    bounding box).

    Parameters
    ----------
    lifetime : float
        λ ≥ 0.
    box_widths : array-like of shape (n_dims,)
        Side lengths w_d ≥ 0 of the box (e.g. ``np.ptp(X, axis=0)``).

    Returns
    -------
    float
    """
    lam = check_positive_float(lifetime, "lifetime", allow_zero=True)
    w = _finite_dense(box_widths, "box_widths", ndim=1)
    if np.any(w < 0):
        raise ValueError("box_widths must be >= 0")
    return float(np.prod(1.0 + lam * w))


# --------------------------------------------------------------------------- Hoang et al.
def _band_offset(n: int, distance: float) -> float:
    """a = log₂(n⁴/(n⁴ − λ⁴)) of Lemma 3 / Condition 3 (Eq. 5), for λ < n."""
    # log2(1/(1 − (λ/n)⁴)) without cancellation for small λ/n.
    return -math.log1p(-(distance / n) ** 4) / math.log(2.0)


def _default_n_clusters(n: int) -> int:
    """Lemma 2: n = Σ_{i≤b} 2^{i/2} = (2^{(b+1)/2} − √2)/(√2 − 1); smallest b reaching n."""
    b = 1
    while (2.0 ** ((b + 1) / 2.0) - math.sqrt(2.0)) / (math.sqrt(2.0) - 1.0) < n:
        b += 1
    return b


def ssgp_sample_complexity(n_samples: int, distance: float, delta: float, *,
                           n_clusters: int | None = None, band_sizes=None) -> int:
    r"""Hoang et al. (2020) Lemma 5 / Theorem 2: frequencies p for a λ-close SSGP kernel.

    Under Conditions 1–3 (see :func:`check_cluster_conditions`), the
    average K′ = (1/p) Σ_t K_{ε_t} of p random-feature kernels (Lemma 1)
    approximates the in-cluster entries of band i (Lemma 5's κ_i) with
    Σ_{κ_i} Δ² ≤ λ²/(4b) with probability ≥ 1 − δ/b as soon as

    .. math::

        p \ge \frac{32\, b\, |\kappa_i|}{\lambda^2\, 2^{a+i}}
              \log\frac{2 b |\kappa_i|}{\delta},\qquad
        a = \log_2\frac{n^4}{n^4-\lambda^4},

    and Theorem 2 (via Corollary 2) then gives ‖K − K′‖₂ ≤ ‖K − K′‖_F ≤ λ
    with probability ≥ 1 − 2δ.  This function returns the largest of these
    p over the bands i = 1..b.  With Condition 2's sizes ∣κ_i∣ = 2^i it is
    32b/(λ²2^a) · log(b·2^{b+1}/δ) = O((log² n/λ²) log(log n/δ)).

    The constants are those of the proof (Eqs. 21–22), which are explicit;
    the lemma's statement prints p = b∣κ_i∣/(λ²2^{a+i}) log(b∣κ_i∣/δ) (no
    32 and 2) and a per-band error λ²/b, but the proof needs, and proves,
    λ²/(4b) with the constants used here.  Two hypotheses carry constants
    the paper leaves in O(·) and are *not* checked here: Theorem 2's
    δ ≥ O(exp(b − √d)) (Lemma 3), and Condition 1's γ_i = O(1/√d).  The
    Chernoff–Hoeffding step (Eq. 21) is the sub-Gaussian form
    2exp(−ε²/(4 Σ V)), which holds for deviations up to the order of the
    summed variance (Bernstein); the paper does not check that side
    condition.

    Parameters
    ----------
    n_samples : int
        n ≥ 1 training points.
    distance : float
        The target spectral distance λ, 0 < λ < n.  (For λ ≥ n, a is
        undefined; any kernel matrix with unit diagonal has ‖K‖₂ ≤ n, so the
        zero matrix is already λ-close.)
    delta : float
        Confidence δ in (0, 1).
    n_clusters : int, optional
        b ≥ 1.  Default: the b of Lemma 2, the smallest b with
        Σ_{i≤b} 2^{i/2} ≥ n (b = O(log n)).
    band_sizes : array-like of shape (n_clusters,), optional
        ∣κ_i∣ ≥ 1, the number of in-cluster entries in band i.  Default
        2^i, Condition 2 (cluster i has 2^{i/2} points).

    Returns
    -------
    int
        p, rounded up.
    """
    n = check_int(n_samples, "n_samples")
    lam = check_positive_float(distance, "distance")
    if lam >= n:
        raise ValueError(f"distance must be < n_samples={n} (Lemma 3's a = log2(n⁴/(n⁴ − λ⁴))), "
                         f"got {lam!r}")
    delta = check_fraction(delta, "delta")
    b = _default_n_clusters(n) if n_clusters is None else check_int(n_clusters, "n_clusters")
    if band_sizes is None:
        sizes = 2.0 ** np.arange(1, b + 1)
    else:
        sizes = _finite_dense(band_sizes, "band_sizes", ndim=1)
        if sizes.shape[0] != b:
            raise ValueError(f"band_sizes must have n_clusters={b} entries, got {sizes.shape[0]}")
        if np.any(sizes < 1):
            raise ValueError("band_sizes must be >= 1")
    a = _band_offset(n, lam)
    i = np.arange(1, b + 1)
    log_p = (np.log(32.0 * b * sizes) - 2.0 * np.log(lam) - (a + i) * math.log(2.0)
             + np.log(np.log(2.0 * b * sizes / delta)))
    # Logarithms keep 2^{a+i} finite for any b; the factor 1 − 1e-12 keeps
    # exp∘log rounding from lifting an integral p to the next integer.
    top = float(np.max(log_p))
    if top >= math.log(np.finfo(np.float64).max):
        raise ValueError(f"the bound needs about 10^{top / math.log(10.0):.0f} frequencies, "
                         f"beyond double precision: distance={lam!r} is too small")
    return int(math.ceil(math.exp(top) * (1.0 - 1e-12)))


@dataclass(frozen=True)
class ClusterConditions:
    """Result of :func:`check_cluster_conditions` (clusters indexed by increasing size).

    Attributes
    ----------
    n_clusters : int
        b.
    cluster_sizes : ndarray of int
        Sizes of the clusters, ascending (cluster i is the i-th smallest).
    required_sizes : ndarray of float
        Condition 2's 2^{i/2}, i = 1..b.
    sizes_ok : bool
        Condition 2: every size equals 2^{i/2} rounded down or up.
    gamma : ndarray
        Condition 1's γ_i estimated as the root mean square, per dimension,
        of Θ^{−1/2}(x − c_i) over the cluster (c_i its mean; nan for a
        single point).  Condition 1 asks γ_i = O(1/√d) with an unspecified
        constant: compare ``gamma * sqrt(d)`` with your constant.
    in_band_fraction : ndarray
        Fraction of the distinct in-cluster pairs of cluster i whose kernel
        value lies in band i of Lemma 3 (Eq. 12), the consequence of
        Conditions 1–2 that Theorem 2's proof uses (nan for a cluster of one).
    bands_ok : bool
        All in-cluster pairs are in their bands.
    min_center_distance_sq : float
        min_{i≠j} ‖Θ^{−1/2}(c_i − c_j)‖² (inf for b = 1).
    separation_threshold : float
        Condition 3's (3/2) log(2^a/(2^a − 1)) = 6 log(n/λ) (Eq. 5).
    separated : bool
        Condition 3.
    max_cross_kernel : float
        Largest kernel value between points of different clusters (0 for b = 1).
    cross_kernel_threshold : float
        Lemma 4's (1 − 2^{−a})^{1/4} = λ/n.
    cross_ok : bool
        Lemma 4's conclusion: max_cross_kernel < cross_kernel_threshold.
    cross_frobenius_sq : float
        Σ over ordered cross-cluster pairs of K², which Corollary 2 needs
        ≤ 3λ²/4 (Eq. 24).
    satisfied : bool
        sizes_ok and bands_ok and separated and cross_ok.
    """

    n_clusters: int
    cluster_sizes: np.ndarray
    required_sizes: np.ndarray
    sizes_ok: bool
    gamma: np.ndarray
    in_band_fraction: np.ndarray
    bands_ok: bool
    min_center_distance_sq: float
    separation_threshold: float
    separated: bool
    max_cross_kernel: float
    cross_kernel_threshold: float
    cross_ok: bool
    cross_frobenius_sq: float

    @property
    def satisfied(self) -> bool:
        return self.sizes_ok and self.bands_ok and self.separated and self.cross_ok


def check_cluster_conditions(X, labels, *, length_scale, distance: float) -> ClusterConditions:
    """Hoang et al. (2020) Conditions 1–3 (Sec. 3.1.2) as diagnostics of a clustered dataset.

    Theorem 2's small sample complexity (:func:`ssgp_sample_complexity`)
    holds when the data fall into b = O(log n) clusters with

    * Condition 2: cluster i (by increasing size) holds 2^{i/2} points, so
      n = Σ 2^{i/2} and b ≈ 2 log₂ n (Lemma 2);
    * Condition 1: cluster i is a Gaussian N(c_i, γ_i² Θ) with γ_i = O(1/√d)
      small enough that its in-cluster kernel values fall in band i,
      (1 − 2^{−(a+i−1)})^{1/4} ≤ K < (1 − 2^{−(a+i)})^{1/4} (Lemma 3, Eq. 12);
    * Condition 3: centres separated, ‖Θ^{−1/2}(c_i − c_j)‖² >
      (3/2) log(2^a/(2^a − 1)) (Eq. 5), so that cross-cluster kernel values
      are below (1 − 2^{−a})^{1/4} = λ/n (Lemma 4),

    with a = log₂(n⁴/(n⁴ − λ⁴)) and the Gaussian kernel
    K(x, x′) = exp(−½‖Θ^{−1/2}(x − x′)‖²), Θ = diag(ℓ²).  The conditions
    speak of the existence of such a mixture; this function checks a given
    partition (e.g. from k-means), estimating c_i and γ_i from it, and checks
    the kernel-value consequences (Eq. 12, Lemma 4, Eq. 24) exactly.

    Lemma 4's proof subtracts *squared* distances (‖u + v + w‖² ≥
    ‖u‖² − ‖v‖² − ‖w‖² does not hold in general), so Condition 3 does not
    by itself imply its conclusion; ``cross_ok`` checks that conclusion
    directly.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    labels : array-like of shape (n_samples,)
        Cluster label of each point (any hashable integer or string values).
    length_scale : float or array-like of shape (n_features,)
        ℓ > 0 of the Gaussian kernel (Θ = diag(ℓ²)), shared or per dimension.
    distance : float
        The target spectral distance λ, 0 < λ < n.

    Returns
    -------
    ClusterConditions

    Notes
    -----
    Costs O(n² d) time in row blocks (all cross-cluster kernel values are
    visited) and O(n · block) memory.
    """
    from .kernels import gaussian_kernel

    X = _finite_dense(X, "X", ndim=2)
    n, d = X.shape
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"labels must have shape ({n},), got {labels.shape}")
    ls = check_length_scales(length_scale, d)
    lam = check_positive_float(distance, "distance")
    if lam >= n:
        raise ValueError(f"distance must be < n_samples={n}, got {lam!r}")
    a = _band_offset(n, lam)
    uniq, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    order = np.argsort(counts, kind="stable")          # cluster i = i-th smallest
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse]                                # 0-based cluster index by size
    b = uniq.size
    sizes = counts[order]
    required = 2.0 ** (np.arange(1, b + 1) / 2.0)
    sizes_ok = bool(np.all((sizes >= np.floor(required)) & (sizes <= np.ceil(required))))

    Z = X / ls
    centers = np.stack([Z[idx == i].mean(axis=0) for i in range(b)])
    gamma = np.full(b, np.nan)
    frac = np.full(b, np.nan)
    for i in range(b):
        Zi = Z[idx == i]
        if Zi.shape[0] < 2:
            continue
        gamma[i] = math.sqrt(float(np.mean((Zi - centers[i]) ** 2)))
        Ki = gaussian_kernel(Zi)
        off = Ki[np.triu_indices(Zi.shape[0], 1)]
        k4 = off ** 4
        # Band i (1-based j = i + 1): 1 − 2^{−(a+j−1)} ≤ K⁴ < 1 − 2^{−(a+j)}.
        j = i + 1
        lo, hi = -np.expm1(-(a + j - 1) * math.log(2.0)), -np.expm1(-(a + j) * math.log(2.0))
        frac[i] = float(np.mean((k4 >= lo) & (k4 < hi)))
    bands_ok = bool(np.all(frac[~np.isnan(frac)] == 1.0))

    # 1 − 2^{−a} = (λ/n)⁴ exactly, so Eq. (5)'s (3/2) log(2^a/(2^a − 1)) is
    # 6 log(n/λ) and Lemma 4's (1 − 2^{−a})^{1/4} is λ/n (no cancellation).
    threshold = 6.0 * math.log(n / lam)
    if b > 1:
        diff = centers[:, None, :] - centers[None, :, :]
        dist2 = np.einsum("ijk,ijk->ij", diff, diff)
        min_dist2 = float(np.min(dist2[~np.eye(b, dtype=bool)]))
    else:
        min_dist2 = math.inf
    separated = min_dist2 > threshold

    cross_max, cross_fro = 0.0, 0.0
    if b > 1:
        block = max(1, int(2**22 // max(1, n)))
        for s in range(0, n, block):
            Kb = gaussian_kernel(Z[s:s + block], Z)
            mask = idx[s:s + block, None] != idx[None, :]
            vals = Kb[mask]
            if vals.size:
                cross_max = max(cross_max, float(vals.max()))
                cross_fro += float(np.sum(vals ** 2))
    cross_threshold = lam / n
    return ClusterConditions(
        n_clusters=int(b), cluster_sizes=sizes.astype(np.int64), required_sizes=required,
        sizes_ok=sizes_ok, gamma=gamma, in_band_fraction=frac, bands_ok=bands_ok,
        min_center_distance_sq=min_dist2, separation_threshold=threshold,
        separated=bool(separated), max_cross_kernel=cross_max,
        cross_kernel_threshold=cross_threshold, cross_ok=bool(cross_max < cross_threshold),
        cross_frobenius_sq=cross_fro)


# --------------------------------------------------------------------------- Theorem 3
@dataclass(frozen=True)
class GPPosterior:
    """Result of :func:`gp_posterior`.

    Attributes
    ----------
    mean : ndarray of shape (n_test,)
        k*ᵀ(K + σ²I)⁻¹y (Hoang et al. 2020, Eq. (2)).
    variance : ndarray of shape (n_test,)
        Latent variance k** − k*ᵀ(K + σ²I)⁻¹k* (without the noise σ²).
    data_fit : float
        yᵀ(K + σ²I)⁻¹y, the data term of the negative log likelihood (Eq. (3)).
    """

    mean: np.ndarray
    variance: np.ndarray
    data_fit: float


def gp_posterior(K, K_cross, k_test, y, *, noise_variance: float) -> GPPosterior:
    """Dense GP predictive mean and latent variance (Hoang et al. 2020, Eq. (2)).

    The exact computation that Theorem 3 compares: with Q = K + σ²I = LLᵀ
    (Cholesky), mean = K_cross Q⁻¹ y and variance = k_test − diag(K_cross
    Q⁻¹ K_crossᵀ).  Use it for the exact GP, and for an approximate kernel
    given densely (e.g. K′ = ΦΦᵀ of random features, K′_cross = Φ*Φᵀ).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Training kernel matrix, symmetric positive semi-definite.
    K_cross : array-like of shape (n_test, n)
        k(x*, x_i) for each test point (rows).
    k_test : array-like of shape (n_test,)
        k(x*, x*).
    y : array-like of shape (n,)
        Training targets.
    noise_variance : float
        σ² > 0.

    Returns
    -------
    GPPosterior
    """
    K = _finite_dense(K, "K", ndim=2)
    n = K.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K must be square, got shape {K.shape}")
    # la.cholesky reads one triangle only: an asymmetric K would be taken
    # for another matrix without a word.
    if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * float(np.max(np.abs(K), initial=0.0))):
        raise ValueError("K must be symmetric")
    K_cross = _finite_dense(K_cross, "K_cross", ndim=2)
    if K_cross.shape[1] != n:
        raise ValueError(f"K_cross must have {n} columns (one per training point), "
                         f"got shape {K_cross.shape}")
    k_test = _finite_dense(k_test, "k_test", ndim=1)
    if k_test.shape[0] != K_cross.shape[0]:
        raise ValueError(f"k_test must have {K_cross.shape[0]} entries, got {k_test.shape[0]}")
    y = _finite_dense(y, "y", ndim=1)
    if y.shape[0] != n:
        raise ValueError(f"y must have {n} entries, got {y.shape[0]}")
    s2 = check_positive_float(noise_variance, "noise_variance")
    Q = K + s2 * np.eye(n)
    try:
        L = la.cholesky(Q, lower=True)
    except la.LinAlgError as exc:
        raise ValueError("K + noise_variance·I is not positive definite: K must be symmetric "
                         "positive semi-definite") from exc
    alpha = la.cho_solve((L, True), y)
    V = la.solve_triangular(L, K_cross.T, lower=True)
    return GPPosterior(K_cross @ alpha, k_test - np.einsum("ij,ij->j", V, V), float(y @ alpha))


@dataclass(frozen=True)
class PredictiveBounds:
    """Result of :func:`predictive_bounds`: intervals for the other GP's predictions.

    Attributes
    ----------
    mean_lower, mean_upper : ndarray of shape (n_test,)
    variance_lower, variance_upper : ndarray of shape (n_test,)
    """

    mean_lower: np.ndarray
    mean_upper: np.ndarray
    variance_lower: np.ndarray
    variance_upper: np.ndarray

    def contains(self, mean, variance) -> np.ndarray:
        """Elementwise: do ``mean`` and ``variance`` lie in their intervals?"""
        mean, variance = np.asarray(mean, dtype=float), np.asarray(variance, dtype=float)
        return ((self.mean_lower <= mean) & (mean <= self.mean_upper)
                & (self.variance_lower <= variance) & (variance <= self.variance_upper))


def predictive_bounds(mean, variance, data_fit: float, *, distance: float,
                      noise_variance: float) -> PredictiveBounds:
    r"""Hoang et al. (2020) Theorem 3 (Lemmas 6–8), corrected: where the exact GP's predictions lie.

    Given one GP's predictive mean m′ and latent variance v′ at test points,
    and its data fit y ᵀ Q′⁻¹ y (Q′ = K′ + σ²I), return intervals that
    contain the predictions m, v of any other GP with the same noise σ²
    whose kernel is λ-close.  Hypothesis, for each test point x*: the joint
    Gram matrices K̃, K̃′ of the training points and x* are positive
    semi-definite and ‖K̃ − K̃′‖₂ ≤ λ.  (Closeness of the joint matrix of the
    training and *all* test points implies this, since a principal
    submatrix's norm is at most the matrix's; give that as ``distance``,
    e.g. from :func:`spectral_distance`.)  Then, with ε = λ/σ²,

    .. math::

        \frac{v' + \sigma^2}{1+\varepsilon} - \sigma^2 \le v \le
        (1+\varepsilon)(v' + \sigma^2) - \sigma^2,\qquad
        |m - m'| \le \big(\varepsilon + \tfrac{\varepsilon^2}{2}\big)
        \sqrt{y^\top Q'^{-1}y\,(v' + \sigma^2)},

    and v ≥ 0 (the lower variance end is max(·, 0)).  Proof: Lemma 6's
    Loewner bounds Q̃ ⪯ (1+ε)Q̃′, Q̃′ ⪯ (1+ε)Q̃ for Q̃ = K̃ + σ²I, applied to
    the joint matrices; v + σ² = 1/[Q̃⁻¹]_{**} gives the variance, and
    m = −[Q̃⁻¹ỹ]_*/[Q̃⁻¹]_{**} with ỹ = (y, 0) gives the mean (write
    Q̃⁻¹ = Q̃′^{−½} M Q̃′^{−½} with spec(M) ⊂ [1/(1+ε), 1+ε] and split ỹ along
    and across Q̃′^{−½}e*).  The variance bound is attained when K̃′ = 0 and
    K̃ = λI.  The bounds also cover the approximation of k(x*, x_i) and
    k(x*, x*), which an SSGP makes too.

    What is corrected in the paper's statement (Eq. (6)):

    * **Mean.** The paper claims E[g] = (1 ± λ/σ²) E[g′]: a relative bound,
      which would force m = 0 whenever m′ = 0.  It is false (the tests give
      a counterexample): Lemma 7's proof applies (1 ± ε) to three quadratic
      forms of a polarisation identity separately and then factors it out
      of their difference.  The additive bound above replaces it.
    * **Variance.** The paper's V[g] = (1 ± ε)V[g′] ± ε assumes unit signal
      variance and the same cross-covariances k* on both sides (Lemma 8),
      and Lemma 6's proof uses K′ ⪯ (σ² + λ)K′, which holds only when
      σ² + λ ≥ 1 (its conclusion Q ⪯ (1 + ε)Q′ is true for any PSD K′).  The
      bound above needs neither restriction.

    Parameters
    ----------
    mean : array-like of shape (n_test,)
        m′, the predictive mean of the GP with kernel K′.
    variance : array-like of shape (n_test,)
        v′ ≥ 0, its latent predictive variance (without σ²).
    data_fit : float
        yᵀ(K′ + σ²I)⁻¹y ≥ 0 (:attr:`GPPosterior.data_fit`; for an SSGP,
        [yᵀy − (σ_f²/m)‖R⁻ᵀΦᵀy‖²]/σ² from its Cholesky factor R).
    distance : float
        λ ≥ 0, a bound on ‖K̃ − K̃′‖₂.
    noise_variance : float
        σ² > 0, shared by both GPs.

    Returns
    -------
    PredictiveBounds
        Intervals for the other GP's mean and latent variance.

    Notes
    -----
    The paper states Theorem 3 "with probability 1 − δ": the probability is
    that of the hypothesis ‖K − K′‖₂ ≤ λ (Theorem 2).  Given the hypothesis
    the bounds here are deterministic.
    """
    mean = _finite_dense(mean, "mean", ndim=1)
    variance = _finite_dense(variance, "variance", ndim=1)
    if variance.shape != mean.shape:
        raise ValueError(f"variance must have shape {mean.shape}, got {variance.shape}")
    if np.any(variance < 0):
        raise ValueError("variance must be >= 0 (a latent predictive variance)")
    data_fit = check_positive_float(data_fit, "data_fit", allow_zero=True)
    lam = check_positive_float(distance, "distance", allow_zero=True)
    s2 = check_positive_float(noise_variance, "noise_variance")
    eps = lam / s2
    s = variance + s2
    radius = (eps + 0.5 * eps * eps) * np.sqrt(data_fit * s)
    return PredictiveBounds(mean - radius, mean + radius,
                            np.maximum(s / (1.0 + eps) - s2, 0.0), (1.0 + eps) * s - s2)
