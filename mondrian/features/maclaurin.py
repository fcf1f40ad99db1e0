"""Random Maclaurin features (Kar & Karnick 2012) for dot-product kernels.

A dot-product kernel k(x, y) = f(⟨x, y⟩) = Σₙ aₙ⟨x, y⟩ⁿ with aₙ ≥ 0
(Schoenberg's theorem; Kar & Karnick slides, "structure theorems") is an
expectation of rank-one kernels: draw a degree N with P(N = n) = qₙ and N
independent Rademacher vectors w₁…w_N ∈ {±1}^D; then
Z(x) = √(a_N / q_N) Π_{j ≤ N} w_jᵀx satisfies E[Z(x) Z(y)] = f(⟨x, y⟩),
because E[w wᵀ] = I.  Averaging m such features gives the map
φ(x) = m^{-½}(Z₁(x), …, Z_m(x)) (DESIGN.md §6).
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (check_array_input, check_bool, check_coefficients, check_int,
                          check_positive_float, check_random_generator)

__all__ = ["RandomMaclaurinFeatures", "maclaurin_coefficients"]

_KERNELS = ("exponential", "polynomial", "custom")


def maclaurin_coefficients(kernel: str, n_terms: int, *, degree: int | None = None,
                           scale: float = 1.0, coefficients=None) -> np.ndarray:
    """The Maclaurin coefficients a₀ … a_{n_terms-1} of a dot-product kernel.

    Parameters
    ----------
    kernel : {'exponential', 'polynomial', 'custom'}
        'exponential': f(t) = exp(t / s), aₙ = 1 / (n! sⁿ).
        'polynomial': f(t) = (1 + t / s)^q, aₙ = C(q, n) / sⁿ (0 for n > q).
        'custom': aₙ = ``coefficients[n]`` (0 beyond their length).
    n_terms : int
        Number of coefficients returned (≥ 1).
    degree : int, optional
        q ≥ 0 of the polynomial kernel (required for it).
    scale : float, default=1.0
        s > 0.
    coefficients : array-like, optional
        The custom coefficients.

    Returns
    -------
    ndarray of shape (n_terms,)
    """
    n_terms = check_int(n_terms, "n_terms")
    n = np.arange(n_terms)
    if kernel == "custom":
        a = check_coefficients(coefficients)
        out = np.zeros(n_terms)
        k = min(n_terms, a.shape[0])
        out[:k] = a[:k]
        return out
    scale = check_positive_float(scale, "scale")
    if kernel == "exponential":
        # 1/(n! sⁿ) in log space, so that large n underflow to 0 cleanly.
        log_a = -np.array([math.lgamma(k + 1.0) for k in n]) - n * math.log(scale)
        return np.exp(log_a)
    if kernel == "polynomial":
        if degree is None:
            raise ValueError("degree is required for kernel='polynomial'")
        q = check_int(degree, "degree", minimum=0)
        return np.array([math.comb(q, int(k)) / scale**int(k) if k <= q else 0.0 for k in n])
    raise ValueError(f"kernel must be one of {_KERNELS}, got {kernel!r}")


class RandomMaclaurinFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Maclaurin features of a dot-product kernel f(⟨x, y⟩) = Σ aₙ⟨x, y⟩ⁿ.

    Each of the ``n_components`` features draws a degree N ≥ 0 with
    P(N = n) = (1 - 1/p) p⁻ⁿ, which for the default p = 2 is Kar & Karnick's
    1/p^{n+1} (for other p their 1/p^{n+1} does not sum to one and is
    normalised here), and is √(a_N / P(N)) Π_{j≤N} w_jᵀx with Rademacher
    w_j.  Then φ(x)ᵀφ(y) is an unbiased estimate of f(⟨x, y⟩) for every
    pair of points.

    With ``h01=True`` (the "H0/1" variant of the slides' table) the degrees
    0 and 1 are kept exactly, √a₀ and √a₁·x, and the random features cover
    only the degrees N ≥ 2, drawn with P(N = n) = (1 - 1/p) p^{-(n-2)}:
    the output is [√a₀, √a₁ x, m^{-½} Z₁(x), …, m^{-½} Z_m(x)], of width
    1 + D + m, still unbiased, with no variance from the low degrees.

    Features of degree n scale like ‖x‖ⁿ, so inputs are best scaled to
    norms of about one (e.g. ``sklearn.preprocessing.Normalizer``).

    Parameters
    ----------
    kernel : {'exponential', 'polynomial', 'custom'}, default='exponential'
        'exponential': f(t) = exp(t / s) with s = ``scale`` (the slides'
        σ²).  'polynomial': f(t) = (1 + t / s)^q with q = ``degree``.
        'custom': f(t) = Σ ``coefficients[n]`` tⁿ.
    degree : int or None, default=None
        q ≥ 0 for the polynomial kernel; must be None for the others.
    scale : float, default=1.0
        s > 0 (exponential and polynomial kernels).
    coefficients : array-like or None, default=None
        a₀, …, a_K ≥ 0 for ``kernel='custom'``; must be None otherwise.
    n_components : int, default=100
        Number m of random features.
    h01 : bool, default=False
        Keep degrees 0 and 1 exactly (H0/1).
    p : float, default=2.0
        Parameter p > 1 of the geometric degree distribution.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the degrees and projections.

    Attributes
    ----------
    degrees_ : ndarray of int64, shape (n_components,)
        The sampled degrees N_i.
    projections_ : ndarray of shape (``sum(degrees_)``, n_features)
        The Rademacher vectors, feature by feature (rows of feature i:
        ``proj_offsets_[i]:proj_offsets_[i+1]``).
    proj_offsets_ : ndarray of int64, shape (n_components + 1,)
    weights_ : ndarray of shape (n_components,)
        √(a_N / (P(N) m)) per feature.
    coefficients_ : ndarray
        aₙ for n = 0 … max(``degrees_``, 1).
    n_features_in_ : int

    See Also
    --------
    mondrian.exponential_kernel, mondrian.polynomial_kernel,
    mondrian.dot_product_kernel : the exact kernels.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomMaclaurinFeatures
    >>> X = np.random.default_rng(0).normal(size=(4, 3)) / 3
    >>> rm = RandomMaclaurinFeatures(n_components=20, h01=True, random_state=0)
    >>> rm.fit_transform(X).shape
    (4, 24)
    """

    def __init__(self, kernel: str = "exponential", degree: int | None = None,
                 scale: float = 1.0, coefficients=None, n_components: int = 100,
                 h01: bool = False, p: float = 2.0, random_state=None):
        self.kernel = kernel
        self.degree = degree
        self.scale = scale
        self.coefficients = coefficients
        self.n_components = n_components
        self.h01 = h01
        self.p = p
        self.random_state = random_state

    def _check_params(self) -> tuple[int, float, bool]:
        if self.kernel not in _KERNELS:
            raise ValueError(f"kernel must be one of {_KERNELS}, got {self.kernel!r}")
        if self.kernel == "custom":
            if self.coefficients is None:
                raise ValueError("kernel='custom' requires coefficients")
            check_coefficients(self.coefficients)
        elif self.coefficients is not None:
            raise ValueError(f"coefficients are only used with kernel='custom', "
                             f"not kernel={self.kernel!r}")
        if self.kernel == "polynomial":
            if self.degree is None:
                raise ValueError("kernel='polynomial' requires degree")
            check_int(self.degree, "degree", minimum=0)
        elif self.degree is not None:
            raise ValueError(f"degree is only used with kernel='polynomial', "
                             f"not kernel={self.kernel!r}")
        if self.kernel != "custom":
            check_positive_float(self.scale, "scale")
        m = check_int(self.n_components, "n_components")
        p = check_positive_float(self.p, "p")
        if p <= 1.0:
            raise ValueError(f"p must be > 1, got {p!r}")
        return m, p, check_bool(self.h01, "h01")

    def degree_probabilities(self, n_max: int) -> np.ndarray:
        """P(N = n) for n = 0 … n_max of the sampled degrees (0 below 2 with h01)."""
        _, p, h01 = self._check_params()
        n_max = check_int(n_max, "n_max", minimum=0)
        n = np.arange(n_max + 1, dtype=np.float64)
        low = 2 if h01 else 0
        out = (1.0 - 1.0 / p) * p ** -(n - low)
        out[:low] = 0.0
        return out

    def fit(self, X, y=None) -> "RandomMaclaurinFeatures":
        """Draw degrees and Rademacher projections for X's dimension.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Only its number of columns is used (and its validity checked).
        y : ignored

        Returns
        -------
        self
        """
        m, p, h01 = self._check_params()
        X = check_array_input(self, X, reset=True)
        D = X.shape[1]
        rng = check_random_generator(self.random_state)
        low = 2 if h01 else 0
        # numpy's geometric counts trials to the first success (≥ 1).
        degrees = rng.geometric(1.0 - 1.0 / p, size=m).astype(np.int64) - 1 + low
        offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(degrees, out=offsets[1:])
        signs = rng.integers(0, 2, size=(int(offsets[-1]), D), dtype=np.int8)
        projections = 2.0 * signs - 1.0
        n_max = int(max(degrees.max(), 1))
        a = maclaurin_coefficients(self.kernel, n_max + 1, degree=self.degree,
                                   scale=self.scale, coefficients=self.coefficients)
        q = self.degree_probabilities(n_max)
        self.degrees_ = degrees
        self.projections_ = projections
        self.proj_offsets_ = offsets
        self.coefficients_ = a
        self.weights_ = np.sqrt(a[degrees] / (q[degrees] * m))
        return self

    def transform(self, X) -> np.ndarray:
        """Feature matrix of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components) or, with ``h01``,
        (n_samples, 1 + n_features + n_components)
        """
        check_is_fitted(self, "degrees_")
        X = check_array_input(self, X, reset=False)
        Z = self._random_part(X)
        if not self.h01:
            return Z
        a = self.coefficients_
        out = np.empty((X.shape[0], 1 + X.shape[1] + Z.shape[1]))
        out[:, 0] = np.sqrt(a[0])
        np.multiply(X, np.sqrt(a[1]), out=out[:, 1:1 + X.shape[1]])
        out[:, 1 + X.shape[1]:] = Z
        return out

    def _random_part(self, X: np.ndarray) -> np.ndarray:
        degrees, offsets = self.degrees_, self.proj_offsets_
        n, m = X.shape[0], degrees.shape[0]
        Z = np.empty((n, m))
        positive = degrees > 0
        Z[:, ~positive] = 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            if offsets[-1] > 0:
                proj = X @ self.projections_.T                  # (n, Σ N_i)
                # Product over each feature's block of projections.
                Z[:, positive] = np.multiply.reduceat(proj, offsets[:-1][positive], axis=1)
            Z *= self.weights_
        if not np.all(np.isfinite(Z)):
            raise ValueError("X: the random Maclaurin features (products of up to "
                             f"{int(degrees.max())} projections of X) overflow double "
                             "precision; rescale X")
        return Z

    @property
    def _n_features_out(self) -> int:
        """Number of output columns, for ``get_feature_names_out``."""
        m = self.degrees_.shape[0]
        return 1 + self.n_features_in_ + m if self.h01 else m

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

