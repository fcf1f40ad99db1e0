"""Exact kernels: the ground truths that random features approximate."""
from __future__ import annotations

import functools
import math

import numpy as np
import scipy.sparse as sp
from scipy import optimize, special

from ._validation import (check_coefficients, check_int, check_length_scales, check_lifetime,
                          check_positive_float)

__all__ = [
    "laplace_kernel",
    "rotated_laplace_kernel",
    "rotated_laplace_profile",
    "sphere_l1_mean",
    "gaussian_kernel",
    "exponential_kernel",
    "polynomial_kernel",
    "dot_product_kernel",
]


def _pair(X, Y, name_x: str = "X", name_y: str = "Y") -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of dense, finite 2-d float arrays with equal widths."""
    out = []
    for A, name in ((X, name_x), (Y, name_y)):
        if sp.issparse(A):
            raise TypeError(f"{name}: sparse input is not supported; pass a dense array")
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2:
            raise ValueError(f"{name} must be 2-dimensional, got shape {A.shape}")
        if A.shape[0] == 0 or A.shape[1] == 0:
            raise ValueError(f"{name} must be non-empty, got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise ValueError(f"{name} contains NaN or infinity")
        out.append(A)
    if out[0].shape[1] != out[1].shape[1]:
        raise ValueError(f"{name_x} has {out[0].shape[1]} features but {name_y} has {out[1].shape[1]}")
    return out[0], out[1]


def laplace_kernel(X, Y=None, lifetime: float = 1.0) -> np.ndarray:
    """The ℓ₁ Laplace kernel k(x, y) = exp(-λ‖x - y‖₁) (paper Sec. 3).

    The limit of the Mondrian kernel k_M as M → ∞ (Prop. 1).  Equal to
    scikit-learn's ``laplacian_kernel`` with ``gamma = lifetime``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    lifetime : float, default=1.0
        λ ≥ 0, the inverse kernel width.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    lifetime = check_lifetime(lifetime)
    X, Y = _pair(X, X if Y is None else Y)
    return np.exp(-lifetime * _distances(X, Y, "l1"))


def _distances(X: np.ndarray, Y: np.ndarray, norm: str,
               scale: np.ndarray | None = None) -> np.ndarray:
    """ℓ₁ (``norm='l1'``), ℓ₂ (``'l2'``) or squared ℓ₂ (``'sq'``) distances
    between the rows of X and Y, of the differences divided by ``scale``
    (per dimension) if given, from the differences (not the Gram-matrix
    identity, so that close pairs keep their relative accuracy), rows in
    blocks so that the (block, n_y, D) difference array stays small.
    Distances beyond double precision are inf."""
    out = np.empty((X.shape[0], Y.shape[0]))
    block = max(1, int(2**22 // max(1, Y.shape[0] * X.shape[1])))
    with np.errstate(over="ignore"):
        for s in range(0, X.shape[0], block):
            diff = X[s:s + block, None, :] - Y[None, :, :]
            if scale is not None:
                diff /= scale
            if norm == "l1":
                out[s:s + block] = np.abs(diff).sum(axis=2)
            else:
                out[s:s + block] = np.einsum("ijk,ijk->ij", diff, diff)
    return out if norm != "l2" else np.sqrt(out, out=out)


def sphere_l1_mean(n_features: int) -> float:
    """E‖v‖₁ for v uniform on the unit sphere of R^D:
    D·Γ(D/2)/(√π·Γ((D+1)/2)) (E|v₁| = Γ(D/2)/(√π Γ((D+1)/2))).

    1 for D = 1, 4/π for D = 2, about √(2D/π) for large D.  The rotated
    Mondrian kernel at lifetime λ decays like the Laplace kernel at
    lifetime λ·E‖v‖₁ in the Euclidean distance: its slope at 0 is
    -λ·E‖v‖₁.
    """
    d = check_int(n_features, "n_features")
    return float(d * math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi))


def _sphere_l1_moments(d: int, n: int) -> np.ndarray:
    """E[S^k], k = 0..n-1, of S = ‖v‖₁ for v uniform on S^{d-1}.

    With g ~ N(0, I_d), ‖g‖₁ = ‖g‖₂·S with S independent of ‖g‖₂, so
    E[S^k] = E‖g‖₁^k / E‖g‖₂^k: the numerator is k! times the k-th
    coefficient of (Σ_j E|g₁|^j x^j / j!)^d (positive terms, no
    cancellation), the denominator 2^{k/2} Γ((d+k)/2)/Γ(d/2).
    """
    j = np.arange(n)
    base = np.exp(0.5 * j * np.log(2.0) + special.gammaln((j + 1) / 2) - 0.5 * np.log(np.pi)
                  - special.gammaln(j + 1))
    base[0] = 1.0                # E|g|⁰ exactly (its power is taken d times)
    out = np.zeros(n)
    out[0] = 1.0
    power, e = base, d
    while e:     # out = base^d by squaring, truncated to n terms
        if e & 1:
            out = np.convolve(out, power)[:n]
        e >>= 1
        if e:
            power = np.convolve(power, power)[:n]
    log_rho = 0.5 * j * np.log(2.0) + special.gammaln((d + j) / 2) - special.gammaln(d / 2)
    out = out * np.exp(special.gammaln(j + 1) - log_rho)
    out[0] = 1.0
    return out


def _profile_hankel(t: np.ndarray, d: int, h: float = 0.04):
    """k(t) and Σ|terms| by the Bromwich integral collapsed on the negative
    real axis (see :func:`rotated_laplace_profile`), trapezoid rule in ln u."""
    lo = np.log(max(float(np.min(t)) ** 2 / 2800.0, 1e-300))
    x = np.arange(lo, np.log(800.0), h)
    u = np.exp(x)[None, :]
    y = t[:, None] / (2.0 * np.sqrt(u))
    y2 = y * y
    a = np.exp(-y2)
    b = (2.0 / np.sqrt(np.pi)) * special.dawsn(y)
    phi = np.arctan2(a, b)
    # sin(dφ)/a, stable when a underflows (φ ≈ a/b)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(a > 1e-150, np.sin(d * phi) / a, d / b)
        log_r2 = np.where(a > 1e-150, np.log(a * a + b * b), 2.0 * np.log(b))
    log_mag = -u - y2 + 0.5 * d * (log_r2 - np.log(u)) + x + special.gammaln(d / 2) - np.log(np.pi)
    # Terms may overflow for small t in many dimensions (the sum then
    # cancels hopelessly): such a t gets an infinite magnitude.
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.exp(np.minimum(log_mag, 700.0)) * ratio
        terms = np.where(log_mag < 700.0, terms, np.inf)
        return h * terms.sum(axis=1), h * np.abs(terms).sum(axis=1)


def _profile_saddle(t: float, d: int):
    """k(t) and Σ|terms| by the Bromwich integral on the parabola through the
    real saddle point of its integrand, or (nan, nan) if there is none."""
    def dlog(s):
        z = t / (2.0 * np.sqrt(s))
        e = special.erfcx(z)
        return 1.0 - d / (2.0 * s) - d * (2.0 * z - 2.0 / (np.sqrt(np.pi) * e)) * z / (2.0 * s)
    lo, hi = max(1e-12, t * t / 4e4), d / 2.0 + 10.0
    if not (dlog(lo) < 0.0 < dlog(hi)):
        return np.nan, np.nan
    mu = optimize.brentq(dlog, lo, hi, xtol=1e-14 * hi, rtol=1e-14)
    step = 1e-4 * mu
    curv = (dlog(mu + step) - dlog(mu - step)) / (2.0 * step)
    if not curv > 0.0:
        return np.nan, np.nan
    w = 1.0 / (2.0 * mu * np.sqrt(curv))      # Gaussian width in the parameter
    h = w / 6.0
    span = max(12.0 * w, np.sqrt((45.0 + mu) / mu))
    p = np.arange(-span, span + h / 2, h)
    s = mu * (1.0 + 1j * p) ** 2
    z = t / (2.0 * np.sqrt(s))
    log_f = s - 0.5 * d * np.log(s) + d * np.log(special.erfcx(z)) + special.gammaln(d / 2)
    terms = np.exp(log_f) * (2j * mu * (1.0 + 1j * p))
    value = float((h / (2j * np.pi) * terms.sum()).real)
    return value, float(h / (2 * np.pi) * np.abs(terms).sum())


def _profile_exact(t: np.ndarray, d: int) -> np.ndarray:
    """k(t) for t > 0 by the better-conditioned of the two contours."""
    value, mag = _profile_hankel(t, d)
    out = value.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cond = mag / np.abs(value)             # Σ|terms| / |sum|
        for i in np.flatnonzero(~(cond <= 10.0)):     # also NaN and inf
            v, m = _profile_saddle(float(t[i]), d)
            if np.isfinite(v) and v > 0.0 and not (cond[i] <= m / v):
                out[i] = v
    return out


#: Range of t = λ‖x - x'‖₂ tabulated by :func:`rotated_laplace_profile`:
#: below, a Taylor polynomial; above, k(t) ≤ e^{-t} underflows to 0.
_TABLE_TOP = 745.2
_PANEL = 0.25        # width of a table panel in ln t
_NODES = 16          # Chebyshev nodes per panel


@functools.lru_cache(maxsize=32)
def _profile_table(d: int):
    """Piecewise-Chebyshev table of ln k(t) over ln t, and the Taylor
    coefficients used below it."""
    mom = _sphere_l1_moments(d, 6)
    taylor = mom[:5] * np.array([1.0, -1.0, 0.5, -1.0 / 6.0, 1.0 / 24.0])
    # Below t_low the fifth term, μ₅t⁵/120 ≤ (√d t)⁵/120, is under 1e-17.
    t_low = (120e-17) ** 0.2 / np.sqrt(d)
    edges = np.arange(np.log(t_low), np.log(_TABLE_TOP) + _PANEL, _PANEL)
    k = np.arange(_NODES)
    cheb = np.cos(np.pi * (k + 0.5) / _NODES)        # first-kind points
    mid = 0.5 * (edges[:-1] + edges[1:])
    x = mid[:, None] + 0.5 * _PANEL * cheb[None, :]
    values = _profile_exact(np.exp(x.ravel()), d).reshape(x.shape)
    with np.errstate(divide="ignore"):
        logs = np.log(np.maximum(values, 1e-320))
    # Chebyshev coefficients of each panel (discrete orthogonality).
    T = np.cos(np.outer(np.arange(_NODES), np.arccos(cheb)))
    coef = logs @ T.T * (2.0 / _NODES)
    coef[:, 0] *= 0.5
    return edges, coef, taylor, t_low


def rotated_laplace_profile(t, n_features: int) -> np.ndarray:
    """The rotated Laplace kernel as a function of t = λ‖x - x'‖₂:
    k_D(t) = E_v[exp(-t‖v‖₁)], v uniform on the unit sphere S^{D-1}.

    Exact for D = 1 (e^{-t}).  For D ≥ 2, from the representation of the
    uniform law on the sphere as a Gaussian conditioned on ‖x‖₂² = 1
    (Laplace inversion of ∫ Π_i e^{-t|x_i|} e^{-s‖x‖²} dx):

        k_D(t) = Γ(D/2) · (1/2πi) ∫_Br e^s s^{-D/2} erfcx(t/(2√s))^D ds,

    evaluated on the parabola through the real saddle point of the
    integrand (moderate t) or collapsed on the negative real axis, where
    it becomes the real integral

        k_D(t) = Γ(D/2)/π ∫₀^∞ e^{-u} u^{-D/2} (a² + b²)^{D/2} sin(D arg(b + ia)) du,

    with y = t/(2√u), a = e^{-y²}, b = 2 Dawson(y)/√π (a + ib is the
    Faddeeva function at y) (large t), each by
    the trapezoid rule, choosing the better-conditioned sum.  These
    values are tabulated once per D (ln k by piecewise Chebyshev
    interpolation in ln t, 0.25 wide panels of 16 points); below
    t ≈ 4e-4/√D a Taylor polynomial in the moments E‖v‖₁^k is used,
    above t = 745.2 the value underflows (k_D(t) ≤ e^{-t}).

    Accuracy: relative error below 1e-12 for t ≤ 200 (measured at most
    7e-13 for D = 2, 3, 5, 10, 20, 50, 100 against the moment series
    Σ (-t)^k E‖v‖₁^k / k! summed in 30 to 100 significant digits, and
    against adaptive quadrature of the 2-D formula below); beyond, the
    tabulated ln k_D carries an absolute error of about 3e-15·t, i.e. a
    relative error of k_D below 3e-12 up to the underflow at 745.2.
    The tests check D = 1, the 2-D quadrature, the small-t expansion and
    a 3-D cubature.

    Parameters
    ----------
    t : array-like
        t ≥ 0 (finite).
    n_features : int
        Dimension D ≥ 1.

    Returns
    -------
    ndarray of the shape of ``t``
    """
    d = check_int(n_features, "n_features")
    t = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("t must be finite and >= 0")
    if d == 1:
        return np.exp(-t)
    edges, coef, taylor, t_low = _profile_table(d)
    flat = t.ravel()
    out = np.zeros_like(flat)
    small = flat < t_low
    ts = flat[small]
    out[small] = taylor[0] + ts * (taylor[1] + ts * (taylor[2] + ts * (taylor[3]
                                                                        + ts * taylor[4])))
    mid = np.flatnonzero((~small) & (flat < _TABLE_TOP))
    for s in range(0, mid.size, 1 << 16):     # bounded temporaries (16 coefficients each)
        idx = mid[s:s + (1 << 16)]
        lt = np.log(flat[idx])
        panel = np.clip(((lt - edges[0]) / _PANEL).astype(np.int64), 0, coef.shape[0] - 1)
        xi = 2.0 * (lt - edges[panel]) / _PANEL - 1.0
        c = coef[panel]
        b1 = np.zeros_like(xi)
        b2 = np.zeros_like(xi)
        for j in range(_NODES - 1, 0, -1):      # Clenshaw
            b1, b2 = 2.0 * xi * b1 - b2 + c[:, j], b1
        out[idx] = np.exp(xi * b1 - b2 + c[:, 0])
    return out.reshape(t.shape)


def rotated_laplace_kernel(X, Y=None, lifetime: float = 1.0) -> np.ndarray:
    """The uniformly rotated Laplace kernel
    k(x, y) = E_v[exp(-λ‖x - y‖₂‖v‖₁)], v uniform on the unit sphere.

    The limit of the uniformly rotated Mondrian kernel
    (``MondrianFeatures(rotation='uniform')``) as M → ∞ (Osborne &
    O'Reilly 2025): each tree's cuts are axis-aligned in its own
    Haar-random rotation R, so the kernel is E_R[exp(-λ‖R(x - y)‖₁)] and
    R(x - y) = ‖x - y‖₂·v with v uniform on the sphere.  Isotropic: a
    function of r = ‖x - y‖₂ only, k(r) = 1 - λ r E‖v‖₁ + O(r²)
    (:func:`sphere_l1_mean`); in 2-D, (4/π)∫₀^{π/4} exp(-√2 λ r cos θ) dθ;
    in 1-D, the Laplace kernel exp(-λ|x - y|).  Positive definite (an
    average of Laplace kernels).

    Computed by :func:`rotated_laplace_profile` (relative error below 1e-12
    for λr ≤ 200, below 3e-12 beyond).

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    lifetime : float, default=1.0
        λ ≥ 0, the inverse kernel width.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    lifetime = check_lifetime(lifetime)
    X, Y = _pair(X, X if Y is None else Y)
    with np.errstate(over="ignore"):
        dist = _distances(X, Y, "l2")
        t = lifetime * dist if lifetime > 0.0 else np.zeros_like(dist)
    # Distances beyond double precision (points ~1e154 apart): the kernel's
    # value there is its limit 0, as laplace_kernel's exp(-inf).
    far = np.isinf(t)
    out = rotated_laplace_profile(np.where(far, 0.0, t), X.shape[1])
    out[far] = 0.0
    return out


def gaussian_kernel(X, Y=None, length_scale=1.0) -> np.ndarray:
    """The Gaussian (squared-exponential, ARD) kernel
    k(x, y) = exp(-½ Σ_d (x_d - y_d)² / ℓ_d²).

    Random Fourier features (Rahimi & Recht 2007) approximate it with
    frequencies ω ~ N(0, diag(ℓ)⁻²).  With a scalar ℓ it equals
    scikit-learn's ``rbf_kernel`` with ``gamma = 1 / (2 ℓ²)``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    length_scale : float or array-like of shape (n_features,), default=1.0
        ℓ > 0, one per dimension (automatic relevance determination) or shared.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    X, Y = _pair(X, X if Y is None else Y)
    ls = check_length_scales(length_scale, X.shape[1])
    # From the differences, as laplace_kernel: the expansion ‖x‖² + ‖y‖² -
    # 2xᵀy cancels catastrophically for points far from the origin (1.0
    # instead of 0.811 at an offset of 1e8) and gives NaN when the squares
    # overflow.
    return np.exp(-0.5 * _distances(X, Y, "sq", ls))


def dot_product_kernel(X, Y=None, coefficients=(1.0,)) -> np.ndarray:
    """A dot-product kernel f(⟨x, y⟩) = Σₙ aₙ ⟨x, y⟩ⁿ with a finite Maclaurin series.

    Schoenberg's theorem (Kar & Karnick 2012, slides "structure theorems"):
    f is positive definite on every dimension iff all aₙ ≥ 0.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    coefficients : array-like of shape (K + 1,)
        a₀, …, a_K, finite and ≥ 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    X, Y = _pair(X, X if Y is None else Y)
    a = check_coefficients(coefficients)
    with np.errstate(over="ignore", invalid="ignore"):
        G = X @ Y.T
        out = np.full_like(G, a[-1])
        for coef in a[-2::-1]:      # Horner's rule
            out *= G
            out += coef
    return _finite_kernel(out, "dot_product_kernel", "X (or the coefficients)")


def exponential_kernel(X, Y=None, scale: float = 1.0) -> np.ndarray:
    """The exponential dot-product kernel k(x, y) = exp(⟨x, y⟩ / σ²), σ² = ``scale``.

    Its Maclaurin coefficients are aₙ = 1 / (n! σ²ⁿ) (Kar & Karnick 2012).
    On unit-norm rows it equals e^{1/σ²} · exp(-‖x - y‖² / (2σ²)), a scaled
    Gaussian kernel.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    scale : float, default=1.0
        σ² > 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    scale = check_positive_float(scale, "scale")
    X, Y = _pair(X, X if Y is None else Y)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.exp((X @ Y.T) / scale)
    return _finite_kernel(out, "exponential_kernel", "X (or raise scale)")


def polynomial_kernel(X, Y=None, degree: int = 2, scale: float = 1.0) -> np.ndarray:
    """The inhomogeneous polynomial kernel k(x, y) = (1 + ⟨x, y⟩ / s)^q.

    Maclaurin coefficients aₙ = C(q, n) / sⁿ for n ≤ q, zero beyond.  Equal
    to scikit-learn's ``polynomial_kernel(degree=q, gamma=1/s, coef0=1)``.

    Parameters
    ----------
    X : array-like of shape (n_x, n_features)
    Y : array-like of shape (n_y, n_features), optional
        Default: X.
    degree : int, default=2
        q ≥ 0.
    scale : float, default=1.0
        s > 0.

    Returns
    -------
    ndarray of shape (n_x, n_y)
    """
    degree = check_int(degree, "degree", minimum=0)
    scale = check_positive_float(scale, "scale")
    X, Y = _pair(X, X if Y is None else Y)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (1.0 + (X @ Y.T) / scale) ** degree
    return _finite_kernel(out, "polynomial_kernel", "X (or raise scale)")


def _finite_kernel(values: np.ndarray, name: str, rescale: str) -> np.ndarray:
    """``values``, or ValueError where they leave double precision (a dot
    product kernel of large inputs is larger than 1.8e308: inf, not an
    approximation of it)."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: kernel values overflow double precision; rescale {rescale}")
    return values
