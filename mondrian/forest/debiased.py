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
conditional Mondrian (``c/mforest.h``, Balog et al. Sec. 2.4) gives the
probability that it is not,

.. math::

    P_b(x) = \prod_{j \in \text{path}} e^{-\Delta_j \eta_j(x)},

η_j(x) the ℓ₁ distance of x to node j's data box and Δ_j the time node j
lives before λ (``MondrianFeatures.transform`` returns P_b(x)/√B).  With
probability P_b(x) the cell of x holds exactly the points of its leaf
a_b(x); otherwise it holds none.  We average the estimator over this part of
the tree that the data do not determine (a Rao-Blackwellisation over tree
randomness: same expectation, less Monte-Carlo noise) and give an empty cell
the mean of all targets ȳ, as the authors' reference code does (CKU's
0/0 = 0 would pull predictions outside the data towards 0, and without it
the weights below sum to 1, so constants are reproduced exactly).  For x
inside every box of its path -- training points, and almost every point
inside dense data -- P_b(x) = 1 and nothing changes.  So

.. math::

    \hat\mu_\lambda(x) = \sum_i w_i^\lambda(x) Y_i, \qquad
    w_i^\lambda(x) = \frac1B \sum_b \Big[ P_b(x)
        \frac{1\{X_i \in a_b(x)\}}{N_{a_b(x)}} + \frac{1 - P_b(x)}{n} \Big].

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
forest is a Mondrian forest of lifetime a_r λ, so the bias expansion -- an
expectation over trees, linear in r -- and hence the jackknife are
unchanged.  The variance is not the same number as with independent
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
Σ̂(x) λ^d/n).  The interval of level 1 - α is
μ̂^{(J)}(x) ± z_{1-α/2} (σ̂²(x) Σ_i w_i(x)²)^{1/2}.  The weights of x live on
the union of its B(J + 1) leaves plus the constant (1 - P_b)/(Bn) part, so
Σ_i w_i² = Σ_i s_i² + 2k Σ_i s_i + n k², s the sparse part and k the
constant: a sparse product of one-hot cell matrices, Z_test D⁻¹ Z_trainᵀ
stacked over lifetimes, computed in row blocks of bounded size.

The lifetime (CKU's tuning section).  The asymptotic integrated MSE of the
forest (J = 0) is ∫ (B_1(x)²/λ⁴ + (λ^d/n) σ²(x) V_d / f(x)) f(x) dx, with
V_d = ((4 - 4 log 2)/3)^d the variance constant of CKU's central limit
theorem (the integral ∫ (E[1{u ∈ T(0)}/|T(0)|])² du of a Mondrian cell of
lifetime 1, per dimension).  Its minimiser is

.. math::

    \lambda^{4+d} = \frac{4\, n\, \overline{B_1^2}}{d\, \sigma^2 V_d\, |\mathcal X|},

estimated by CKU's rule of thumb: a global polynomial regression of degree
2J + 4 = 4 in each coordinate separately (no interactions) gives ∂_j²μ at
every training point, B_1 = ½ Σ_j ∂_j²μ (uniform density, mixed terms
dropped), its mean square over the training points, and σ² from the
regression's residuals; |𝒳| is the volume of the data's bounding box.
``lifetime='auto'`` debiases (J = 1) at this λ, optimal for the plain
forest: the debiased bias is O(λ^{-4}), smaller than the standard
deviation ~ (λ^d/n)^{1/2} by n^{-2/(d+4)} -- the undersmoothing that valid
intervals need (robust bias correction).  With ``debias_order=0`` the
intervals at this λ are not valid (bias and standard deviation are of the
same order): they undercover.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._validation import (check_array_input, check_bool, check_fraction, check_int,
                          check_lifetime, check_lifetime_ratios, check_target_scale)
from ..features import MondrianFeatures

__all__ = ["DebiasedMondrianForestRegressor", "jackknife_weights", "forest_variance_constant",
           "aimse_lifetime"]

#: a_r = LIFETIME_RATIO_BASE**r by default.
LIFETIME_RATIO_BASE = 1.5
#: Stored entries of one row block of the sparse weight matrix (bounds the
#: memory of ``predict(..., return_std/return_ci)`` to about 12 bytes each).
BLOCK_NNZ = 1 << 22


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


def aimse_lifetime(X, y) -> float:
    """Rule-of-thumb AIMSE-optimal lifetime of the Mondrian forest (J = 0).

    λ = (4 n mean(B_1²) / (d σ² V_d |𝒳|))^{1/(4+d)} with B_1 = ½ Σ_j ∂_j²μ
    and σ² from a global polynomial regression of degree 4 in every
    coordinate separately (see the module docstring); coordinates with a
    single value are left out (no Mondrian cut ever falls in them), d and
    |𝒳| (the bounding box's volume) are over the others.

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
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    lo = X.min(axis=0)
    extent = X.max(axis=0) - lo
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
    U = (X[:, active] - lo[active]) / extent[active]
    design = np.empty((n, p))
    design[:, 0] = 1.0
    for s in range(1, degree + 1):
        design[:, s::degree] = U**s
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    sigma2 = float(resid @ resid) / (n - p)
    # ∂²/∂x_j² of Σ_s c_js u_j^s, u_j = (x_j - lo_j)/extent_j.
    c = coef[1:].reshape(d, degree)
    second = (2.0 * c[:, 1] + 6.0 * c[:, 2] * U + 12.0 * c[:, 3] * U**2) / extent[active]**2
    bias = 0.5 * second.sum(axis=1)
    curvature = float(np.mean(bias**2))
    volume = float(np.prod(extent[active]))
    if not (sigma2 > 0 and curvature > 0 and np.isfinite(volume) and volume > 0):
        raise ValueError(f"the lifetime rule has no finite answer here (residual variance "
                         f"{sigma2:.3g}, mean squared curvature {curvature:.3g}, box volume "
                         f"{volume:.3g}); pass a lifetime")
    ratio = 4.0 * n * curvature / (d * sigma2 * forest_variance_constant(d) * volume)
    return float(ratio ** (1.0 / (4 + d)))


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
        points) instead, recorded in ``lifetime_rule_``.
    debias_order : int, default=1
        J ≥ 0: the number of bias terms removed (0: the plain forest).
    lifetime_ratios : array-like of shape (J + 1,) or None, default=None
        The multipliers a_r (distinct, > 0, a_0 = 1); None: a_r = 1.5^r.
    random_state : None, int, SeedSequence or Generator, default=None
        Randomness of the trees (each tree has its own stream).
    n_jobs : int or None, default=None
        Threads for growing the trees and looking points up (results do not
        depend on it).

    Attributes
    ----------
    features_ : MondrianFeatures
        The trees, grown to ``max(lifetime_ratios_) * lifetime_``.
    lifetime_ : float
        λ.
    lifetime_rule_ : str
        How λ was set: 'given', 'aimse' or 'median distance'.
    lifetime_ratios_ : ndarray of shape (J + 1,)
        a_r.
    jackknife_weights_ : ndarray of shape (J + 1,)
        ω_r.
    y_mean_ : float
        ȳ, the prediction of a cell without training points.
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
                 lifetime_ratios=None, random_state=None, n_jobs: int | None = None):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.debias_order = debias_order
        self.lifetime_ratios = lifetime_ratios
        self.random_state = random_state
        self.n_jobs = n_jobs

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
        if self.lifetime_ratios is None:
            ratios = LIFETIME_RATIO_BASE ** np.arange(J + 1, dtype=np.float64)
        else:
            ratios = check_lifetime_ratios(self.lifetime_ratios, J + 1)
        if isinstance(self.lifetime, str):
            if self.lifetime != "auto":
                raise ValueError(f"lifetime must be 'auto' or a number >= 0, "
                                 f"got {self.lifetime!r}")
            lifetime = None
        else:
            lifetime = check_lifetime(self.lifetime)
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64)
        check_target_scale(y)
        if lifetime is None:
            try:
                lifetime, rule = aimse_lifetime(X, y), "aimse"
            except ValueError:
                lifetime, rule = _median_distance_lifetime(X), "median distance"
        else:
            rule = "given"
        self.lifetime_ = float(lifetime)
        self.lifetime_rule_ = rule
        self.lifetime_ratios_ = ratios
        self.jackknife_weights_ = jackknife_weights(ratios)
        self.features_ = MondrianFeatures(
            n_trees=n_trees, lifetime=float(ratios.max()) * self.lifetime_,
            random_state=self.random_state, n_jobs=self.n_jobs).fit(X)
        self.y_mean_ = float(np.mean(y))
        self._yc = y - self.y_mean_
        self._y2_mean = float(np.mean(self._yc**2))
        self._leaves = [self._leaf_stats(lam) for lam in self._lifetimes()]
        return self

    def _lifetimes(self) -> np.ndarray:
        # min() guards a_r λ against exceeding the grown lifetime by rounding.
        return np.minimum(self.lifetime_ratios_ * self.lifetime_, self.features_.lifetime_)

    def _leaf_stats(self, lam: float):
        """Leaf counts N, means of (y - ȳ) and of (y - ȳ)² at lifetime λ, and
        each training point's leaf in every tree (n, B)."""
        Phi = self.features_.training_features(lam)
        n, B = Phi.shape[0], self.features_.forest_.n_trees
        cols = np.asarray(Phi.indices, dtype=np.int64).reshape(n, B)
        n_cols = Phi.shape[1]
        count = np.bincount(cols.ravel(), minlength=n_cols).astype(np.float64)
        yc = np.repeat(self._yc, B)
        mean = np.bincount(cols.ravel(), weights=yc, minlength=n_cols) / count
        sq = np.bincount(cols.ravel(), weights=yc**2, minlength=n_cols) / count
        return count, mean, sq, cols

    def _lookup(self, X: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """Leaf column (m, B) and P_b(x) (m, B) of every point in every tree."""
        Phi = self.features_.transform(X, lam)
        m, B = X.shape[0], self.features_.forest_.n_trees
        cols = np.asarray(Phi.indices, dtype=np.int64).reshape(m, B)
        prob = np.asarray(Phi.data).reshape(m, B) * math.sqrt(B)
        return cols, prob

    def predict(self, X, return_std: bool = False, return_ci: bool = False,
                level: float = 0.95):
        """Debiased prediction, its standard error and confidence interval.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points (anywhere; see the module docstring for points outside
            the data).
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
        B = self.features_.forest_.n_trees
        omega = self.jackknife_weights_
        lookups = [self._lookup(X, lam) for lam in self._lifetimes()]
        mean_c = np.zeros(X.shape[0])
        for w, (cols, prob), (_, leaf_mean, _, _) in zip(omega, lookups, self._leaves):
            # An empty cell (probability 1 - P) predicts ȳ, which is 0 centred.
            mean_c += w * np.sum(prob * leaf_mean[cols], axis=1) / B
        mean = mean_c + self.y_mean_
        if not (return_std or return_ci):
            return mean
        std = np.sqrt(self._sigma2(lookups[0]) * self._sum_squared_weights(lookups))
        out = (mean,)
        if return_std:
            out += (std,)
        if return_ci:
            half = ndtri(0.5 + level / 2.0) * std
            out += (np.column_stack([mean - half, mean + half]),)
        return out

    def _sigma2(self, lookup) -> np.ndarray:
        """σ̂²(x) = Σ_i w_i^λ(x)(Y_i - μ̂_λ(x))², from the leaves' first and
        second moments at λ (an empty cell's are those of all targets)."""
        cols, prob = lookup
        _, leaf_mean, leaf_sq, _ = self._leaves[0]
        B = prob.shape[1]
        empty = B - prob.sum(axis=1)
        first = np.sum(prob * leaf_mean[cols], axis=1) / B
        second = (np.sum(prob * leaf_sq[cols], axis=1) + empty * self._y2_mean) / B
        # A weighted variance (weights >= 0 summing to 1): >= 0 but for rounding.
        return np.maximum(second - first**2, 0.0)

    def _sum_squared_weights(self, lookups) -> np.ndarray:
        """Σ_i w_i(x)², w = Σ_r ω_r w^{a_r λ}: the sparse part s through the
        stacked one-hot product Z D⁻¹ Z_trainᵀ in row blocks, plus the
        constant part k = Σ_r ω_r Σ_b (1 - P_b)/(Bn)."""
        n = self._yc.size
        B = lookups[0][1].shape[1]
        m = lookups[0][0].shape[0]
        omega = self.jackknife_weights_
        # Column offsets of the lifetimes in the stacked cell matrices.
        sizes = [leaves[0].size for leaves in self._leaves]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        cols_test = np.hstack([cols + off for (cols, _), off in zip(lookups, offsets)])
        vals_test = np.hstack([w * prob / (B * leaves[0][cols])
                               for w, (cols, prob), leaves in zip(omega, lookups, self._leaves)])
        k = sum(w * (B - prob.sum(axis=1)) for w, (_, prob) in zip(omega, lookups)) / (B * n)
        sum_s = sum(w * prob.sum(axis=1) for w, (_, prob) in zip(omega, lookups)) / B
        # Cells x training points (one-hot, transposed), all lifetimes stacked.
        train_cols = np.hstack([leaves[3] + off for leaves, off in zip(self._leaves, offsets)])
        n_cells = int(offsets[-1])
        width = train_cols.shape[1]
        cells = sp.csr_array((np.ones(train_cols.size), train_cols.ravel(),
                              np.arange(0, train_cols.size + 1, width)),
                             shape=(n, n_cells)).T.tocsr()
        count = np.concatenate([leaves[0] for leaves in self._leaves])
        # Stored entries of a row's product: at most the points of its leaves.
        row_nnz = count[cols_test].sum(axis=1)
        csum = np.cumsum(row_nnz)
        s2 = np.empty(m)
        start = 0
        while start < m:
            limit = (csum[start - 1] if start else 0.0) + BLOCK_NNZ
            stop = max(start + 1, int(np.searchsorted(csum, limit, side="right")))
            rows = stop - start
            Z = sp.csr_array((vals_test[start:stop].ravel(), cols_test[start:stop].ravel(),
                              np.arange(0, rows * cols_test.shape[1] + 1, cols_test.shape[1])),
                             shape=(rows, n_cells))
            S = (Z @ cells).tocsr()
            row_of = np.repeat(np.arange(rows), np.diff(S.indptr))
            s2[start:stop] = np.bincount(row_of, weights=S.data**2, minlength=rows)
            start = stop
        return s2 + 2.0 * k * sum_s + n * k**2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _median_distance_lifetime(X: np.ndarray) -> float:
    """1/(median ℓ₁ distance between distinct training points) on up to 1000
    points (the first ones: deterministic), or 0 if all points coincide."""
    sub = X[:1000]
    dist = np.abs(sub[:, None, :] - sub[None, :, :]).sum(axis=2)
    dist = dist[np.triu_indices(sub.shape[0], 1)]
    dist = dist[dist > 0]
    return 0.0 if dist.size == 0 else float(1.0 / np.median(dist))
