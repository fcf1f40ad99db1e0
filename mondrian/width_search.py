"""Kernel-width search for feature maps that must be rebuilt per width.

Random Fourier features and random binning fix the kernel width when they
are drawn, so selecting the lifetime λ (inverse width) means drawing a new
map and retraining for every candidate.  Balog et al. (2016, Sec. 8.2, Fig. 8)
compare the Mondrian kernel's single sweep with the following protocol for
those maps, implemented here:

1. evaluate at a starting lifetime λ₀;
2. expansion: repeatedly either double the largest or halve the smallest
   lifetime tried so far, in the direction that looks more promising (the
   end of the tried range whose validation error is lower), until the best
   lifetime is strictly inside the tried range and both ends are worse than
   it by more than a relative margin ``rtol`` (a real bracket).  On a
   plateau, where the two ends differ by less than the margin (e.g. raw
   CPU data at λ near 1, where every width gives the constant predictor),
   the two directions are expanded in turn, so that an optimum many
   doublings away on either side is still reached;
3. bisection: around the best lifetime λ* with tried neighbours
   λ₋ < λ* < λ₊, evaluate the geometric midpoints √(λ₋λ*) and √(λ*λ₊),
   move to the best of the three and shrink the bracket; repeat.

Every evaluation is recorded with its validation error and the wall-clock
time elapsed since the start, so that the trajectory can be plotted
against computation time (Fig. 8).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._validation import check_int, check_positive_float

__all__ = ["WidthSearchResult", "width_search", "ridge_scorer"]


@dataclass
class WidthSearchResult:
    """Trajectory of a width search.

    Attributes
    ----------
    lifetimes, errors, elapsed : list of float
        Per evaluation, in order: the lifetime, its validation error, and
        seconds since the search started when the evaluation finished.
    phases : list of str
        'start', 'expand' or 'bisect' per evaluation.
    """

    lifetimes: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    elapsed: list[float] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)

    @property
    def best_lifetime(self) -> float:
        """The lifetime with the lowest validation error (first one on ties)."""
        return self.lifetimes[int(np.argmin(self.errors))]

    @property
    def best_error(self) -> float:
        """The lowest validation error."""
        return float(np.min(self.errors))

    def best_so_far(self) -> np.ndarray:
        """Running minimum of the validation error, per evaluation (Fig. 8's curve)."""
        return np.minimum.accumulate(np.asarray(self.errors, dtype=np.float64))

    def trajectory(self) -> list[tuple[float, float, float]]:
        """(lifetime, validation error, elapsed seconds) per evaluation."""
        return list(zip(self.lifetimes, self.errors, self.elapsed))


def ridge_scorer(alpha: float = 1e-4) -> Callable[[Any, np.ndarray, Any, np.ndarray], float]:
    """A scorer for :func:`~mondrian.width_search.width_search`: ridge regression on the features,
    target centred by its training mean, validation error in the paper's
    metric 100·‖ŷ − y‖/‖y‖ (Sec. 8, :func:`mondrian.metrics.relative_error`).

    Parameters
    ----------
    alpha : float, default=1e-4
        Ridge regularisation δ² > 0 (the paper's 1e-4).
    """
    from .metrics import relative_error
    from .ridge import ridge_solve

    alpha = check_positive_float(alpha, "alpha")

    def score(Phi_train, y_train: np.ndarray, Phi_val, y_val: np.ndarray) -> float:
        y_train = np.asarray(y_train, dtype=np.float64)
        mean = y_train.mean()
        coef = ridge_solve(Phi_train, y_train - mean, alpha).coef
        return relative_error(y_val, Phi_val @ coef + mean)

    return score


def width_search(make_map: Callable[[float], Any],
                 score: Callable[[Any, np.ndarray, Any, np.ndarray], float],
                 X_train, y_train, X_val, y_val, *, lifetime0: float = 1.0,
                 max_expansions: int = 60, n_bisections: int = 6,
                 rtol: float = 0.01) -> WidthSearchResult:
    """Search the lifetime λ of a feature map by doubling/halving, then bisection.

    Parameters
    ----------
    make_map : callable ``lifetime -> transformer``
        Returns an unfitted feature map for that lifetime, e.g.
        ``lambda lam: RandomBinningFeatures(lifetime=lam, n_grids=350, random_state=0)``.
        Its ``fit_transform(X_train)`` and ``transform(X_val)`` are used.
    score : callable ``(Phi_train, y_train, Phi_val, y_val) -> float``
        Trains a learner on the features and returns its validation error
        (lower is better), e.g. :func:`ridge_scorer`.
    X_train, y_train, X_val, y_val : array-like
        Training and validation data.
    lifetime0 : float, default=1.0
        Starting lifetime λ₀ > 0 (the paper starts at 1).
    max_expansions : int, default=60
        Cap on doubling/halving steps (each one evaluation); the search
        stops expanding earlier once the best lifetime is bracketed.  On a
        plateau the directions alternate, so 60 steps reach 2^±30 λ₀.
    n_bisections : int, default=6
        Bisection rounds (each at most two evaluations).
    rtol : float, default=0.01
        Relative difference of validation errors that counts as real: a
        bracket needs both ends worse than the best by more than
        ``rtol·|best|``, and a direction is preferred only when its end is
        better by more than that.

    Returns
    -------
    WidthSearchResult
        Every evaluation in order, with elapsed times.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomFourierFeatures
    >>> from mondrian.width_search import ridge_scorer, width_search
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((200, 2)); y = np.sin(8 * X[:, 0]) + 2
    >>> res = width_search(lambda lam: RandomFourierFeatures(lifetime=lam, n_components=50,
    ...                                                      random_state=0),
    ...                    ridge_scorer(1e-3), X[:150], y[:150], X[150:], y[150:],
    ...                    n_bisections=2)
    >>> len(res.trajectory()) >= 3
    True
    """
    lifetime0 = check_positive_float(lifetime0, "lifetime0")
    max_expansions = check_int(max_expansions, "max_expansions", minimum=0)
    n_bisections = check_int(n_bisections, "n_bisections", minimum=0)
    rtol = check_positive_float(rtol, "rtol", allow_zero=True)
    if not callable(make_map):
        raise TypeError("make_map must be callable: lifetime -> feature map")
    if not callable(score):
        raise TypeError("score must be callable: (Phi_train, y_train, Phi_val, y_val) -> error")

    result = WidthSearchResult()
    tried: dict[float, float] = {}
    start = time.perf_counter()

    def evaluate(lam: float, phase: str) -> float:
        fmap = make_map(lam)
        Phi_train = fmap.fit_transform(X_train)
        Phi_val = fmap.transform(X_val)
        err = float(score(Phi_train, y_train, Phi_val, y_val))
        if math.isnan(err):
            raise ValueError(f"score returned NaN at lifetime={lam!r}")
        tried[lam] = err
        result.lifetimes.append(lam)
        result.errors.append(err)
        result.elapsed.append(time.perf_counter() - start)
        result.phases.append(phase)
        return err

    evaluate(lifetime0, "start")
    n_up = n_down = 0
    for _ in range(max_expansions):
        lo, hi = min(tried), max(tried)
        best = min(tried, key=tried.get)
        margin = rtol * abs(tried[best])
        if lo < best < hi and min(tried[lo], tried[hi]) > tried[best] + margin:
            break
        if len(tried) == 1 or tried[hi] < tried[lo] - margin:
            up = True  # no direction known yet (larger first), or the large end is better
        elif tried[lo] < tried[hi] - margin:
            up = False
        else:
            up = n_up < n_down  # a plateau: take the direction expanded less
        if up:
            evaluate(2.0 * hi, "expand")
            n_up += 1
        else:
            evaluate(0.5 * lo, "expand")
            n_down += 1

    for _ in range(n_bisections):
        lams = sorted(tried)
        i = lams.index(min(tried, key=tried.get))
        new = []
        if i > 0:
            new.append(math.sqrt(lams[i - 1] * lams[i]))
        if i + 1 < len(lams):
            new.append(math.sqrt(lams[i] * lams[i + 1]))
        new = [lam for lam in new if lam not in tried]
        if not new:
            break
        for lam in new:
            evaluate(lam, "bisect")
    return result
