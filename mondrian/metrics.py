"""The paper's error metric: 100·‖ŷ - y‖₂ / ‖y‖₂, in percent.

Balog et al. (2016, Sec. 8) report every CPU result in this metric (the
relative ℓ₂ error of the predictions), so the command line, the experiments,
the width search and the benchmarks all use the functions here.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["relative_error", "relative_error_from_mse"]


def relative_error(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """The relative prediction error 100·‖ŷ - y‖₂ / ‖y‖₂, in percent.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets y; not all zero.
    y_pred : array-like of shape (n_samples,) or scalar
        Predictions ŷ (a scalar is broadcast, e.g. the constant predictor).

    Returns
    -------
    float

    Examples
    --------
    >>> from mondrian.metrics import relative_error
    >>> relative_error([3.0, 4.0], [3.0, 0.0])
    80.0
    """
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    return float(100.0 * np.linalg.norm(y_pred - y_true) / np.linalg.norm(y_true))


def relative_error_from_mse(mse: ArrayLike, y_true: ArrayLike) -> np.ndarray | float:
    """:func:`~mondrian.metrics.relative_error` from a mean squared error over ``y_true``.

    Since ‖ŷ - y‖₂² = n·MSE, the metric is 100·√(n·MSE) / ‖y‖₂; the path
    estimators record validation MSEs per lifetime and alpha, and this turns
    them into the paper's metric without the predictions.

    Parameters
    ----------
    mse : float or array-like
        Mean squared errors over the n points of ``y_true`` (any shape, e.g.
        lifetimes x alphas); NaN stays NaN.
    y_true : array-like of shape (n,)
        The targets the MSEs were computed on.

    Returns
    -------
    float or ndarray of the shape of ``mse``
    """
    y_true = np.asarray(y_true, dtype=np.float64)
    out = 100.0 * np.sqrt(np.asarray(mse, dtype=np.float64) * y_true.size) / np.linalg.norm(y_true)
    return float(out) if out.ndim == 0 else out
