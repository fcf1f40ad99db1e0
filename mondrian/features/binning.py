"""Random binning features (Rahimi & Recht 2007) for the ℓ₁ Laplace kernel.

A random grid with pitch δ_d ~ Gamma(2, scale 1/λ) and shift u_d ~ U[0, δ_d)
in each dimension puts two points into the same bin with probability
Π_d max(0, 1 - |x_d - y_d| / δ_d) averaged over δ_d, which is
Π_d exp(-λ|x_d - y_d|) = exp(-λ‖x - y‖₁) (Rahimi & Recht 2007, Sec. 4; the
Gamma(2, 1/λ) density δ λ² e^{-λδ} is δ k''(δ) for k(t) = e^{-λt}).  With P
independent grids and the indicator of the occupied bin scaled by 1/√P,
φ(x)ᵀφ(y) is an unbiased estimate of the Laplace kernel (Balog et al. 2016,
Sec. 8.1, compare it with the Mondrian kernel; DESIGN.md §6).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._ext._binning import binning_fit, binning_lookup
from .._scale import lifetime_scale
from .._validation import (check_array_input, check_auto_or, check_int, check_positive_float,
                          check_random_generator, resolve_n_jobs)

__all__ = ["RandomBinningFeatures"]


class RandomBinningFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Sparse random binning features of the Laplace kernel exp(-λ‖x - y‖₁).

    ``fit`` draws ``n_grids`` random grids and numbers the bins that the
    training points occupy, grid by grid; bins are identified by their full
    integer coordinates, so distinct bins never share a column (no hashing
    collisions).  The output has one column per occupied (grid, bin) pair,
    and grid g's bins form a contiguous block of columns.

    Every training point has exactly ``n_grids`` stored entries 1/√P.  A new
    point gets 1/√P in each grid where its bin is occupied by some training
    point, and nothing (a zero) in a grid where its bin was never seen: no
    training point shares that bin, so the product with every training
    point's features is still exactly the bin-sharing indicator, and
    ``Φ(X_train) φ(x)ᵀ`` remains an unbiased estimate of
    exp(-λ‖x_train - x‖₁) for any x.  (For two new points sharing an unseen
    bin the estimate misses that bin: the new/new kernel is biased low.)

    Parameters
    ----------
    lifetime : float or 'auto', default='auto'
        λ > 0, the inverse width of the Laplace kernel (the Mondrian
        kernel's lifetime); grid pitches are Gamma(2, scale 1/λ).  'auto':
        the data's scale λ₀ = 1/(median ℓ₁ distance between rows of X)
        (:func:`~mondrian._scale.lifetime_scale`, on at most 1000 rows drawn
        from ``random_state`` after the grids), at which a typical pair of
        points has kernel e⁻¹, as :class:`~mondrian.MondrianFeatures` does;
        a fixed number does not follow the units of X.
    n_grids : int, default=100
        Number P of independent grids (non-zeros per training row).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the grids.
    n_jobs : int or None, default=None
        Threads over grids (None or -1: all cores; capped at the cores
        available).  Results do not depend on it.

    Attributes
    ----------
    lifetime_ : float
        The kernel's λ (the value of ``lifetime``, or the data's scale).
    pitch_ : ndarray of shape (n_grids, n_features)
        The pitches δ_gd.
    shift_ : ndarray of shape (n_grids, n_features)
        The shifts u_gd ∈ [0, δ_gd).
    bin_offsets_ : ndarray of shape (n_grids + 1,)
        Grid g's bins are columns ``bin_offsets_[g]:bin_offsets_[g+1]``.
    n_bins_ : int
        Number of columns (occupied bins over all grids).
    n_features_in_ : int
        Input dimension D.

    See Also
    --------
    mondrian.MondrianFeatures : the Mondrian kernel, a data-adapted
        partition approximating the same kernel.
    mondrian.laplace_kernel : the exact kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomBinningFeatures
    >>> X = np.random.default_rng(0).random((100, 2))
    >>> rb = RandomBinningFeatures(lifetime=5.0, n_grids=30, random_state=0)
    >>> Phi = rb.fit_transform(X)
    >>> Phi.nnz
    3000
    """

    def __init__(self, lifetime: float | str = "auto", n_grids: int = 100, random_state=None,
                 n_jobs: int | None = None):
        self.lifetime = lifetime
        self.n_grids = n_grids
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y=None) -> "RandomBinningFeatures":
        """Draw the grids and number the bins occupied by X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        self._fit(X)
        return self

    def fit_transform(self, X, y=None, **fit_params) -> sp.csr_array:
        """Fit on X and return its features; equal to ``fit(X).transform(X)``,
        without the second lookup."""
        codes = self._fit(X)
        return self._csr(codes + self.bin_offsets_[:-1, None])

    def _fit(self, X) -> np.ndarray:
        lam = check_auto_or(self.lifetime, "lifetime", check_positive_float,
                            "a finite number > 0")
        P = check_int(self.n_grids, "n_grids")
        n_threads = resolve_n_jobs(self.n_jobs)
        X = check_array_input(self, X, reset=True)
        rng = check_random_generator(self.random_state)
        D = X.shape[1]
        # The standard draws first and an 'auto' lifetime's rows after
        # them, so that 'auto' gives the grids of its value passed as a
        # number (Gamma(2, s) is s times the standard draw, bitwise).
        unit_pitch = rng.standard_gamma(2.0, size=(P, D))
        unit_shift = rng.random((P, D))
        if lam == "auto":
            lam = lifetime_scale(X, rng)
        with np.errstate(over="ignore"):
            scale = 1.0 / lam
        if not np.isfinite(scale):
            raise ValueError(f"lifetime={lam!r} is so small that the grid pitch 1/lifetime "
                             "overflows double precision; use lifetime >= 1e-300 (at such "
                             "lifetimes every point shares one bin: the kernel is 1)")
        with np.errstate(over="ignore", under="ignore"):
            pitch = scale * unit_pitch
        # Gamma draws are > 0 but can underflow to 0 for extreme λ, and
        # overflow to inf for λ near the smallest normal double.
        if not np.all(pitch > 0):
            raise ValueError(f"lifetime={lam!r} is so large that grid pitches underflow to 0")
        if not np.all(np.isfinite(pitch)):
            raise ValueError(f"lifetime={lam!r} is so small that grid pitches overflow; "
                             "use a larger lifetime")
        shift = unit_shift * pitch
        inv_pitch = 1.0 / pitch
        rep, n_bins, codes = binning_fit(X, inv_pitch, shift, n_threads)
        offsets = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(n_bins, out=offsets[1:])
        mask = np.arange(X.shape[0])[None, :] < n_bins[:, None]
        self.lifetime_ = lam
        self.pitch_ = pitch
        self.shift_ = shift
        self.bin_offsets_ = offsets
        self.n_bins_ = int(offsets[-1])
        self._inv_pitch = inv_pitch
        self._rep = np.ascontiguousarray(rep[mask])
        self._X_fit = X
        return codes

    def transform(self, X) -> sp.csr_array:
        """Sparse features of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scipy.sparse.csr_array of shape (n_samples, n_bins_), float64
            Entries 1/√P at the occupied bins of the row's cells, sorted by
            column; at most ``n_grids`` per row (exactly that many for rows
            whose every bin was seen in ``fit``).
        """
        check_is_fitted(self, "pitch_")
        X = check_array_input(self, X, reset=False)
        codes = binning_lookup(self._X_fit, X, self._inv_pitch, self.shift_, self._rep,
                               self.bin_offsets_, resolve_n_jobs(self.n_jobs))
        return self._csr(codes)

    def _csr(self, codes: np.ndarray) -> sp.csr_array:
        """CSR matrix from (P, n) global bin numbers, -1 for no entry."""
        P, n = codes.shape
        cols = codes.T
        idx_dtype = np.int32 if max(self.n_bins_, n * P) < 2**31 - 1 else np.int64
        scale = 1.0 / np.sqrt(P)
        if codes.size and codes.min() >= 0:
            indices = np.ascontiguousarray(cols, dtype=idx_dtype).reshape(-1)
            indptr = np.arange(0, n * P + 1, P, dtype=idx_dtype)
        else:
            keep = cols >= 0
            indices = cols[keep].astype(idx_dtype)
            indptr = np.zeros(n + 1, dtype=idx_dtype)
            np.cumsum(keep.sum(axis=1), out=indptr[1:])
        data = np.full(indices.shape[0], scale)
        out = sp.csr_array((data, indices, indptr), shape=(n, self.n_bins_), copy=False)
        out.has_sorted_indices = True
        return out

    @property
    def _n_features_out(self) -> int:
        """Number of output columns, for ``get_feature_names_out``."""
        return self.n_bins_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
