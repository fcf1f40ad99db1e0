"""The data's own scale of a kernel's width: the median distance heuristic.

A translation-invariant kernel is a function of ‖x - x'‖/width, so the data
fix the natural width: the median distance between two of its points, at
which a typical pair has a kernel value of e⁻¹ (Laplace) or e^{-½}
(Gaussian).  Every 'auto' width of the package starts from here:

* :func:`lifetime_scale` -- λ₀ = 1/median ℓ₁ distance, the Laplace kernel
  exp(-λ‖x - x'‖₁) of the Mondrian kernel, random binning and the Laplace
  Fourier features, and the start of every lifetime search;
* :func:`length_scale_median` -- ℓ₀ = median ℓ₂ distance, the Gaussian
  kernel exp(-‖x - x'‖₂²/(2ℓ²)) of the Gaussian Fourier features (Gretton
  et al.'s "median heuristic").

Both take the median over the pairs of at most ``max_rows`` rows drawn with
the caller's generator, leaving out pairs at distance 0 (repeated rows).
"""
from __future__ import annotations

import numpy as np
import scipy.spatial.distance

from ._ext import _path

__all__ = ["lifetime_scale", "length_scale_median", "feature_std", "resolve_feature_scale"]

#: Rows of X (drawn at random when there are more) whose pairs enter the median.
MEDIAN_ROWS = 1000


def _rows(X: np.ndarray, rng: np.random.Generator, max_rows: int) -> np.ndarray:
    """X, or ``max_rows`` of its rows drawn without replacement with ``rng``."""
    n = X.shape[0]
    return X if n <= max_rows else X[rng.choice(n, max_rows, replace=False)]


def _median_positive(dist: np.ndarray) -> float | None:
    """Median of the positive entries of ``dist`` (overwritten), None if none.

    One in-place partition of all of them (np.median partitions around both
    middle positions, ten times slower on 1000 rows' pairs; dropping the
    zeros first copied the array, a third of the time): the z zeros sort
    first, so the positive entries' k-th smallest is the (z + k)-th of all.
    The lower middle of an even count is the largest entry left of it
    (positive: k > z; the partition leaves the entries left of k in no
    order, zeros anywhere)."""
    zeros = dist.size - np.count_nonzero(dist)
    m = dist.size - zeros
    if m == 0:
        return None
    k = zeros + m // 2
    dist.partition(k)
    return float(dist[k] if m % 2 else (dist[:k].max() + dist[k]) / 2)


def _inverse(median: float, what: str) -> float:
    """1/median, refused (naming X) where it is not a finite double."""
    with np.errstate(over="ignore"):
        scale = float(1.0 / median)
    if not np.isfinite(scale):
        raise ValueError(
            f"X: the kernel's scale is the median distance between rows of X, and the "
            f"distances are too small for its inverse to be finite (median {median:.3g}: "
            f"subnormal numbers); rescale X or pass {what}")
    return scale


def lifetime_scale(X: np.ndarray, rng: np.random.Generator, max_rows: int = MEDIAN_ROWS,
                   rotation: str | None = None, scale: np.ndarray | None = None) -> float:
    """λ₀ = 1/median ℓ₁ distance between distinct pairs of rows of X.

    At most ``max_rows`` rows, drawn with ``rng``, enter the median.  Pairs
    at distance 0 (repeated rows) are left out; if every row is the same,
    1.0 is returned (the kernel is then constant for every λ).

    With ``rotation='uniform'`` the kernel is E_v[exp(-λ‖x - x'‖₂‖v‖₁)]
    (:func:`~mondrian.kernels.rotated_laplace_kernel`), the average over
    rotations of the ℓ₁ distance being ‖x - x'‖₂·E‖v‖₁: the distance of a
    pair is that instead.

    With a per-feature ``scale`` l (:func:`resolve_feature_scale`) the
    distances are those of the rows x / l, the coordinates the trees see.
    """
    rows = _rows(X, rng, max_rows)
    if scale is not None:
        rows = rows / scale
    if rotation is None:
        # scipy's pdist(rows, 'cityblock') bitwise, three times faster (c/scale.h)
        dist = _path.pair_l1(np.ascontiguousarray(rows, dtype=np.float64))
    else:
        from .kernels import sphere_l1_mean
        dist = sphere_l1_mean(X.shape[1]) * scipy.spatial.distance.pdist(rows, metric="euclidean")
    median = _median_positive(dist)
    return 1.0 if median is None else _inverse(median, "a lifetime")


def length_scale_median(X: np.ndarray, rng: np.random.Generator,
                        max_rows: int = MEDIAN_ROWS) -> float:
    """ℓ₀ = median ℓ₂ distance between distinct pairs of rows of X.

    At most ``max_rows`` rows, drawn with ``rng``, enter the median; pairs
    at distance 0 are left out, and 1.0 is returned if every row is the
    same.  A median whose inverse is not a finite double (subnormal
    distances) is refused, as in :func:`lifetime_scale`: the Gaussian
    kernel's frequencies are 1/ℓ.
    """
    rows = _rows(X, rng, max_rows)
    # Distances from rows scaled by a power of two to a largest |entry| in
    # [1/2, 1) (exactly), then scaled back: the squares inside the ℓ₂ norm
    # neither underflow (tiny X would give distance 0) nor overflow.
    top = float(np.max(np.abs(rows))) if rows.size else 0.0
    if top == 0.0:
        return 1.0
    exponent = int(np.frexp(top)[1])
    dist = scipy.spatial.distance.pdist(np.ldexp(rows, -exponent), metric="euclidean")
    median = _median_positive(dist)
    if median is None:
        return 1.0
    median = float(np.ldexp(median, exponent))
    _inverse(median, "a length_scale")
    return median


#: Rows per block of :func:`feature_std` on large X (its temporaries stay
#: O(block x D) instead of O(N x D)).
STD_BLOCK_ROWS = 1 << 16

#: A feature's standard deviation is replaced by its robust estimate
#: IQR/1.349 (the deviation of a normal law with that interquartile range)
#: when it exceeds this many times that estimate: a gross outlier (one value
#: k standard deviations out among n: a ratio of about k/√n, so at n = 1500
#: beyond some 1000 σ) or an extreme tail.  Normal, uniform and exponential
#: features have about 1 to 1.2, log-normal ones 2 (σ = 1), 20 (σ = 2) and
#: 130 (σ = 2.5).  On the raw CPU data (pooled, seeds 0-2, test RMSE in sd
#: of y) the kernel ridge and the forest regressor gave 0.136 and 0.267
#: with plain deviations, 0.142 and 0.146 at 30 (one feature, ratio 94,
#: takes the robust scale), 0.151 and 0.153 at 10 (two): the forest gains
#: from the robust scale of a heavy tail, the kernel ridge a little from the
#: plain one, and both need it against a gross outlier.
HEAVY_TAIL_RATIO = 30.0

#: Fewest rows from which ``feature_scale='auto'`` takes the deviations:
#: below, the inputs stay as given (the deviation of n values has a
#: relative standard error of about 1/√(2n): 50 % at n = 2, 22 % at 10), as
#: for the first small batch of a stream.
AUTO_SCALE_MIN_ROWS = 10

#: Interquartile range of the standard normal law, 2·Φ⁻¹(3/4).
IQR_NORMAL = 1.3489795003921634

#: Rows (evenly strided, no random draw) on which the quartiles are taken.
QUARTILE_ROWS = 1 << 16


def feature_std(X: np.ndarray) -> np.ndarray:
    """Per-feature scale of 'std': the standard deviation of each column of
    X (validated: finite, at least one row; ddof 0), or its robust estimate IQR/1.349 where the deviation is
    more than :data:`HEAVY_TAIL_RATIO` times that; at least half the gap of
    a column of exactly two distinct values; 1 for a constant column.

    One gross outlier inflates a deviation without bound (a value of 10⁹
    among 1500 standard normal ones: 2.6·10⁷), which would shrink the
    feature's other values to nothing; the trees, on x as given, would cut
    the outlier off and then the others as usual.  The quartiles (of at
    most :data:`QUARTILE_ROWS` evenly strided rows) do not move.

    The deviation of a 0/1 indicator of frequency p is √(p(1 - p)): a rare
    indicator (one-hot columns of a rare category) would be stretched to
    the widest feature, 1/√(p(1 - p)) ≈ 10 at p = 0.01, and take the
    trees' cuts and most of the kernel's distance.  At least half the gap,
    no two-valued feature is stretched more than a balanced one (p = 1/2,
    whose deviation is half the gap: unchanged).

    The deviations are :func:`column_std`'s (block by block on large X, a
    column whose squares overflow scaled by a power of two first), so
    every finite X gives finite positive values."""
    return feature_deviations(X)[0]


def feature_deviations(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`feature_std`, :func:`column_std`) of X, the deviations
    computed once: the features' scales and their plain deviations."""
    std = column_std(X)
    n = X.shape[0]
    lo, hi = X.min(axis=0), X.max(axis=0)
    two = hi > lo
    for start in range(0, n, STD_BLOCK_ROWS):
        if not two.any():
            break
        block = X[start:start + STD_BLOCK_ROWS]
        two &= np.all((block == lo) | (block == hi), axis=0)
    return adjust_deviations(std.copy(), quartile_rows(X), lo, hi, two), std


def column_std(X: np.ndarray) -> np.ndarray:
    """The standard deviation (ddof 0) of each column of X (validated:
    finite, at least one row), finite for every finite X: ``np.std(X,
    axis=0)`` up to :data:`STD_BLOCK_ROWS` rows, above the same two passes
    block by block (no temporary of X's size); a column whose squares
    overflow is scaled by a power of two first (exactly) and its
    deviation scaled back."""
    n = X.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        if n <= STD_BLOCK_ROWS:
            std = np.std(X, axis=0)
        else:
            mean = np.mean(X, axis=0)
            squares = np.zeros(X.shape[1])
            for start in range(0, n, STD_BLOCK_ROWS):
                dev = X[start:start + STD_BLOCK_ROWS] - mean
                squares += np.einsum("ij,ij->j", dev, dev)
            std = np.sqrt(squares / n)
    for b in np.flatnonzero(~np.isfinite(std)):
        exponent = int(np.frexp(np.max(np.abs(X[:, b])))[1])
        std[b] = np.ldexp(np.std(np.ldexp(X[:, b], -exponent)), exponent)
    return std


def quartile_rows(X):
    """The rows of X (a numpy or dask array) whose quartiles
    :func:`adjust_deviations` takes: at most :data:`QUARTILE_ROWS`, evenly
    strided (no random draw)."""
    n = X.shape[0]
    return X if n <= QUARTILE_ROWS else X[::-(-n // QUARTILE_ROWS)]


def heavy_tailed(std: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which columns, robust deviations): the columns whose deviation
    ``std`` exceeds :data:`HEAVY_TAIL_RATIO` times the robust IQR/1.349 of
    ``rows`` (:func:`quartile_rows`) -- a gross outlier or an extreme tail
    -- and that robust estimate of every column."""
    with np.errstate(over="ignore", invalid="ignore"):
        q1, q3 = np.percentile(rows, [25.0, 75.0], axis=0)
        robust = (q3 - q1) / IQR_NORMAL
        return np.isfinite(robust) & (robust > 0) & (std > HEAVY_TAIL_RATIO * robust), robust


def adjust_deviations(std: np.ndarray, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      two: np.ndarray) -> np.ndarray:
    """The rules of :func:`feature_std` after the deviations ``std`` (D,
    finite, modified and returned): the robust IQR/1.349 of ``rows``
    (:func:`quartile_rows`) where :func:`heavy_tailed`, at least half the
    gap hi - lo of the columns ``two`` of two values, 1 where nothing is
    positive."""
    heavy, robust = heavy_tailed(std, rows)
    std[heavy] = robust[heavy]
    with np.errstate(over="ignore", invalid="ignore"):
        std[two] = np.maximum(std[two], 0.5 * hi[two] - 0.5 * lo[two])
    std[~(std > 0)] = 1.0
    return std


def auto_feature_scale(feature_scale, n_rows: int, auto_lifetime: bool):
    """``feature_scale`` with 'auto' resolved: 'std' when the lifetime is
    automatic and there are at least :data:`AUTO_SCALE_MIN_ROWS` rows, else
    None; any other value as it is."""
    if isinstance(feature_scale, str) and feature_scale == "auto":
        return "std" if auto_lifetime and n_rows >= AUTO_SCALE_MIN_ROWS else None
    return feature_scale


def resolve_feature_scale(feature_scale, X: np.ndarray,
                          auto_lifetime: bool = False) -> np.ndarray | None:
    """The per-feature divisors l of a ``feature_scale`` parameter, or None.

    'auto': 'std' when the estimator's lifetime is automatic
    (``auto_lifetime``) and X has at least :data:`AUTO_SCALE_MIN_ROWS` rows,
    else None -- a lifetime the user gives is in the units of X, and a few
    rows (the first batch of a stream) do not tell the features' scales.
    None: no scale (the trees cut x itself).  'std': the standard deviation
    of each column of X (:func:`feature_std`: the robust IQR/1.349 past
    :data:`HEAVY_TAIL_RATIO` times it, at least half the gap of a
    two-valued column, 1 for a constant one), so that the Mondrian kernel
    is exp(-λ Σ_b ∣x_b - x'_b∣ / σ_b), the kernel on standardised
    inputs.  Array-like of n_features finite positive
    values: those (per-feature length scales, an ARD Laplace kernel).
    ``X`` must be validated (finite, 2-D).  The scaled points X / l must be
    finite (a tiny divisor must not overflow them)."""
    name = "feature_scale"
    feature_scale = auto_feature_scale(feature_scale, X.shape[0], auto_lifetime)
    if feature_scale is None:
        return None
    if isinstance(feature_scale, str):
        if feature_scale != "std":
            raise ValueError(f"{name} must be 'auto', 'std', None or an array of positive "
                             f"values, got {feature_scale!r}")
        return feature_std(X)
    try:
        scale = np.array(feature_scale, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be 'auto', 'std', None or an array of positive "
                        f"values, got {type(feature_scale).__name__}") from None
    if scale.shape != (X.shape[1],):
        raise ValueError(f"{name} must have one value per feature ({X.shape[1]}), got "
                         f"shape {scale.shape}")
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise ValueError(f"{name} must be finite and > 0, got {scale}")
    with np.errstate(over="ignore"):
        finite = np.isfinite(np.max(np.abs(X), axis=0) / scale)
    if not np.all(finite):
        raise ValueError(f"{name}: X / {name} overflows double precision in feature(s) "
                         f"{np.flatnonzero(~finite).tolist()}; use larger values")
    return scale
