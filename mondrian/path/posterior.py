"""The exact posterior over the lifetime λ given the path's evidence."""
from __future__ import annotations

import numpy as np

from .._validation import check_lifetime, check_positive_float

__all__ = ["LifetimePosterior"]


class LifetimePosterior:
    r"""Exact posterior over the lifetime λ from a piecewise-constant evidence.

    Derivation (the paper's Supplement B is not available to us; this is
    ours).  Along the path the features -- hence the log marginal
    likelihood L(λ) = log p(y | λ) -- change only at split events
    0 < t₁ < … < t_K ≤ Λ: L(λ) = L_k on the interval I_k = [t_k, t_{k+1})
    with t₀ = 0 and t_{K+1} = Λ.  For a prior density p(λ) supported on
    [0, Λ], Bayes' rule gives

    .. math::  p(λ | y) = p(λ) e^{L_k} / Z \quad (λ ∈ I_k),
               \qquad Z = \sum_k P_k e^{L_k},

    where P_k = ∫_{I_k} p(λ) dλ is the prior mass of I_k.  So the posterior
    mass of I_k is π_k = P_k e^{L_k}/Z (computed with log-sum-exp), and
    within I_k the posterior is the prior restricted to I_k.  Hence, with
    F_k = Σ_{j<k} π_j,

    * uniform prior p = 1/Λ: P_k = (t_{k+1} - t_k)/Λ; the density is
      constant on I_k, the CDF is linear there, E[λ] = Σ π_k (t_k +
      t_{k+1})/2, and the quantile u ∈ I_k is t_k + (u - F_k)/π_k ·
      (t_{k+1} - t_k); the mode is the whole interval maximising L_k
      (reported: its midpoint);
    * log-uniform prior on [λ_min, Λ], p = 1/(λ log(Λ/λ_min)): I_k is
      clipped to [a_k, b_k] = [max(t_k, λ_min), t_{k+1}], P_k = log(b_k/
      a_k)/log(Λ/λ_min); E[λ | I_k] = (b_k - a_k)/log(b_k/a_k), quantile
      a_k (b_k/a_k)^{(u - F_k)/π_k}; the density e^{L_k}/λ is largest at
      the left end a_k of the interval maximising L_k - log a_k.

    Parameters
    ----------
    breaks : ndarray of shape (K + 1,)
        Start t_k of every interval (t₀ = 0, then the event times).
    log_likelihood : ndarray of shape (K + 1,)
        L_k on each interval.
    max_lifetime : float
        Λ, the end of the last interval.
    prior : {'uniform', 'log-uniform'}
    lifetime_min : float, optional
        λ_min > 0 of the log-uniform prior (default Λ·1e-3).
    """

    def __init__(self, breaks, log_likelihood, max_lifetime: float, *,
                 prior: str = "uniform", lifetime_min: float | None = None):
        breaks = np.asarray(breaks, dtype=np.float64)
        ll = np.asarray(log_likelihood, dtype=np.float64)
        if breaks.ndim != 1 or ll.shape != breaks.shape or breaks.size == 0:
            raise ValueError("breaks and log_likelihood must be 1-d of the same length")
        if not np.all(np.isfinite(breaks)):
            raise ValueError("breaks must be finite")
        if breaks[0] != 0.0 or np.any(np.diff(breaks) < 0):
            raise ValueError("breaks must start at 0 and not decrease")
        if not np.all(np.isfinite(ll)):
            raise ValueError("log_likelihood must be finite")
        lam_max = check_lifetime(max_lifetime, "max_lifetime")
        if lam_max <= 0 or lam_max < breaks[-1]:
            raise ValueError(f"max_lifetime={lam_max} must be > 0 and >= the last break")
        if prior not in ("uniform", "log-uniform"):
            raise ValueError(f"prior must be 'uniform' or 'log-uniform', got {prior!r}")
        ends = np.append(breaks[1:], lam_max)
        if prior == "uniform":
            lo, hi = breaks, ends
            with np.errstate(divide="ignore"):
                # an empty last interval (max_lifetime at the last break): -inf
                log_mass = np.log(np.maximum(hi - lo, 0.0)) - np.log(lam_max)
            self.lifetime_min = 0.0
        else:
            lmin = lam_max * 1e-3 if lifetime_min is None else check_positive_float(
                lifetime_min, "lifetime_min")
            if lmin >= lam_max:
                raise ValueError(f"lifetime_min={lmin} must be below max_lifetime={lam_max}")
            lo, hi = np.maximum(breaks, lmin), np.maximum(ends, lmin)
            with np.errstate(divide="ignore"):
                log_mass = np.log(np.log(hi / lo)) - np.log(np.log(lam_max / lmin))
            self.lifetime_min = lmin
        with np.errstate(divide="ignore"):
            log_mass = np.where(hi > lo, log_mass, -np.inf)
        logp = log_mass + ll
        top = np.max(logp)
        if not np.isfinite(top):
            raise ValueError("the prior gives zero mass to every interval")
        w = np.exp(logp - top)
        self.log_evidence = float(top + np.log(w.sum()) )
        self.mass = w / w.sum()
        self.lower, self.upper = lo, hi
        self.log_likelihood = ll
        self.prior = prior
        self.max_lifetime = lam_max
        self._cdf = np.concatenate(([0.0], np.cumsum(self.mass)))

    def pdf(self, lifetime) -> np.ndarray:
        """Posterior density at ``lifetime`` (array-like)."""
        lam = np.atleast_1d(np.asarray(lifetime, dtype=np.float64))
        k = np.clip(np.searchsorted(self.lower, lam, side="right") - 1, 0, self.mass.size - 1)
        inside = (lam >= self.lower[k]) & (lam <= self.upper[k]) & (self.upper[k] > self.lower[k])
        width = self.upper[k] - self.lower[k]
        if self.prior == "uniform":
            dens = np.where(inside, self.mass[k] / np.where(width > 0, width, 1.0), 0.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                norm = np.log(self.upper[k] / self.lower[k])
                dens = np.where(inside & (norm > 0), self.mass[k] / (lam * norm), 0.0)
        return dens

    def cdf(self, lifetime) -> np.ndarray:
        """Posterior P(λ ≤ lifetime)."""
        lam = np.atleast_1d(np.asarray(lifetime, dtype=np.float64))
        k = np.clip(np.searchsorted(self.lower, lam, side="right") - 1, 0, self.mass.size - 1)
        lo, hi = self.lower[k], self.upper[k]
        x = np.clip(lam, lo, hi)
        if self.prior == "uniform":
            frac = np.where(hi > lo, (x - lo) / np.where(hi > lo, hi - lo, 1.0), 1.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(hi > lo, np.log(x / lo) / np.log(hi / lo), 1.0)
        out = self._cdf[k] + self.mass[k] * frac
        out = np.where(lam < self.lower[0], 0.0, out)
        return np.clip(np.where(lam >= self.max_lifetime, 1.0, out), 0.0, 1.0)

    def ppf(self, q) -> np.ndarray:
        """Posterior quantile function (inverse of :meth:`cdf`)."""
        q = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if np.any((q < 0) | (q > 1)) or not np.all(np.isfinite(q)):
            raise ValueError("quantile levels must lie in [0, 1]")
        k = np.clip(np.searchsorted(self._cdf, q, side="right") - 1, 0, self.mass.size - 1)
        # Skip intervals of zero mass.
        nz = np.flatnonzero(self.mass > 0)
        k = nz[np.clip(np.searchsorted(nz, k, side="left"), 0, nz.size - 1)]
        frac = np.clip((q - self._cdf[k]) / self.mass[k], 0.0, 1.0)
        lo, hi = self.lower[k], self.upper[k]
        if self.prior == "uniform":
            return lo + frac * (hi - lo)
        return lo * (hi / lo) ** frac

    def mean(self) -> float:
        """Posterior mean E[λ | y]."""
        lo, hi = self.lower, self.upper
        if self.prior == "uniform":
            cond = 0.5 * (lo + hi)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                cond = np.where(hi > lo, (hi - lo) / np.log(hi / lo), lo)
        return float(np.sum(self.mass * cond))

    def mode(self) -> float:
        """Posterior mode (uniform prior: midpoint of the most probable
        interval of λ; log-uniform: left end of the interval maximising
        L_k - log λ)."""
        valid = self.upper > self.lower
        if self.prior == "uniform":
            score = np.where(valid, self.log_likelihood, -np.inf)
            k = int(np.argmax(score))
            return float(0.5 * (self.lower[k] + self.upper[k]))
        score = np.where(valid, self.log_likelihood - np.log(self.lower), -np.inf)
        k = int(np.argmax(score))
        return float(self.lower[k])

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Equal-tailed credible interval of the given ``level``."""
        level = check_positive_float(level, "level")
        if level >= 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        lo, hi = self.ppf([(1 - level) / 2, (1 + level) / 2])
        return float(lo), float(hi)
