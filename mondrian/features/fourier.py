"""Random Fourier features (Rahimi & Recht 2007) for the Laplace and Gaussian kernels.

By Bochner's theorem a shift-invariant kernel k(x - y) is the Fourier
transform of a probability measure p(ω), so for ω ~ p

    k(x - y) = E[cos(ωᵀ(x - y))] = E[cos ωᵀx cos ωᵀy + sin ωᵀx sin ωᵀy],

and with m frequencies the map φ(x) = m^{-½} (cos ω₁ᵀx, sin ω₁ᵀx, …,
cos ω_mᵀx, sin ω_mᵀx) gives an unbiased estimate φ(x)ᵀφ(y) of k(x, y), for
every pair of points (Balog et al. 2016, Sec. 8.1 use it as the Laplace
baseline; DESIGN.md §6).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._ext._fourier import cos_sin_pairs
from .._scale import length_scale_median, lifetime_scale
from .._validation import (all_finite, check_array_input, check_auto_or, check_int,
                           check_length_scales, check_positive_float, check_random_generator)

__all__ = ["RandomFourierFeatures"]

_KERNELS = ("laplace", "gaussian")


class RandomFourierFeatures(TransformerMixin, BaseEstimator):
    """Random Fourier features of the ℓ₁ Laplace or the Gaussian (ARD) kernel.

    ``fit`` draws ``n_components`` frequencies ω_j; ``transform`` returns
    the dense matrix with columns ``2j, 2j+1`` = cos ω_jᵀx / √m,
    sin ω_jᵀx / √m, so that φ(x)ᵀφ(y) = m⁻¹ Σ_j cos ω_jᵀ(x - y) is an
    unbiased estimate of the kernel for any x, y (also points never seen in
    ``fit``; from the data, only the input dimension and, with the default
    ``'auto'`` width, the kernel's width are learned).

    * ``kernel='laplace'``: k(x, y) = exp(-λ‖x - y‖₁), whose spectral
      measure is a product of Cauchy distributions: ω_d ~ Cauchy(0, λ)
      independently per dimension (the Fourier transform of e^{-λ|t|} is
      the Cauchy density λ / (π(λ² + ω²))).  This is the kernel of the
      Mondrian kernel paper (Balog et al. 2016, Sec. 3 and 8.1).
    * ``kernel='gaussian'``: k(x, y) = exp(-½ Σ_d (x_d - y_d)² / ℓ_d²);
      ω ~ N(0, diag(ℓ)⁻²).

    Difference to scikit-learn's ``RBFSampler``: there ``n_components``
    counts output columns, each √(2/m) cos(ω_jᵀx + b_j) with its own
    frequency and a random phase b_j ~ U[0, 2π).  Here ``n_components``
    counts *frequencies* and each gives a cos/sin pair without phase, so the
    output has ``2 * n_components`` columns.  Both are unbiased; the pair
    form has lower variance per frequency (its kernel estimate is exactly
    shift invariant), and ``RBFSampler`` covers only the Gaussian kernel
    with a scalar length scale (``gamma = 1 / (2ℓ²)``).

    Parameters
    ----------
    kernel : {'laplace', 'gaussian'}, default='laplace'
        The kernel to approximate.
    lifetime : float or 'auto', default='auto'
        λ > 0 of the Laplace kernel (the inverse width; the Mondrian kernel's
        lifetime).  'auto': the data's scale λ₀ = 1/(median ℓ₁ distance
        between rows of X) (:func:`~mondrian._scale.lifetime_scale`, on at
        most 1000 rows drawn from ``random_state`` after the frequencies),
        at which a typical pair of points has kernel e⁻¹, as
        :class:`~mondrian.MondrianFeatures` does; a fixed number does not
        follow the units of X.  Used only with ``kernel='laplace'``.
    length_scale : float, array-like of shape (n_features,) or 'auto', default='auto'
        ℓ > 0 of the Gaussian kernel, shared or per dimension.  'auto': the
        median ℓ₂ distance between rows of X (the "median heuristic",
        :func:`~mondrian._scale.length_scale_median`, on at most 1000 rows
        drawn after the frequencies), at which a typical pair has kernel
        e^{-½}.  Used only with ``kernel='gaussian'``.
    n_components : int, default=100
        Number m of frequencies; the output has 2m columns.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the frequencies.

    Attributes
    ----------
    frequencies_ : ndarray of shape (n_features, n_components)
        The frequencies ω_j as columns.
    lifetime_ : float
        The Laplace kernel's λ (``kernel='laplace'`` only).
    length_scale_ : ndarray of shape (n_features,)
        The Gaussian kernel's ℓ per dimension (``kernel='gaussian'`` only).
    n_features_in_ : int
        Input dimension D.

    See Also
    --------
    mondrian.laplace_kernel, mondrian.gaussian_kernel :
        the exact kernels.
    sklearn.kernel_approximation.RBFSampler : the Gaussian case with random phases.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomFourierFeatures
    >>> X = np.random.default_rng(0).random((5, 3))
    >>> rff = RandomFourierFeatures(lifetime=2.0, n_components=50, random_state=0)
    >>> rff.fit_transform(X).shape
    (5, 100)
    """

    def __init__(self, kernel: str = "laplace", lifetime: float | str = "auto",
                 length_scale="auto",
                 n_components: int = 100, random_state=None):
        self.kernel = kernel
        self.lifetime = lifetime
        self.length_scale = length_scale
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, X, y=None) -> "RandomFourierFeatures":
        """Draw the frequencies for data of X's dimension.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Its number of columns, and with an ``'auto'`` width the
            distances between its rows.
        y : ignored

        Returns
        -------
        self
        """
        if self.kernel not in _KERNELS:
            raise ValueError(f"kernel must be one of {_KERNELS}, got {self.kernel!r}")
        m = check_int(self.n_components, "n_components")
        X = check_array_input(self, X, reset=True)
        D = X.shape[1]
        rng = check_random_generator(self.random_state)
        # Validated with either kernel, though the Gaussian one ignores it.
        lam = check_auto_or(self.lifetime, "lifetime", check_positive_float,
                            "a finite number > 0")
        # The standard draws come first and an 'auto' width's rows after
        # them, so that 'auto' gives the frequencies of its value passed as
        # a number.
        with np.errstate(over="ignore"):
            if self.kernel == "laplace":
                C = rng.standard_cauchy((D, m))
                if lam == "auto":
                    lam = lifetime_scale(X, rng)
                W = lam * C
                name = "lifetime"
            else:
                ls = check_auto_or(self.length_scale, "length_scale",
                                   lambda value, name: check_length_scales(value, D, name),
                                   "a positive number or an array of them")
                Z = rng.standard_normal((D, m))
                if isinstance(ls, str):
                    ls = np.full(D, length_scale_median(X, rng))
                W = Z / ls[:, None]
                name = "length_scale"
        if not np.all(np.isfinite(W)):
            small, only = (("large", "lifetime * X") if name == "lifetime"
                           else ("small", "X / length_scale"))
            raise ValueError(f"{name} is so {small} that frequencies overflow double "
                             f"precision; rescale X and {name} together (the kernel "
                             f"depends on {only} only)")
        # The width of this fit's kernel only (a refit with the other
        # kernel drops the earlier one's).
        self.__dict__.pop("length_scale_" if name == "lifetime" else "lifetime_", None)
        if name == "lifetime":
            self.lifetime_ = lam
        else:
            self.length_scale_ = ls
        self.frequencies_ = W
        return self

    def transform(self, X) -> np.ndarray:
        """Feature matrix: columns 2j, 2j+1 = cos, sin of ω_jᵀx, scaled by 1/√m.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2 * n_components), float64
        """
        check_is_fitted(self, "frequencies_")
        X = check_array_input(self, X, reset=False)
        W = self.frequencies_
        m = W.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            proj = np.ascontiguousarray(X @ W)
        if not all_finite(proj):
            raise ValueError("X: the projections of X on the frequencies overflow double "
                             "precision (X is too large for the kernel's scale); rescale X")
        # One shared range reduction for cos and sin, in C (_ext/c/fourier.c).
        return cos_sin_pairs(proj, 1.0 / np.sqrt(m))

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output names ``randomfourierfeatures{cos,sin}{j}``."""
        check_is_fitted(self, "frequencies_")
        m = self.frequencies_.shape[1]
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{f}{j}" for j in range(m) for f in ("cos", "sin")],
                          dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
