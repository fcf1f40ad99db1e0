"""Choosing the kernel width without being told its scale.

The Laplace kernel exp(-λ‖x - x'‖₁) is a function of λ·‖x - x'‖₁ only, so
the data fix the natural scale of λ: λ₀ = 1/(median ℓ₁ distance between
two training points), at which a typical pair of points has kernel value
e⁻¹.  Good widths lie within a few factors of two of λ₀ on any data, raw or
standardised (raw CPU data: λ₀ ≈ 1e-6; standardised data in D dimensions:
λ₀ ≈ 1/D).  :func:`search_lifetime` starts at λ₀ and λ₀/2 and walks over log₂(λ/λ₀)
by octaves in the direction the error falls (downwards by two octaves
once three below the start), until the error has risen on both sides of
its minimum, growing the forest past its terminal lifetime when the
minimum is not yet passed at the top (upwards only by octaves: the forest's
size grows fast with λ, so an octave up that gains less than
:data:`FLAT_TIE` ends the walk).  Gaps of two octaves next to the minimum are then
filled.  The error is flat near its minimum in log λ, and every lifetime
evaluated costs an eigendecomposition (dual) or a CG solve (path): the
typical search evaluates three lifetimes, the first two (and the neighbours
filled in at the end) handed over together so that they can be computed at
once (``evaluate_many``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._scale import lifetime_scale

__all__ = ["lifetime_scale", "LifetimeSearch", "search_lifetime"]

#: Lowest log₂(λ/λ₀) the search goes down to: at λ₀/2²⁰ every kernel value
#: is within 1e-6 of 1 on a typical pair, the constant predictor.
LOG2_FLOOR = -20.0

#: The search stops going up when the octave just added lowered the best
#: error by less than this relative amount (but by something: exactly equal
#: errors are the plateau below the trees' first splits, which it walks
#: up).  Where no lifetime fits better than a constant (a target that is
#: noise), the error falls by ~1e-4 per octave all the way to saturated
#: trees, each octave doubling the forest; real error curves fall by
#: percents per octave until near their minimum.
FLAT_TIE = 1e-3


@dataclass
class LifetimeSearch:
    """Record of a search: every lifetime evaluated and why it stopped.

    Attributes
    ----------
    lifetimes : ndarray
        Lifetimes evaluated, increasing.
    errors : ndarray of shape (n_lifetimes, n_alphas)
        Validation error at each lifetime for each alpha.
    scale : float
        λ₀, the data's scale of λ.
    max_lifetime : float
        Terminal lifetime of the forest at the end of the search.
    stop_reason : str
        'passed minimum' (the error rose on both sides of the best
        lifetime), 'flat' (the best lifetime is the largest evaluated, but
        the octave up to it lowered the error by less than
        :data:`FLAT_TIE`, or every error so far is the same, over three
        octaves or more), 'max_lifetime' (the best lifetime is the fixed ceiling:
        a larger one might be better), 'saturated' (the trees stopped
        splitting: every cell holds points at one location, so larger λ
        changes nothing), 'memory' (growing further would exceed the forest
        size budget) or 'floor' (the best lifetime is λ₀·2⁻²⁰, where the
        kernel is constant).
    """

    lifetimes: np.ndarray
    errors: np.ndarray
    scale: float
    max_lifetime: float
    stop_reason: str
    _log2: list = field(default_factory=list, repr=False)

    @property
    def best(self) -> tuple[int, int]:
        """(lifetime index, alpha index) of the smallest error."""
        g, a = np.unravel_index(np.argmin(self.errors), self.errors.shape)
        return int(g), int(a)


def search_lifetime(evaluate: Callable[[float], np.ndarray], scale: float,
                    max_lifetime: float, *,
                    extend: Callable[[float], str | None] | None = None,
                    evaluate_many: Callable[[list], list] | None = None,
                    prefetch: Callable[[list], list] | None = None) -> LifetimeSearch:
    """Minimise a validation error over log λ, growing the forest if needed.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(lifetime)`` returns the validation errors at λ, one per
        alpha (any λ in [0, current terminal lifetime], in any order).
    scale : float
        λ₀ (:func:`lifetime_scale`); the search works in u = log₂(λ/λ₀).
    max_lifetime : float
        Current terminal lifetime Λ of the forest.
    extend : callable, optional
        ``extend(new_lifetime)`` grows the forest to a larger Λ and returns
        None, or returns the reason it cannot ('saturated', 'memory').
        Without it Λ is a fixed ceiling.
    evaluate_many : callable, optional
        ``evaluate_many(lifetimes)`` returns ``[evaluate(lam) for lam in
        lifetimes]``, e.g. computed in parallel
        (:meth:`~mondrian.path.dual.DualScorer.evaluate_many`).  The search
        hands it the lifetimes it needs whatever their errors (the first
        two, and the two neighbours of the minimum it fills in at the end);
        the result must not depend on whether they come together.
    prefetch : callable, optional
        ``prefetch(lifetimes)`` computes the results at ``lifetimes`` at once
        (e.g. in parallel) and returns one zero-argument callable per
        lifetime that records and returns its errors when called, or None if
        it declines (:meth:`~mondrian.path.dual.DualScorer.prefetch`: below
        :data:`~mondrian.path.dual.PAIR_ROWS` rows).  Going down, the
        search then computes the step down together with the lifetime it
        needs next if that step is the minimum (the next octave, or the
        midpoint of a two-octave step), and calls the second only when it
        does need it: where one evaluation keeps one core busy (the dual's
        eigendecomposition on 1000 rows and more) the descent takes half
        the rounds, and the search and its result are those without
        ``prefetch``, bit for bit (a lifetime computed ahead and not needed
        is dropped unrecorded).

    Returns
    -------
    LifetimeSearch
    """
    scores: dict[float, np.ndarray] = {}
    ahead: dict[float, Callable[[], np.ndarray]] = {}  # computed, not yet asked for
    u_top = float(np.log2(max_lifetime / scale))
    lam_top = float(max_lifetime)

    def lifetime(u: float) -> float:
        # At u_top, the terminal lifetime itself: λ₀·2^u_top may round above it.
        return lam_top if u == u_top else scale * 2.0 ** u

    def ev(*us: float) -> None:
        for u in us:
            if u in ahead and u not in scores:
                scores[u] = np.asarray(ahead.pop(u)(), dtype=np.float64)
        todo = [u for u in dict.fromkeys(us) if u not in scores]
        if len(todo) > 1 and evaluate_many is not None:
            values = evaluate_many([lifetime(u) for u in todo])
        else:
            values = [evaluate(lifetime(u)) for u in todo]
        for u, value in zip(todo, values):
            scores[u] = np.asarray(value, dtype=np.float64)

    def ev_ahead(u: float, then: float) -> None:
        """Evaluate u; compute ``then`` with it, to be revealed if asked for."""
        reveals = None
        if prefetch is not None and then >= LOG2_FLOOR and u not in scores and \
                u not in ahead and then not in scores and then not in ahead:
            reveals = prefetch([lifetime(u), lifetime(then)])
        if reveals is None:
            ev(u)
            return
        now, ahead[then] = reveals
        scores[u] = np.asarray(now(), dtype=np.float64)

    def best_u() -> float:
        # Ties go to the larger lifetime: below the first split of every
        # tree the kernel is constant and the errors equal, and a search
        # must not walk down such a plateau.
        return min(scores, key=lambda u: (float(np.min(scores[u])), -u))

    def room(u: float) -> str | None:
        """None if u is within the forest (growing it if allowed), else why not."""
        nonlocal u_top, lam_top
        if u <= u_top:
            return None
        new = lifetime(u)
        why = "max_lifetime" if extend is None else extend(new)
        if why is None:
            u_top, lam_top = u, new
        return why

    start = min(0.0, u_top)
    ev(start, *([start - 1.0] if start - 1.0 >= LOG2_FLOOR else []))
    reason = "passed minimum"
    while True:
        b = best_u()
        if b == max(scores):
            below = min(float(np.min(scores[u])) for u in scores if u < b) \
                if len(scores) > 1 else np.inf
            if below > float(np.min(scores[b])) > (1.0 - FLAT_TIE) * below:
                reason = "flat"
                break
            if len(scores) >= 3 and all(np.array_equal(v, scores[b]) for v in scores.values()):
                # The same errors over three octaves and more: the targets
                # leave nothing to select (constant training targets: every
                # model predicts their mean).
                reason = "flat"
                break
            up = b + 1.0    # upwards by octaves: every step up may grow the forest
            if b < u_top < up:
                up = u_top      # the ceiling itself first
            why = room(up)
            if why is not None:
                reason = why
                break
            ev(up)
        elif b == min(scores):
            # Downwards is free (the forest holds every smaller λ): by octaves
            # near the start, then by two.
            step = 1.0 if b > start - 3.0 else 2.0
            down = b - step
            if down < LOG2_FLOOR:
                reason = "floor"
                break
            # Ahead: what is asked for next if ``down`` is the minimum (the
            # octave below it, or the midpoint that is then its neighbour).
            ev_ahead(down, down - 1.0 if step == 1.0 else b - 1.0)
        else:
            break
    b = best_u()
    ev(*[u for u in (b - 1.0, b + 1.0)
         if u >= LOG2_FLOOR and u not in scores and room(u) is None])
    us = sorted(scores)
    # The very lifetimes evaluated (numpy's power may differ from Python's
    # in the last bit, and callers look the evaluated ones up here).
    return LifetimeSearch(lifetimes=np.array([lifetime(u) for u in us]),
                          errors=np.stack([scores[u] for u in us]), scale=scale,
                          max_lifetime=lifetime(u_top), stop_reason=reason, _log2=us)
