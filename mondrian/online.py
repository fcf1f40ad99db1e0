"""Prequential evaluation of online learners (paper Sec. 5).

:func:`prequential` streams data through any estimator with ``partial_fit``
and ``predict`` (e.g. :class:`~mondrian.MondrianKernelRidge`, which learns
exactly online): every batch is first predicted by the model learnt from the
points before it, then learnt.  The running error over the predicted points
is the progressive validation error (Blum, Kalai & Langford 1999; Dawid's
prequential principle): an honest estimate of the error on new points that
needs no held-out set.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ._validation import check_int

__all__ = ["PrequentialResult", "prequential"]


@dataclass
class PrequentialResult:
    """What :func:`prequential` measured, one entry per report.

    Attributes
    ----------
    n_seen : ndarray of int
        Points learnt when the report was made.
    error : ndarray of float
        Progressive validation error so far: the paper's metric
        100·‖ŷ - y‖₂/‖y‖₂ over every point predicted before it was learnt
        (all but the first batch).
    seconds : ndarray of float
        Cumulative time spent in ``partial_fit`` and ``predict``.
    model : estimator
        The model after the whole stream.
    """

    n_seen: np.ndarray
    error: np.ndarray
    seconds: np.ndarray
    model: object = field(repr=False)


def prequential(model, X, y, *, batch_size: int = 256, report_every: int = 1000,
                callback=None) -> PrequentialResult:
    """Progressive validation of ``model`` on the stream (X, y), in order.

    The stream is cut into consecutive batches of ``batch_size`` points.
    The first is learnt only (``model.partial_fit``); every later batch is
    predicted first (``model.predict``), then learnt.  After every batch
    that ends at or past a multiple of ``report_every`` points (and after
    the last) the error so far is recorded.

    Parameters
    ----------
    model : estimator with ``partial_fit(X, y)`` and ``predict(X)``
        Unfitted, or fitted on earlier data (then every batch is predicted).
    X : array-like of shape (n_samples, n_features)
        The stream, in arrival order (shuffle it first for a random order).
    y : array-like of shape (n_samples,)
    batch_size : int, default=256
        Points per ``partial_fit`` call.  Exact online ridge costs
        O(b·C² + C³/6)-ish per batch of b points (see
        :meth:`MondrianKernelRidge.partial_fit`), so batches of hundreds
        keep it within a few times a batch fit.
    report_every : int, default=1000
        Report interval in points.
    callback : callable, optional
        Called as ``callback(n_seen, error)`` at every report (e.g. to
        print the learning curve as it is made).

    Returns
    -------
    PrequentialResult
    """
    batch_size = check_int(batch_size, "batch_size")
    report_every = check_int(report_every, "report_every")
    X = np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be 2-d and y 1-d with as many rows, got shapes "
                         f"{X.shape} and {y.shape}")
    if X.shape[0] == 0:
        raise ValueError("the stream is empty")
    fitted = hasattr(model, "n_features_in_")
    sq_err = sq_y = 0.0
    seconds = 0.0
    n_seen, errors, times = [], [], []
    next_report = report_every
    n = X.shape[0]
    for start in range(0, n, batch_size):
        Xb, yb = X[start:start + batch_size], y[start:start + batch_size]
        t0 = time.perf_counter()
        if fitted:
            pred = np.asarray(model.predict(Xb), dtype=np.float64)
            sq_err += float(np.sum((pred - yb) ** 2))
            sq_y += float(np.sum(yb ** 2))
        model.partial_fit(Xb, yb)
        seconds += time.perf_counter() - t0
        fitted = True
        seen = start + Xb.shape[0]
        if seen >= next_report or seen == n:
            error = 100.0 * np.sqrt(sq_err / sq_y) if sq_y > 0 else np.nan
            n_seen.append(seen)
            errors.append(error)
            times.append(seconds)
            if callback is not None:
                callback(seen, error)
            while next_report <= seen:
                next_report += report_every
    return PrequentialResult(np.array(n_seen), np.array(errors), np.array(times), model)
