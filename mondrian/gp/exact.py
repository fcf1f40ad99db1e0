"""The exact GP baseline: scikit-learn's ``GaussianProcessRegressor``, set up
exactly as :class:`~mondrian.gp.SparseSpectrumGPRegressor` is.

The exact model is the GP with the ARD Gaussian kernel
σ_f² exp(-½ (x - x')ᵀΘ⁻¹(x - x')) plus white noise σ_n² (Hoang et al.
2020, Eqs. 2-3 with the exact Gram matrix K), i.e. scikit-learn's
``ConstantKernel(σ_f²) * RBF(ℓ) + WhiteKernel(σ_n²)``.  Nothing of it is
re-implemented here: the helper only fixes what makes a comparison like for
like — the same starting point (:func:`~mondrian.gp.ssgp.initial_theta`),
the same bounds, the same normalisation of y, the same optimiser (L-BFGS-B
with the same iteration limit), no jitter on the diagonal, and the same
``theta`` layout, so that ``gp.log_marginal_likelihood(theta)`` and
``ssgp.log_marginal_likelihood(theta)`` evaluate the exact and the
sparse-spectrum evidence at the same hyperparameters.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from .._validation import check_bool, check_int
from .ssgp import (HYPERPARAMETER_BOUNDS, LBFGS_MEMORY, _check_theta, _log_box, _normalize,
                   check_regression_data, initial_theta, length_scale_bounds)

__all__ = ["exact_gp_regressor", "exact_gp_kernel"]


class LBFGSBOptimizer:
    """scikit-learn GP ``optimizer`` callable: L-BFGS-B with an iteration limit.

    The optimisation :class:`~mondrian.gp.SparseSpectrumGPRegressor` runs
    (``scipy.optimize.minimize(method='L-BFGS-B', options={'maxiter': ...,
    'maxcor': LBFGS_MEMORY})``, default tolerances).  Picklable, so a fitted
    regressor can be pickled.
    Warns with ``ConvergenceWarning`` when the iteration limit stops it.

    Parameters
    ----------
    max_iter : int
        Iteration limit.
    """

    def __init__(self, max_iter: int = 1000):
        self.max_iter = check_int(max_iter, "max_iter")

    def __call__(self, obj_func, initial_theta, bounds):
        res = minimize(obj_func, initial_theta, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": self.max_iter, "maxcor": LBFGS_MEMORY})
        if res.status == 1:
            warnings.warn(f"exact GP: L-BFGS-B stopped at max_iter={self.max_iter} iterations; "
                          "increase max_iter", ConvergenceWarning, stacklevel=2)
        return res.x, res.fun

    def __repr__(self) -> str:
        return f"LBFGSBOptimizer(max_iter={self.max_iter})"


def exact_gp_kernel(theta, n_features: int, length_scale_bounds=None):
    """``ConstantKernel(σ_f²) * RBF(ℓ) + WhiteKernel(σ_n²)`` at ``theta``.

    Parameters
    ----------
    theta : array-like of shape (n_features + 2,)
        (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²), the layout of the
        returned kernel's ``theta`` and of
        :attr:`SparseSpectrumGPRegressor.theta_
        <mondrian.gp.SparseSpectrumGPRegressor>`.
    n_features : int
        Input dimension D (the RBF kernel is anisotropic: one ℓ per input).
    length_scale_bounds : array-like of shape (n_features, 2), optional
        (lower, upper) of each ℓ_d, positive: those of the SSGP fitted to
        the same inputs are :func:`~mondrian.gp.length_scale_bounds` (X)
        (:func:`exact_gp_regressor` passes them).  Default
        :data:`~mondrian.gp.ssgp.HYPERPARAMETER_BOUNDS` for every input
        (the bounds of inputs of deviation and robust scale 1).

    Returns
    -------
    sklearn.gaussian_process.kernels.Kernel
        With the bounds :data:`~mondrian.gp.ssgp.HYPERPARAMETER_BOUNDS` on
        σ_f² and σ_n², ``length_scale_bounds`` on ℓ.
    """
    n_features = check_int(n_features, "n_features")
    theta = _check_theta(theta, n_features)
    if length_scale_bounds is None:
        ls_bounds = np.tile(np.asarray(HYPERPARAMETER_BOUNDS, dtype=np.float64),
                            (n_features, 1))
    else:
        ls_bounds = np.array(length_scale_bounds, dtype=np.float64)
        if ls_bounds.shape != (n_features, 2) or not np.all(np.isfinite(ls_bounds)) or \
                not np.all(ls_bounds[:, 0] > 0) or not np.all(ls_bounds[:, 1] > ls_bounds[:, 0]):
            raise ValueError(f"length_scale_bounds must be an array of shape ({n_features}, 2) "
                             f"of finite positive (lower, upper) pairs with lower < upper, "
                             f"got {length_scale_bounds!r}")
    lo, hi = _log_box(ls_bounds)
    if np.any(theta < lo) or np.any(theta > hi):
        raise ValueError(f"theta must lie within its bounds (log HYPERPARAMETER_BOUNDS for "
                         f"the variances, log length_scale_bounds for ℓ), got {theta!r} "
                         f"outside [{lo!r}, {hi!r}]")
    value = np.exp(theta)
    return (ConstantKernel(value[0], constant_value_bounds=HYPERPARAMETER_BOUNDS)
            * RBF(value[1:1 + n_features], length_scale_bounds=ls_bounds)
            + WhiteKernel(value[1 + n_features], noise_level_bounds=HYPERPARAMETER_BOUNDS))


def exact_gp_regressor(X, y, *, theta=None, optimize: bool = True, normalize_y: bool = True,
                       max_iter: int = 1000, fit: bool = True) -> GaussianProcessRegressor:
    """scikit-learn's exact GP, set up as :class:`~mondrian.gp.SparseSpectrumGPRegressor`.

    The kernel is ``ConstantKernel(σ_f²) * RBF(ℓ) + WhiteKernel(σ_n²)``
    (the exact ARD Gaussian kernel plus noise that the SSGP approximates),
    started at the SSGP's initialisation (ℓ_d = half the range of input d,
    σ_f² = var y, σ_n² = var y / 4 of the normalised y:
    :func:`~mondrian.gp.ssgp.initial_theta`) or at a given ``theta``, with
    the SSGP's bounds (each ℓ_d's relative to its input's spread:
    :func:`~mondrian.gp.length_scale_bounds`), ``normalize_y`` and L-BFGS-B
    iteration limit, and no
    jitter (``alpha=0``: the white noise is the only diagonal term, as in
    the SSGP).  There are no restarts: the exact evidence does not depend
    on the frequency draws that the SSGP's restarts vary, and
    scikit-learn's restarts start from random hyperparameters instead.

    ``predict(X, return_std=True)`` of the result includes the noise
    variance (the ``WhiteKernel`` is part of k(x*, x*)), as
    :meth:`SparseSpectrumGPRegressor.predict
    <mondrian.gp.SparseSpectrumGPRegressor.predict>` does by default.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training inputs (used for the initialisation, and to fit).
    y : array-like of shape (n_samples,)
        Training targets.
    theta : array-like of shape (n_features + 2,), optional
        Starting (or, with ``optimize=False``, fixed) hyperparameters
        (log σ_f², log ℓ₁, …, log ℓ_D, log σ_n²), e.g. a fitted SSGP's
        ``theta_`` to evaluate the exact GP at the same hyperparameters.
        Default: :func:`~mondrian.gp.ssgp.initial_theta`.
    optimize : bool, default=True
        Train the hyperparameters (L-BFGS-B); False keeps ``theta``.
    normalize_y : bool, default=True
        As the SSGP's (and scikit-learn's) ``normalize_y``.
    max_iter : int, default=1000
        L-BFGS-B iteration limit (:class:`LBFGSBOptimizer`).
    fit : bool, default=True
        Return the regressor fitted to (X, y); False returns it unfitted.

    Returns
    -------
    sklearn.gaussian_process.GaussianProcessRegressor

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.gp import SparseSpectrumGPRegressor, exact_gp_regressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (100, 2))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(100)
    >>> ssgp = SparseSpectrumGPRegressor(n_components=20, random_state=0).fit(X, y)
    >>> exact = exact_gp_regressor(X, y, theta=ssgp.theta_, optimize=False)
    >>> bool(np.allclose(exact.kernel_.theta, ssgp.theta_))
    True
    """
    optimize = check_bool(optimize, "optimize")
    normalize_y = check_bool(normalize_y, "normalize_y")
    fit = check_bool(fit, "fit")
    X, y = check_regression_data(X, y)
    if theta is None:
        theta = initial_theta(X, _normalize(y, normalize_y)[0])
    kernel = exact_gp_kernel(theta, X.shape[1], length_scale_bounds(X))
    gp = GaussianProcessRegressor(kernel=kernel, alpha=0.0, normalize_y=normalize_y,
                                  optimizer=LBFGSBOptimizer(max_iter) if optimize else None,
                                  n_restarts_optimizer=0, copy_X_train=True)
    return gp.fit(X, y) if fit else gp
