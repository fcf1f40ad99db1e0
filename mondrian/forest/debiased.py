r"""The debiased Mondrian random forest with confidence intervals.

Cattaneo, Klusowski & Underwood, "Inference with Mondrian random forests"
(arXiv 2310.09702; below "CKU").  Everything here is linear in y given the
trees, which is what makes exact variance formulas possible.

The forest (CKU's estimator).  B Mondrian trees T_1..T_B of lifetime λ; T_b(x)
is the cell of x and N_b(x) the number of training points in it:

.. math::

    \hat\mu_\lambda(x) = \frac1B \sum_{b=1}^B \sum_{i=1}^n
        \frac{Y_i\, 1\{X_i \in T_b(x)\}}{N_b(x)},

leaf means averaged over trees, no smoothing.  CKU partition the whole
domain and set 0/0 = 0 for a cell without training points.

Our trees, and empty cells.  :class:`~mondrian.MondrianFeatures` grows the
Mondrian *restricted to the data* (the partition of the training points that
the Mondrian process of the data's bounding box induces; projectivity,
Balog et al. 2016 Sec. 2.3): every node holds training points and its data
box.  For a training point the cell is its leaf, exactly as in CKU.  A test
point x that lies outside some data box on its path may, under the
Mondrian of the whole domain, be cut off from that node's points: the
conditional Mondrian (``c/lookup.h``, Balog et al. Sec. 2.4) gives the
probability that it is not,

.. math::

    P_b(x) = \prod_{j \in \text{path}} e^{-\Delta_j \eta_j(x)},

η_j(x) the ℓ₁ distance of x to node j's data box and Δ_j the time node j
lives before λ (``MondrianFeatures.transform`` returns P_b(x)/√B).  With
probability P_b(x) the cell of x holds exactly the points of its leaf
a_b(x); otherwise x is cut away from node j's points at some node j of its
path, with probability

.. math::

    q_{bj}(x) = \Big(\prod_{i \text{ above } j} e^{-\Delta_i \eta_i(x)}\Big)
        \big(1 - e^{-\Delta_j \eta_j(x)}\big),

and its cell holds no training point (N_b(x) = 0).  We average the
estimator over this part of the tree that the data do not determine (a
Rao-Blackwellisation over the trees' randomness: same expectation, less
Monte-Carlo noise).  An empty cell needs a convention: CKU's 0/0 = 0 pulls
predictions towards 0, the authors' reference code predicts ȳ there; both
matter in finite samples, where cells at the AIMSE lifetime hold a few
points each (in d = 2 with n = 2000, a test point's cell at 1.5λ is empty
with probability 8 % on average, up to 20 %, and ȳ biased the intervals'
coverage to 91 %).  Here an empty cell borrows the points of the smallest
earlier cell of x that held training points: the donor of j, its parent
(the root's points, all of them, when x is cut away at the root).  The
convention changes nothing where N_b(x) ≥ 1 and its probability vanishes
as n/λ^d grows.  For x inside every box of its path -- training points, and
almost every point inside dense data -- P_b(x) = 1.  So

.. math::

    \hat\mu_\lambda(x) = \sum_i w_i^\lambda(x) Y_i, \qquad
    w_i^\lambda(x) = \frac1B \sum_b \Big[ P_b(x)
        \frac{1\{X_i \in a_b(x)\}}{N_{a_b(x)}} + \sum_j q_{bj}(x)
        \frac{1\{X_i \in p(j)\}}{N_{p(j)}} \Big],

weights >= 0 summing to 1 (constants are reproduced exactly).

Bias and the generalised jackknife (CKU's debiasing section).  For
interior points and smooth μ the bias expands in even powers of 1/λ,
E μ̂_λ(x) - μ(x) = Σ_{s=1}^{J} B_s(x) λ^{-2s} + O(λ^{-2J-2}).  (For a
uniform density the cell of x in coordinate j is [x_j - E₁, x_j + E₂] with
E₁, E₂ iid Exp(λ); averaging (x+t)^{2s} over it gives
B_s(x) = Σ_j ∂_j^{2s} μ(x) / (s + 1) plus mixed-derivative terms, odd
powers cancelling by symmetry.)  With J + 1 lifetimes a_r λ, a_0 = 1, the
combination

.. math::

    \hat\mu^{(J)}(x) = \sum_{r=0}^J \omega_r \hat\mu_{a_r\lambda}(x),
    \qquad \sum_{r=0}^J \omega_r a_r^{-2s} = 1\{s = 0\},\ s = 0..J,

keeps μ (s = 0) and removes the bias terms s = 1..J, leaving
ω̄ B_{J+1}(x) λ^{-2J-2}, ω̄ = Σ_r ω_r a_r^{-2J-2}.  Defaults: J = 1 and
a_r = 1.5^r (the authors' reference implementation; ω = (-0.8, 1.8)).

Shared trees.  CKU draw an independent forest per lifetime.  We grow B
trees once to the largest lifetime a_max λ and read every a_r λ by pruning
(:meth:`MondrianFeatures.transform` at a smaller lifetime): each pruned
forest is a Mondrian forest of lifetime a_r λ, so the bias expansion of
each μ̂_{a_r λ} -- an expectation over its own trees -- and hence the
jackknife's cancellation are unchanged.  The variance is not the same number as with independent
forests (the lifetimes' estimates are more correlated), but the variance
estimator below does not use CKU's limit constants: it is the conditional
variance given the trees and X, exact for either construction.

Variance and intervals (CKU's variance estimator).  The debiased estimator
is Σ_i w_i(x) Y_i with w_i = Σ_r ω_r w_i^{a_r λ}, so given the trees and X
its variance is Σ_i w_i(x)² σ²(X_i).  CKU estimate σ²(·) near x by the
forest at λ,

.. math::

    \hat\sigma^2(x) = \sum_i w_i^\lambda(x) \big(Y_i - \hat\mu_\lambda(x)\big)^2,

and the variance by :math:`\hat\sigma^2(x) \sum_i w_i(x)^2` (their
Σ̂(x) λ^d/n).  This σ̂²(x) holds, besides the noise, the variation of μ
across x's cells, (μ(X_i) - μ(x))² ~ |∇μ|² × (cell width)², of order λ⁻²,
so the intervals over-cover where μ varies across a cell as much as the
noise: 95 % intervals covered 0.969 ± 0.004 (d = 2, noise sd 0.5) and
0.982 ± 0.002 (d = 2, noise sd 0.2) of 50 points over 50 replicates
(n = 2000, μ = sin(2πx₁) + x₂², defaults; ``asv_bench/debiased_check.py``).
The default, ``variance='loo'``, takes the spread of the leave-one-out
residuals instead,

.. math::

    \hat\sigma^2(x) = \sum_i w_i^\lambda(x)\, \tilde e_i^2, \qquad
    \tilde e_i = \frac{Y_i - \hat\mu_\lambda(X_i)}{1 - h_i}, \qquad
    h_i = \frac1B \sum_b \frac{1}{N_b(X_i)},

h_i the forest's weight of Y_i in its own fit (for one tree ẽ_i is exactly
the residual of the leaf mean without Y_i): E ẽ_i² = σ²(1 + O(1/N)) plus
the squared bias of the fit at X_i, of order λ⁻⁴.  On the same data it
covered 0.956 ± 0.004 and 0.947 ± 0.004 in 2-D, 0.946 ± 0.007 and
0.942 ± 0.007 in 1-D (CKU's: 0.954 and 0.966); ``variance='cku'`` keeps
CKU's estimator.  Points whose h_i = 1 (alone in their leaf in every tree)
have no leave-one-out residual: a node averages the ẽ_i² of its points
that have one, and a node with none takes its parent's value.  The
interval of level 1 - α is
μ̂^{(J)}(x) ± z_{1-α/2} (σ̂²(x) Σ_i w_i(x)²)^{1/2}.  The weights of x live on
the union of its B(J + 1) leaves (and the donors of its empty cells): the
row of x in the sparse product Z_test D⁻¹ Z_trainᵀ of one-hot cell
matrices stacked over lifetimes.  ``c/debias.h`` accumulates one row at a
time in a dense array of n doubles (per thread) and sums its squares, so
the cost is the total size of x's cells and the memory O(n), whatever the
number of test points.

The lifetime (CKU's tuning section).  The asymptotic integrated MSE of the
forest (J = 0) is ∫ (B_1(x)²/λ⁴ + (λ^d/n) σ²(x) V_d / f(x)) f(x) dx, with
V_d = ((4 - 4 log 2)/3)^d the variance constant of CKU's central limit
theorem (in d = 1 the integral ∫ (E[1{u ∈ T(0)} / vol T(0)])² du over the
cell T(0) of 0 under a Mondrian of lifetime 1; a product over
dimensions).  Its minimiser is

.. math::

    \lambda^{4+d} = \frac{4\, n\, \overline{B_1^2}}{d\, \sigma^2 V_d\, |\mathcal X|},

estimated by CKU's rule of thumb: a global polynomial regression of degree
2J + 4 = 4 in each coordinate separately (no interactions) gives ∂_j²μ at
every training point, B_1 = ½ Σ_j ∂_j²μ (uniform density, mixed terms
dropped), its mean square over the training points, and σ² from the
regression's residuals; vol(𝒳) is the volume of the data's bounding box
(for a coordinate with a gross outlier or an extreme tail, the box of its
central 99 %: :data:`RULE_TAIL`).  ``lifetime='auto'`` debiases (J = 1) at this λ, optimal for the plain
forest: the debiased bias is O(λ^{-4}), smaller than the standard
deviation ~ (λ^d/n)^{1/2} by n^{-2/(d+4)} -- the undersmoothing that valid
intervals need (robust bias correction).  With ``debias_order=0`` the
intervals at this λ are not valid (bias and standard deviation are of the
same order): they undercover.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.special import ndtri
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._ext import _debias
from .._scale import (column_std, heavy_tailed, lifetime_scale, quartile_rows,
                      resolve_feature_scale)
from .._validation import (FOREST_STATISTICS, all_finite, check_array_input, check_auto_or,
                           check_bool, check_fraction, check_int, check_lifetime,
                           check_lifetime_ratios, check_rotation, check_target_scale,
                           resolve_n_jobs)
from ..features import MondrianFeatures
from ..features.mondrian import _MemoryBudget, node_bytes

__all__ = ["DebiasedMondrianForestRegressor", "jackknife_weights", "forest_variance_constant",
           "aimse_lifetime"]

#: a_r = LIFETIME_RATIO_BASE**r by default.
LIFETIME_RATIO_BASE = 1.5

#: Peak bytes of ``fit`` per node beyond the forest's own (``node_bytes``):
#: the node statistics, donors and leave-one-out noise, and the copies of the
#: slice bounds and parents that compute them (measured: 10⁵ synthetic rows
#: of 8 features, 100 trees, 9.7·10⁶ nodes, 2.9 GiB with a prediction of 2000
#: rows, about 290 bytes a node against node_bytes' 200).
FIT_NODE_EXTRA_BYTES = 96.0


def jackknife_weights(ratios) -> np.ndarray:
    """Generalised-jackknife weights ω of lifetimes a_r λ, r = 0..J.

    The solution of Σ_r ω_r a_r^{-2s} = 1{s = 0}, s = 0..J (a Vandermonde
    system in a_r^{-2}): the combination Σ_r ω_r μ̂_{a_r λ} keeps the limit
    and cancels the bias terms λ^{-2s}, s = 1..J.

    Parameters
    ----------
    ratios : array-like of shape (J + 1,)
        Distinct a_r > 0, a_0 = 1.

    Returns
    -------
    ndarray of shape (J + 1,)
    """
    a = check_lifetime_ratios(ratios, np.asarray(ratios).size, "ratios")
    A = a[None, :] ** (-2.0 * np.arange(a.size)[:, None])
    e0 = np.zeros(a.size)
    e0[0] = 1.0
    return np.linalg.solve(A, e0)


def forest_variance_constant(n_features: int) -> float:
    """V_d = ((4 - 4 log 2)/3)^d: n λ^{-d} Var μ̂_λ(x) → σ²(x) V_d / f(x)
    for the Mondrian forest of lifetime λ with B → ∞ (CKU's CLT)."""
    d = check_int(n_features, "n_features")
    return ((4.0 - 4.0 * math.log(2.0)) / 3.0) ** d


#: :func:`aimse_lifetime` takes a coordinate's extent between its RULE_TAIL
#: and 1 - RULE_TAIL quantiles (its values outside clipped to them) where
#: its standard deviation exceeds HEAVY_TAIL_RATIO times its robust
#: estimate IQR/1.349 -- the rule of ``feature_scale='std'``
#: (:func:`mondrian._scale.feature_std`): a gross outlier or an extreme
#: tail.  The rule assumes a density on the box 𝒳; one value of 10⁹ among
#: 1500 standard normal ones made 𝒳 10⁹ wide, squeezed the others to one
#: end of the polynomial regression's [0, 1] and put λ 20 times lower (a
#: test RMSE of 0.65 of the function's deviation, 0.37 with the central
#: box; 0.886 and 0.413 of sd(y) on 2000 rows x 4 with the far value).  On
#: the raw CPU data (one heavy-tailed input) λ went from 0.292 to 0.306
#: and the test error stayed 3.3 % (seeds 0-2).
#: Other coordinates keep their full extent (the same λ as before).
RULE_TAIL = 0.005


def _rule_box(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower corner, extents) of the box 𝒳 of :func:`aimse_lifetime`: the
    bounding box, but for heavy-tailed coordinates (:data:`RULE_TAIL`) the
    box of their central 99 %.  Quantiles are taken, as in
    :func:`mondrian._scale.feature_std`, on at most 65 536 evenly strided
    rows (:func:`mondrian._scale.quartile_rows`)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    rows = quartile_rows(X)
    heavy = np.flatnonzero(heavy_tailed(column_std(X), rows)[0])
    if heavy.size:
        lo[heavy], hi[heavy] = np.percentile(rows[:, heavy], [100.0 * RULE_TAIL,
                                                              100.0 * (1.0 - RULE_TAIL)], axis=0)
    return lo, hi - lo


def aimse_lifetime(X, y) -> float:
    """Rule-of-thumb AIMSE-optimal lifetime of the Mondrian forest (J = 0).

    λ = (4 n mean(B_1²) / (d σ² V_d vol(𝒳)))^{1/(4+d)} with B_1 = ½ Σ_j ∂_j²μ
    and σ² from a global polynomial regression of degree 4 in every
    coordinate separately (see the module docstring); coordinates with a
    single value are left out (no Mondrian cut ever falls in them), d and
    vol(𝒳) (the bounding box's volume; for a heavy-tailed coordinate, the
    extent of its central 99 %, its values outside clipped to it:
    :data:`RULE_TAIL`) are over the others.  Computed in
    units of a power of two near the extents, so that X in any units gives
    the same answer in those units (X·2^k gives exactly λ·2^-k).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)

    Returns
    -------
    float
        The lifetime, > 0 and finite.

    Raises
    ------
    ValueError
        If there are no more points than the regression's 4d + 1
        coefficients, or the regression leaves no residual or no curvature
        (then the rule has no finite answer; pass a lifetime).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be 2-d and y 1-d of the same length, got shapes "
                         f"{X.shape} and {y.shape}")
    if not (all_finite(X) and all_finite(y)):
        raise ValueError("X and y must be finite")
    lo, extent = _rule_box(X)
    active = extent > 0
    d = int(active.sum())
    n = X.shape[0]
    degree = 4
    p = 1 + degree * d
    if d == 0:
        raise ValueError("the lifetime rule needs a feature with two distinct values")
    if n <= p:
        raise ValueError(f"the lifetime rule regresses y on {p} polynomial terms and needs "
                         f"more points than that, got n_samples={n}; pass a lifetime")
    U = np.clip((X[:, active] - lo[active]) / extent[active], 0.0, 1.0)
    design = np.empty((n, p))
    design[:, 0] = 1.0
    for s in range(1, degree + 1):
        design[:, s::degree] = U**s
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    sigma2 = float(resid @ resid) / (n - p)
    # ∂²/∂x_j² of Σ_s c_js u_j^s, u_j = (x_j - lo_j)/extent_j.
    c = coef[1:].reshape(d, degree)
    # In units of s, a power of two near the extents' geometric mean: with
    # e = extent/s, mean(B₁²) scales as s⁻⁴ and vol(𝒳) as s^d, so λ = λ_e/s
    # with λ_e the rule on e.  The extents in those units are near 1, so
    # data in any units (1e±150) neither overflow nor underflow the
    # curvature and the volume (in the data's own units they did, and the
    # rule fell back to the median distance), and X scaled by a power of
    # two scales λ exactly inversely: the same trees, bit for bit.
    log_scale = float(np.round(np.mean(np.log2(extent[active]))))
    e = np.ldexp(extent[active], -int(log_scale))
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        second = (2.0 * c[:, 1] + 6.0 * c[:, 2] * U + 12.0 * c[:, 3] * U**2) / e**2
        bias = 0.5 * second.sum(axis=1)
        curvature = np.mean(bias**2)
        volume = np.prod(e)
        ratio = 4.0 * n * curvature / (d * sigma2 * forest_variance_constant(d) * volume)
        lifetime = float(np.ldexp(ratio ** (1.0 / (4 + d)), -int(log_scale)))
    curvature, volume = float(curvature), float(volume)
    if not (sigma2 > 0 and 0 < curvature < np.inf and 0 < volume < np.inf
            and 0 < lifetime < np.inf):
        raise ValueError(f"the lifetime rule has no finite answer here (residual variance "
                         f"{sigma2:.3g}, mean squared curvature {curvature:.3g} and box volume "
                         f"{volume:.3g} in units of 2^{log_scale:.0f} of X); pass a lifetime")
    return lifetime


class DebiasedMondrianForestRegressor(RegressorMixin, BaseEstimator):
    r"""Debiased Mondrian random forest with pointwise confidence intervals.

    The estimator of Cattaneo, Klusowski & Underwood (2023): leaf means
    averaged over B Mondrian trees, combined over the lifetimes a_r λ,
    r = 0..J, by the generalised jackknife (weights
    :func:`jackknife_weights`) to remove the bias terms up to λ^{-2J}, with
    the variance estimator σ̂²(x) Σ_i w_i(x)² and normal intervals.  The
    trees are grown once, to the largest lifetime, and pruned for the
    others.  See :mod:`mondrian.forest.debiased` for the formulas and how
    empty cells and points outside the data are handled.

    Parameters
    ----------
    n_trees : int, default=100
        Number B of Mondrian trees (shared by all lifetimes).
    lifetime : 'auto' or float, default='auto'
        The lifetime λ (a_0 = 1).  'auto': the rule-of-thumb AIMSE-optimal
        lifetime of the plain forest (:func:`aimse_lifetime`), at which the
        debiased forest undersmooths as valid intervals need; with fewer
        points than the rule's regression needs (4d + 1), or data on which
        it has no finite answer, λ = 1/(median ℓ₁ distance between training
        points) instead, recorded in ``lifetime_rule_``.  Where trees grown
        to max(a_r)·λ would not fit in memory (on 10⁶ rows of 8 features
        they would hold some 10⁸ nodes), λ is lowered until they are
        expected to fill :data:`~mondrian.features.mondrian.MEMORY_SHARE` of
        the available memory (``memory_capped_``; counted on two pilot
        trees), at the price of more bias than the rule intends.
    debias_order : int, default=1
        J ≥ 0: the number of bias terms removed (0: the plain forest).
    lifetime_ratios : array-like of shape (J + 1,) or None, default=None
        The multipliers a_r (distinct, > 0, a_0 = 1); None: a_r = 1.5^r.
    random_state : None, int, SeedSequence or Generator, default=None
        Randomness of the trees (each tree has its own stream).
    n_jobs : int or None, default=None
        Threads for growing the trees and looking points up (results do not
        depend on it).
    rotation : None or 'uniform', default=None
        'uniform': each tree cuts the data in its own Haar-random rotation
        about the training mean (:class:`~mondrian.MondrianFeatures`); the
        estimator, its jackknife and its variance keep their form (each tree
        is a Mondrian partition in its own coordinates).  The rule of thumb
        of ``lifetime='auto'`` is derived for axis-aligned cuts and is
        applied to the inputs as the trees see them (scaled): under
        rotation it is an approximation.
    feature_scale : 'auto', 'std', None or array-like of shape (n_features,), default='auto'
        Per-feature length scales of the trees, as in
        :class:`~mondrian.MondrianFeatures` ('auto': the features' standard
        deviations with ``lifetime='auto'`` and at least 10 rows, X as given
        otherwise); ``lifetime='auto'`` is computed on x / l.  Fitted value:
        ``feature_scale_``.
    variance : {'loo', 'cku'}, default='loo'
        The estimate σ̂²(x) of the noise variance near x in the standard
        deviation (σ̂²(x) Σ_i w_i(x)²)^{1/2}: 'loo', the forest's weighted
        mean of the leave-one-out residuals' squares at x; 'cku', CKU's
        weighted spread of the Y_i around μ̂_λ(x), which also holds the
        variation of μ across the cells and over-covers (see
        :mod:`mondrian.forest.debiased`).

    Attributes
    ----------
    features_ : MondrianFeatures
        The trees, grown to ``max(lifetime_ratios_) * lifetime_``.
    feature_scale_ : ndarray of shape (n_features,) or None
        The length scales the trees divide the inputs by (``feature_scale``).
    lifetime_ : float
        λ.
    lifetime_rule_ : str
        How λ was set: 'given', 'aimse' or 'median distance'.
    memory_capped_ : bool
        Whether ``lifetime='auto'`` lowered λ so that the trees fit in memory.
    lifetime_ratios_ : ndarray of shape (J + 1,)
        a_r.
    jackknife_weights_ : ndarray of shape (J + 1,)
        ω_r.
    y_mean_ : float
        ȳ, the mean of the training targets.
    variance_ : str
        The estimator of σ̂²(x) used: ``variance``, or 'cku' if no training
        point has a leave-one-out residual (every point alone in its leaf in
        every tree; a warning says so).
    n_features_in_ : int
        Number of input features.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import DebiasedMondrianForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((500, 1))
    >>> y = np.sin(4 * X[:, 0]) + 0.1 * rng.standard_normal(500)
    >>> model = DebiasedMondrianForestRegressor(n_trees=50, random_state=0).fit(X, y)
    >>> mean, ci = model.predict([[0.5]], return_ci=True)
    >>> bool(ci[0, 0] < mean[0] < ci[0, 1])
    True
    """

    def __init__(self, n_trees: int = 100, lifetime="auto", *, debias_order: int = 1,
                 lifetime_ratios=None, random_state=None, n_jobs: int | None = None,
                 rotation=None, variance: str = "loo", feature_scale="auto"):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.debias_order = debias_order
        self.lifetime_ratios = lifetime_ratios
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.rotation = rotation
        self.feature_scale = feature_scale
        self.variance = variance

    def fit(self, X, y) -> "DebiasedMondrianForestRegressor":
        """Select λ (if 'auto'), grow the trees and compute the leaf statistics.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points (dense, finite).
        y : array-like of shape (n_samples,)
            Targets (finite).

        Returns
        -------
        self
        """
        n_trees = check_int(self.n_trees, "n_trees")
        J = check_int(self.debias_order, "debias_order", minimum=0)
        rotation = check_rotation(self.rotation)
        if not (isinstance(self.variance, str) and self.variance in ("loo", "cku")):
            raise ValueError(f"variance must be 'loo' or 'cku', got {self.variance!r}")
        if self.lifetime_ratios is None:
            ratios = LIFETIME_RATIO_BASE ** np.arange(J + 1, dtype=np.float64)
        else:
            ratios = check_lifetime_ratios(self.lifetime_ratios, J + 1)
        lifetime = check_auto_or(self.lifetime, "lifetime", check_lifetime, "a number >= 0")
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64)
        check_target_scale(y, what=FOREST_STATISTICS)
        self.feature_scale_ = scale = resolve_feature_scale(self.feature_scale, X,
                                                            lifetime == "auto")
        self.memory_capped_ = False
        if lifetime == "auto":
            Z = X if scale is None else X / scale   # the trees' coordinates
            try:
                lifetime, rule = aimse_lifetime(Z, y), "aimse"
            except ValueError:
                lifetime, rule = _median_distance_lifetime(Z), "median distance"
            # Lowered where the trees would not fit in memory (the trees'
            # streams are not advanced: the same trees where they fit).
            top = float(ratios.max()) * lifetime
            budget = _MemoryBudget(X, n_trees, resolve_n_jobs(self.n_jobs), rotation, scale)
            fitted, self.memory_capped_ = budget.largest_lifetime(
                X, top, self.random_state,
                node_bytes(X.shape[1]) + FIT_NODE_EXTRA_BYTES)
            if self.memory_capped_:
                lifetime = fitted / float(ratios.max())
        else:
            rule = "given"
        self.lifetime_ = float(lifetime)
        self.lifetime_rule_ = rule
        self.lifetime_ratios_ = ratios
        self.jackknife_weights_ = jackknife_weights(ratios)
        self.features_ = MondrianFeatures(
            n_trees=n_trees, lifetime=float(ratios.max()) * self.lifetime_,
            random_state=self.random_state, n_jobs=self.n_jobs, rotation=rotation,
            feature_scale=scale).fit(X)
        self.y_mean_ = float(np.mean(y))
        self._node_stats(y - self.y_mean_)
        self.variance_ = self.variance
        if self.variance == "loo":
            self._loo_noise(y - self.y_mean_)
        return self

    def _loo_noise(self, yc: np.ndarray) -> None:
        """Every node's mean of ẽ_i² over its training points that have a
        leave-one-out residual (h_i < 1), its parent's where none has
        (``_noise``, for σ̂²(x) with ``variance='loo'``); CKU's estimator
        (``variance_ = 'cku'``, with a warning) if no point has one."""
        n = yc.shape[0]
        forest = self.features_.forest_
        start = np.array(forest.start, dtype=np.int64)
        end = np.array(forest.end, dtype=np.int64)
        # A training point's cell in tree b is the active node at λ whose
        # slice holds it (P_b = 1, no empty cell): the active nodes' slices
        # tile each tree's permutation, read tree by tree in O(n).
        active = forest.active_nodes(float(self._lifetimes()[0]))
        tree = np.asarray(forest.tree_of)[active]
        bounds = np.searchsorted(tree, np.arange(forest.n_trees + 1))
        fit, h = np.zeros(n), np.zeros(n)
        for t in range(forest.n_trees):
            nodes = active[bounds[t]:bounds[t + 1]]
            nodes = nodes[np.argsort(start[nodes], kind="stable")]
            cell = np.repeat(nodes, end[nodes] - start[nodes])
            points = np.asarray(forest.perm[t])
            fit[points] += self._mean[cell]
            h[points] += 1.0 / self._count[cell]
        fit /= forest.n_trees
        h /= forest.n_trees
        # h_i = 1 exactly when every tree's cell holds i alone.
        has = h < 1.0 - 1e-12
        if not np.any(has):
            warnings.warn("every training point is alone in its cell in every tree, so no "
                          "point has a leave-one-out residual: the intervals use CKU's "
                          "variance estimator (variance='cku'); a smaller lifetime gives "
                          "cells of several points", UserWarning, stacklevel=3)
            self.variance_ = "cku"
            return
        resid2 = np.where(has, ((yc - fit) / np.where(has, 1.0 - h, 1.0)) ** 2, 0.0)
        total = forest.node_sums(resid2)
        valid = forest.node_sums(has.astype(np.float64))
        noise = np.divide(total, valid, out=np.full(total.size, np.nan), where=valid > 0)
        # Nodes without a value take their parent's, level by level (a
        # vectorised step per level of the longest run of such nodes): every
        # root has one (some point has h_i < 1, and a root holds every point).
        parent = np.array(forest.parent, dtype=np.int64)
        missing = np.flatnonzero(np.isnan(noise))
        while missing.size:
            noise[missing] = noise[parent[missing]]
            missing = missing[np.isnan(noise[missing])]
        self._noise = noise

    def _lifetimes(self) -> np.ndarray:
        # min() guards a_r λ against exceeding the grown lifetime by rounding.
        return np.minimum(self.lifetime_ratios_ * self.lifetime_, self.features_.lifetime_)

    def _node_stats(self, yc: np.ndarray) -> None:
        """Count, mean of y - ȳ and mean of (y - ȳ)² of every node of the
        forest (global ids), from the trees' point slices; and every node's
        donor (the node whose points an empty cell separated below it
        borrows: its parent, the root for itself)."""
        forest = self.features_.forest_
        count = (np.asarray(forest.end) - np.asarray(forest.start)).astype(np.float64)
        # prefix sums along each tree's permutation, in C: the numbers of
        # the numpy loop over the trees it replaces, bit for bit (3·10⁴
        # points, 100 trees: 0.13 -> 0.08 s)
        first = forest.node_sums(yc)
        second = forest.node_sums(yc**2)
        self._count = count
        self._mean = first / count
        self._sq = second / count
        parent = np.array(forest.parent, dtype=np.int64)
        self._donor = np.where(parent >= 0, parent, np.arange(parent.size))

    def _paths(self, X: np.ndarray, lifetimes) -> list:
        """Where the points of X sit in every tree pruned at each λ of
        ``lifetimes`` (one walk per point and tree serves them all).

        Returns, for each λ, the active node (m, B) of every point in every
        tree with the probability P_b(x) (m, B) that x's cell holds its
        points, and the empty-cell events as triples (row, donor node,
        probability):
        x separates from node j's data box on its path with probability
        q_j = Π_{i above j} e^{-Δ_i η_i(x)} (1 - e^{-Δ_j η_j(x)}), and its
        cell then borrows the points of j's donor.  Only the (point, tree)
        pairs with P_b(x) < 1 are walked (η grows along a path: a point
        inside its active node's box is inside every box above it); the
        walk is ``c/debias.h``'s, its survival P + Σ q = 1 to rounding.
        """
        forest = self.features_.forest_
        B = forest.n_trees
        out = []
        for leaf, prob, offset, event_node, event_prob in _debias.paths(
                forest, X, np.asarray(lifetimes, dtype=np.float64),
                resolve_n_jobs(self.n_jobs)):
            # Pair p = row·B + tree holds the events offset[p]:offset[p + 1].
            sep_rows = np.repeat(np.arange(X.shape[0] * B) // B, np.diff(offset))
            out.append((leaf, prob, sep_rows, self._donor[event_node], event_prob))
        return out

    def _average(self, path, values: np.ndarray, m: int) -> np.ndarray:
        """(1/B) Σ_b [P_b(x) v_{a_b(x)} + Σ_j q_bj(x) v_{donor(j)}] for node values v."""
        leaf, prob, sep_rows, sep_nodes, sep_prob = path
        total = np.sum(prob * values[leaf], axis=1)
        total += np.bincount(sep_rows, weights=sep_prob * values[sep_nodes], minlength=m)
        return total / prob.shape[1]

    def predict(self, X, return_std: bool = False, return_ci: bool = False,
                level: float = 0.95):
        """Debiased prediction, its standard error and confidence interval.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points (anywhere; see :mod:`mondrian.forest.debiased` for cells
            without training points).
        return_std : bool, default=False
            Also return the estimated standard deviation
            (σ̂²(x) Σ_i w_i(x)²)^{1/2} of the prediction given the trees
            and the training points.
        return_ci : bool, default=False
            Also return the pointwise confidence intervals of level
            ``level`` for μ(x): prediction ± z_{(1+level)/2} std.
        level : float, default=0.95
            Confidence level, in (0, 1).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        ci : ndarray of shape (n_samples, 2)
            Lower and upper ends, only with ``return_ci=True``.
        """
        check_is_fitted(self, "features_")
        return_std = check_bool(return_std, "return_std")
        return_ci = check_bool(return_ci, "return_ci")
        level = check_fraction(level, "level")
        X = check_array_input(self, X, reset=False)
        m = X.shape[0]
        paths = self._paths(X, self._lifetimes())
        mean = self.y_mean_ + sum(w * self._average(path, self._mean, m)
                                  for w, path in zip(self.jackknife_weights_, paths))
        if not (return_std or return_ci):
            return mean
        if self.variance_ == "loo":
            sigma2 = self._average(paths[0], self._noise, m)
        else:
            first = self._average(paths[0], self._mean, m)
            # A weighted variance (weights >= 0 summing to 1): >= 0 but for rounding.
            sigma2 = np.maximum(self._average(paths[0], self._sq, m) - first**2, 0.0)
        std = np.sqrt(sigma2 * self._sum_squared_weights(paths, m))
        out = (mean,)
        if return_std:
            out += (std,)
        if return_ci:
            half = ndtri(0.5 + level / 2.0) * std
            out += (np.column_stack([mean - half, mean + half]),)
        return out

    def _sum_squared_weights(self, paths, m: int) -> np.ndarray:
        """Σ_i w_i(x)², w = Σ_r ω_r w^{a_r λ}.

        Each point's weights are a list of (node, coefficient) entries -- a
        leaf with ω_r P/(B N), a donor with ω_r q/(B N) -- spread over the
        node's training points: the sparse row of Z D⁻¹ Z_trainᵀ.  The C
        kernel (``c/debias.h``) accumulates each row in a dense array and
        sums its squares: O(Σ of the row's node sizes) per point, memory
        O(n) per thread.
        """
        B = self.features_.forest_.n_trees
        rows, nodes, coef = [], [], []
        for w, (leaf, prob, sep_rows, sep_nodes, sep_prob) in zip(self.jackknife_weights_, paths):
            rows += [np.repeat(np.arange(m), B), sep_rows]
            nodes += [leaf.ravel(), sep_nodes]
            coef += [w * prob.ravel() / (B * self._count[leaf.ravel()]),
                     w * sep_prob / (B * self._count[sep_nodes])]
        rows, nodes, coef = np.concatenate(rows), np.concatenate(nodes), np.concatenate(coef)
        order = np.argsort(rows, kind="stable")
        indptr = np.searchsorted(rows[order], np.arange(m + 1)).astype(np.int64)
        return _debias.sum_squared_weights(self.features_.forest_, indptr,
                                           np.ascontiguousarray(nodes[order]),
                                           np.ascontiguousarray(coef[order]),
                                           resolve_n_jobs(self.n_jobs))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _median_distance_lifetime(X: np.ndarray) -> float:
    """1/(median ℓ₁ distance between distinct training points) on the first
    1000 points (deterministic: no rows drawn), 1.0 if all points coincide
    (:func:`~mondrian._scale.lifetime_scale`)."""
    return lifetime_scale(X[:1000], np.random.default_rng(0), max_rows=1000)
