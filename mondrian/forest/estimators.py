"""Mondrian forests on the Mondrian kernel's trees (paper Sec. 6 and 8.3).

The Mondrian kernel fits the weights of all trees' cells jointly; the
Mondrian forest (Lakshminarayanan, Roy & Teh, NIPS 2014 and AISTATS 2016)
fits each tree on its own and averages the trees' predictive distributions.
Both estimators here grow their trees with :class:`MondrianFeatures`
(``features_``, the same C forest as the kernel's) and keep per-node
statistics of the targets (``c/nodestats.h``): counts, sums and sums of
squares (regression) or class counts (classification), one entry per node in
the forest's global numbering.

Prediction at any lifetime λ ≤ Λ, for any point (``c/mforest.h``).  Tree m
pruned at λ keeps the nodes whose parent split at or before λ; node j lives
over (t_parent(j), t_j], t_j = min(τ_j, λ).  Walking x's path from the root,
x separates from node j's points (a cut between x and j's data box, before
j's own split and λ) with probability

    p_j(x) = 1 - exp(-Δ_j η_j(x)),   Δ_j = t_j - t_parent(j),

η_j(x) the ℓ₁ distance of x to j's data box (the conditional Mondrian of
paper Sec. 2.4; zero inside the box).  If it separates above j, x sits in a
new leaf branching off below j's parent p, with no training point: its
predictive distribution is B_p below; if it never separates, x is in its
active node a, with predictive distribution L_a.  So the tree predicts the
mixture

    Σ_j w_j B_parent(j) + w_a L_a,   w_j = p_j Π_{i above j}(1 - p_i),
    w_a = Π_j (1 - p_j),

and the forest the average of the trees' mixtures.  For points inside every
box on their path (training points, and most points of the data's
distribution) only L_a is left.

The same trees serve every λ ≤ Λ, so ``lifetime='auto'`` selects λ on a
held-out fraction of the training points (at most :data:`MAX_SCORED`
points, which tell the candidates apart as well as more would; the rest
of the fraction is grown with the others): the trees are grown on the rest,
the held-out points are predicted along a grid of lifetimes, the best is
kept, then the held-out points are inserted into the trees by the
conditional Mondrian (:meth:`MondrianFeatures.partial_fit`, which leaves the
trees distributed as if grown in batch on all points) and the statistics
are recomputed on every point.

With ``lifetime='auto'`` the smoothing hyperparameters are selected on the
same held-out points, at the selected λ.  With a numeric lifetime the
regressor holds nothing out: the trees are grown on every point and its
smoothing hyperparameters (noise and prior scale) are selected in sample,
by the exact leave-one-out predictive of each training target
(``_score_loo``, ``mt_forest_gauss_loo`` in ``c/mforest.h``): the Mondrian
partition does not depend on the targets, so the predictive of y_i given
the others is that of the same trees with y_i's factor removed from its
active node, O(1) per point and tree after one belief propagation.  The
fit then costs the trees, the statistics and eight belief propagations
(one more per step a selection takes past the end of its grid).
(The classifier selects its discount on held-out points whenever it is
'auto'.)
"""
from __future__ import annotations

import copy
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._ext import _mforest
from .._scale import lifetime_scale, resolve_feature_scale
from .._validation import (FOREST_STATISTICS, check_array_input, check_auto_or, check_bool,
                          check_fitted_features, check_fraction, check_int, check_lifetime,
                          check_positive_float, check_random_generator, check_rotation,
                          check_target_scale, resolve_n_jobs, target_column)
from ..features import MondrianFeatures
from ..features.mondrian import (SharesTreesOnCopy, _check_joint_range, _check_max_nodes,
                                 _MemoryBudget, node_bytes)
from . import aggregation as amf

__all__ = ["MondrianForestRegressor", "MondrianForestClassifier"]

#: Terminal lifetime of ``lifetime='auto'``, in units of the data's scale
#: λ₀ = 1/median ℓ₁ distance (:func:`~mondrian._scale.lifetime_scale`).
AUTO_LIFETIME_FACTOR = 2.0**7
#: Lifetimes evaluated by ``lifetime='auto'``: Λ·2^-k, k = 0..AUTO_GRID_STEPS.
AUTO_GRID_STEPS = 12
#: Held-out points (that score each candidate), at most: the rest of the
#: ``validation_fraction`` is grown into the trees with the training points.
MAX_SCORED = 1000
#: ``std_scale_`` of an aggregated forest chosen by ``aggregation='auto'``
#: makes ±COVERAGE_Z std cover this fraction of the held-out points.
COVERAGE_LEVEL = 0.95
COVERAGE_Z = 1.959963984540054  # the standard normal's 0.975 quantile
#: ``aggregation='auto'`` tries AMF only with this many held-out points or
#: more (250 training points at the default fraction): its choice and
#: ``std_scale_`` (a 0.95 quantile: 2.5 points above it at 50) rest on them.
MIN_AGGREGATION_HELD_OUT = 50
#: Below this many training points nothing is held out: λ = Λ and the
#: smoothing defaults of the estimator are used.
MIN_POINTS_FOR_SELECTION = 20


#: A smoothing hyperparameter selected ('auto') at an end of its grid is
#: tried past that end, one step of the grid's own ratio there at a time,
#: for as long as each step lowers its criterion by more than EDGE_TOL
#: (relative for squared errors, in nats for log scores), at most
#: EDGE_STEPS steps (:func:`_select_past_edge`).
EDGE_STEPS = 6
EDGE_TOL = 1e-3
#: The regressor's noise fraction goes below its grid a decade a step, down
#: to the noise-free limit NOISE_FLOOR (below it the predictions change by
#: less than the selection can see).
NOISE_STEP_DOWN = 0.1
NOISE_FLOOR = 1e-8


def _select_past_edge(grid, score, *, relative: bool, floor: float = 0.0,
                      down: float | None = None) -> float:
    """The value of ``grid`` (positive numbers) that minimises ``score``
    (value -> float, lower is better; called at most once per value if it
    caches), then, if that is an end of the grid, the values past that end,
    each step the ratio of the grid's two values there (``down`` below the
    grid, if given), while they improve (``EDGE_STEPS``, ``EDGE_TOL``);
    nothing below ``floor``.  A value still improving after
    the last step is kept, without a warning: EDGE_STEPS steps of the
    grids' ratios (×3, ×4) span a factor of 729 to 4096, which takes the
    smoothing to its limits (e.g. κ → ∞ shrinks every prediction to ȳ,
    as pure-noise targets ask), where a step changes the predictions by
    little more than the tolerance; a warning there fired on
    scikit-learn's estimator checks (20 points, 4 of them held out)."""
    values = sorted(grid)
    best = min(values, key=score)
    if len(values) < 2 or best not in (values[0], values[-1]):
        return best
    if best == values[0]:
        ratio = values[0] / values[1] if down is None else down
    else:
        ratio = values[-1] / values[-2]
    for _ in range(EDGE_STEPS):
        # (15 significant digits: 0.003 · 0.1 is 3e-4, not 3.0000000000000003e-4)
        candidate = max(float(f"{best * ratio:.15g}"), floor)
        if candidate == best:
            return best
        old, new = score(best), score(candidate)
        margin = EDGE_TOL * abs(old) if relative else EDGE_TOL
        if not new < old - margin:
            return best
        best = candidate
    return best


#: Most path entries (node, gap: 16 bytes each) stored for the held-out
#: points' walks (``_mforest.Paths``): 2^23, 128 MiB; above, every
#: candidate walks the trees again.
MAX_PATH_ENTRIES = 2**23


def _grid_lifetime(max_lifetime: float, loss, *, descend: bool = False) -> float:
    """The lifetime of ``lifetime='auto'`` minimising ``loss(λ)`` over
    Λ·2^-k, k = 0..AUTO_GRID_STEPS: every other k, then the two neighbours
    of the best.  ``descend``: the coarse values from Λ down only while the
    loss strictly falls (for a loss that is unimodal in λ, the same
    lifetime in fewer evaluations)."""
    coarse = [max_lifetime * 2.0**-k for k in range(0, AUTO_GRID_STEPS + 1, 2)]
    if descend:
        lam = coarse[0]
        for v in coarse[1:]:
            if not loss(v) < loss(lam):
                break
            lam = v
    else:
        lam = min(coarse, key=loss)
    fine = [v for v in (lam * 2.0, lam / 2.0)
            if max_lifetime * 2.0**-AUTO_GRID_STEPS <= v <= max_lifetime]
    return min([lam] + fine, key=loss)


def conformal_rank(n: int, level: float) -> int:
    """k = ⌈level·(n + 1)⌉: the rank (1-based) of the split-conformal
    quantile of n calibration scores, the smallest with which a new
    exchangeable score is at most the k-th smallest with probability at
    least ``level`` (Vovk et al. 2005; Lei et al. 2018, Thm. 2.2).  May
    exceed n (then no finite quantile has that guarantee)."""
    # less 1e-9: a product that is an integer (0.95 · 20) but rounds just
    # above it must not be ceiled to the next one
    return int(np.ceil(level * (n + 1) - 1e-9))


def _gauss_scores(resid: np.ndarray, var: np.ndarray) -> tuple[float, float]:
    """(mean squared error, mean negative log density of the Gaussians with
    variances ``var``, floored at 1e-300) of residuals ``resid``."""
    var = np.maximum(var, 1e-300)
    return (float(np.mean(resid**2)),
            float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * resid**2 / var)))


def _log_loss(proba: np.ndarray, codes: np.ndarray) -> tuple[float, float]:
    """Mean log-loss of class probabilities at the labels ``codes``, twice
    (the classifier's (squared-error, NLPD) slots of a score)."""
    p = proba[np.arange(codes.size), codes]
    loss = float(-np.mean(np.log(np.maximum(p, 1e-300))))
    return (loss, loss)


def _held_out_paths(forest, X: np.ndarray, n_threads: int):
    """``_mforest.Paths`` of X, or None when they would exceed
    ``MAX_PATH_ENTRIES``."""
    try:
        return _mforest.Paths(forest, X, n_threads, max_entries=MAX_PATH_ENTRIES)
    except OverflowError:
        return None


class _ShareToken:
    """Held by a forest estimator built on another's trees
    (:meth:`MondrianForestRegressor.from_features`) and pinned on their
    Forest: while it lives, growing or inserting through the other holder
    works on a copy."""

    __slots__ = ("__weakref__",)


def _check_auto_or_positive(value, name: str, *, allow_zero: bool = False):
    return check_auto_or(value, name,
                         lambda v, n: check_positive_float(v, n, allow_zero=allow_zero),
                         "a positive number")


#: ``partial_fit`` keeps the points of a fitted forest aside, and inserts
#: them all at once when anything reads the fitted state, or when they
#: reach as many as the trees hold or PENDING_BYTES (``_settle``).
PENDING_BYTES = 64 * 2**20


class _Settled:
    """A fitted attribute that depends on the points ``partial_fit`` keeps
    aside: reading it first inserts them (``_MondrianForestBase._settle``).
    The value lives in the instance's ``__dict__`` under ``"_" + name``."""

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.key = name, "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        obj._settle()
        try:
            return obj.__dict__[self.key]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute "
                                 f"{self.name!r}") from None

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.key] = value

    def __delete__(self, obj) -> None:
        try:
            del obj.__dict__[self.key]
        except KeyError:
            raise AttributeError(self.name) from None


def _merge_chunks(chunks: tuple, new: tuple) -> tuple:
    """``chunks`` (a tuple of (X, targets) pairs, sizes non-increasing)
    with ``new`` appended, the last two merged while the last is at least
    as large as the one before it (as in a binary counter): O(log n) chunks,
    each row copied O(log n) times in all.  A new tuple: copies of the
    estimator never share what they append."""
    chunks = chunks + (new,)
    while len(chunks) > 1 and chunks[-1][0].shape[0] >= chunks[-2][0].shape[0]:
        (Xa, ta), (Xb, tb) = chunks[-2], chunks[-1]
        chunks = chunks[:-2] + ((np.concatenate([Xa, Xb]), np.concatenate([ta, tb])),)
    return chunks


class _MondrianForestBase(SharesTreesOnCopy, BaseEstimator):
    """Tree growth, lifetime selection and partial_fit shared by both forests."""

    # The fitted state that the points partial_fit keeps aside change in
    # place when they are inserted (_settle).
    features_ = _Settled()
    amf_state_ = _Settled()
    step_ = _Settled()
    _targets = _Settled()

    def _settle(self) -> None:
        """Insert the points ``partial_fit`` kept aside (if any), in their
        order, as one batch: the trees, statistics and weights are then
        those that inserting them call by call gives, bit for bit (the
        insertion draws each tree's numbers point after point, and neither
        the trees nor the statistics depend on how the stream was cut:
        ``c/insert.h``, :mod:`mondrian.forest.aggregation`)."""
        chunks = self.__dict__.get("_pending")
        if not chunks:
            return
        self.__dict__["_pending"] = ()
        self.__dict__["_pending_bounds"] = None
        if len(chunks) == 1:
            X, targets = chunks[0]
        else:
            X = np.concatenate([c[0] for c in chunks])
            targets = np.concatenate([c[1] for c in chunks])
        self._partial_fit_points(X, targets)

    def __copy__(self):
        """A copy taken once the waiting points are in the trees, sharing
        the trees until either side changes them
        (:class:`~mondrian.features.mondrian.SharesTreesOnCopy`: the node
        statistics and the AMF state are copied)."""
        self._settle()
        return super().__copy__()

    def __getstate__(self):
        """The state pickled and copied, without the caches of the last
        prediction's node arrays (AMF weights and components, the
        smoothing's node posterior: 3-5 doubles a node, 11-18 % of a
        pickle), which the first prediction after loading computes again."""
        state = dict(super().__getstate__())
        if "_amf_cache" in state:
            state["_amf_cache"] = {}
        if "_posterior_cache" in state:
            state["_posterior_cache"] = [None]
        return state

    def _defer_points(self, X: np.ndarray, targets: np.ndarray) -> None:
        """Keep the validated points X (and their targets) aside for
        ``_settle``; settle once they are as many as the points the trees
        hold, or PENDING_BYTES.  Inserting a batch costs a pass over every
        node (the renumbering, ``c/insert.h``) plus the walks of its
        points, so a stream taken point by point would cost a pass per
        point; kept aside, it costs O(log n) passes in all."""
        d = self.__dict__
        X = np.array(X, dtype=np.float64, order="C", copy=True)  # not the caller's memory
        forest = d["_features_"].forest_
        bounds = d.get("_pending_bounds")
        # (a stream's single rows: the row itself, without two reductions)
        lo, hi = (X[0], X[0]) if X.shape[0] == 1 else (X.min(axis=0), X.max(axis=0))
        grown = True
        if bounds is not None:
            grown = bool(np.any(lo < bounds[0]) or np.any(hi > bounds[1]))
            lo, hi = np.minimum(lo, bounds[0]), np.maximum(hi, bounds[1])
        # The points' range with the trees' and the other waiting points':
        # rejected here, not when they are inserted.  The trees do not
        # change while points wait, so only a wider range needs the check
        # (a stream given point by point mostly stays inside: 25 µs a call).
        if grown:
            _check_joint_range(forest, np.vstack([lo, hi]))
        chunks = _merge_chunks(d.get("_pending") or (), (X, targets))
        d["_pending"] = chunks
        d["_pending_bounds"] = (lo, hi)
        rows = sum(c[0].shape[0] for c in chunks)
        if rows >= max(forest.n_points, 1) or rows * (X.shape[1] + 1) * 8 >= PENDING_BYTES:
            self._settle()

    def _check_common(self) -> dict:
        lifetime = check_auto_or(self.lifetime, "lifetime", check_lifetime, "a number >= 0")
        return dict(n_trees=check_int(self.n_trees, "n_trees"), lifetime=lifetime,
                    n_threads=resolve_n_jobs(self.n_jobs),
                    rotation=check_rotation(self.rotation),
                    smoothing=check_bool(self.smoothing, "smoothing"),
                    validation_fraction=check_fraction(self.validation_fraction,
                                                       "validation_fraction"),
                    max_nodes=_check_max_nodes(self.max_nodes),
                    aggregation=check_auto_or(self.aggregation, "aggregation", check_bool,
                                              "a bool"))

    def _is_fitted_key(self, lam: float, hyper) -> bool:
        """(lam, hyper) are the fitted ``lifetime_`` and resolved hyperparameters
        (whose node posterior is worth keeping)."""
        return (getattr(self, "_resolved", None) is not None
                and lam == getattr(self, "lifetime_", None) and hyper == self._resolved)

    def _lifetime_in_memory(self, X: np.ndarray, lifetime: float, rng, params: dict,
                            n_final: int) -> float:
        """The automatic terminal lifetime ``lifetime`` (2⁷λ₀; AMF alone: its
        own factor), lowered to the largest whose fit is expected to need at
        most :data:`~mondrian.features.mondrian.MEMORY_SHARE` of the
        available memory, the trees grown on X and then holding ``n_final``
        points (:meth:`~mondrian.features.mondrian._MemoryBudget.largest_lifetime`,
        at :meth:`_fit_bytes_per_node`); sets ``memory_capped_``.  Trees on
        a few thousand points always fit: the selection is then unchanged
        and ``rng`` untouched."""
        budget = _MemoryBudget(X, params["n_trees"], params["n_threads"], params["rotation"],
                               self.feature_scale_)
        lifetime, self.memory_capped_ = budget.largest_lifetime(
            X, lifetime, rng, self._fit_bytes_per_node(X.shape[1]), n_final)
        return lifetime

    def _features(self, params: dict, lifetime: float, rng) -> MondrianFeatures:
        return MondrianFeatures(n_trees=params["n_trees"], lifetime=lifetime, random_state=rng,
                                n_jobs=self.n_jobs, max_nodes=params["max_nodes"],
                                rotation=params["rotation"], feature_scale=self.feature_scale_)

    #: Whether, when nothing else needs held-out points (a numeric
    #: lifetime), the smoothing hyperparameters are selected in sample, by an
    #: exact leave-one-out criterion on the trees of every point
    #: (``_select_in_sample``), rather than on held-out points.
    _selects_in_sample = False

    def _fit_forest(self, X: np.ndarray, targets: np.ndarray, params: dict) -> None:
        """Grow the trees, select the lifetime and the hyperparameters
        ``self._hyper_grid()`` lists, compute the node statistics on every
        point."""
        rng = check_random_generator(self.random_state)
        self.feature_scale_ = resolve_feature_scale(self.feature_scale, X,
                                                    isinstance(params["lifetime"], str))
        self._resolved = None
        self.__dict__["_pending"] = ()  # points kept aside by an earlier fit's partial_fit
        self.__dict__["_pending_bounds"] = None
        if params["aggregation"] is True:
            return self._fit_aggregated(X, targets, params, rng)
        self._set_mode(False)
        n = X.shape[0]
        grid = self._hyper_grid()
        auto_lifetime = isinstance(params["lifetime"], str)
        enough = n >= MIN_POINTS_FOR_SELECTION
        select_hyper = len(grid) > 1 and enough
        hold_out = enough and (auto_lifetime or (select_hyper and not self._selects_in_sample))
        # Draws from rng's own stream: the trees' streams are spawned.
        self.lifetime_scale_ = lifetime_scale(X, rng, rotation=params["rotation"],
                                              scale=self.feature_scale_)
        if auto_lifetime:
            max_lifetime = AUTO_LIFETIME_FACTOR * self.lifetime_scale_
        else:
            max_lifetime = params["lifetime"]
        default = self._default_hyper(grid)
        self.validation_scores_ = None
        self.loo_scores_ = None
        self.memory_capped_ = False
        if not hold_out:
            if auto_lifetime:
                max_lifetime = self._lifetime_in_memory(X, max_lifetime, rng, params, n)
            self._fit_on_features(self._features(params, max_lifetime, rng).fit(X), targets,
                                  max_lifetime, select_hyper)
            return
        split = rng.spawn(1)[0].permutation(n)
        # At most MAX_SCORED held out: the selection scores no more, and
        # the others are better grown into the trees than inserted after.
        n_val = min(n - 1, max(1, int(round(params["validation_fraction"] * n))), MAX_SCORED)
        val, train = np.sort(split[:n_val]), np.sort(split[n_val:])
        X_train = X[train]
        if auto_lifetime:
            max_lifetime = self._lifetime_in_memory(X_train, max_lifetime, rng, params, n)
        # Room for the held-out points, which join the trees after the
        # selection: inserted without moving the node arrays.
        self.features_ = self._features(params, max_lifetime, rng)._fit_leaving_room(
            X_train, n_val)
        del X_train
        self._targets = targets[train].copy()
        self._compute_stats()
        Xs, ts = X[val], targets[val]
        # Their paths down the trees, walked once for every candidate.
        paths = _held_out_paths(self.forest_, Xs, resolve_n_jobs(self.n_jobs))
        scores = {}

        def score(lam, hyper):
            key = (float(lam), hyper)
            if key not in scores:
                scores[key] = self._score_held_out(Xs, ts, float(lam), hyper, paths)
            return scores[key]

        lam = max_lifetime
        self._selection_buffers(True)
        try:
            if auto_lifetime and max_lifetime > 0:
                # Smoothed, the held-out error falls with λ to a plateau
                # (the prior's increments shrink as e^(-t/θ) down a path):
                # the descent from Λ finds the full grid's lifetime in
                # fewer candidates (doc/forests.rst).  Unsmoothed it need
                # not: the whole grid.
                lam = _grid_lifetime(max_lifetime, lambda v: score(v, default)[0],
                                     descend=params["smoothing"])
            self.lifetime_ = float(lam)
            # Held-out points at hand: they select the hyperparameters too
            # (they exercise the separation components of test points, which
            # the training points' leave-one-out does not).
            hyper = self._select_hyper(grid, default, lambda h: score(lam, h)) \
                if select_hyper else default
        finally:
            self._selection_buffers(False)
        self.validation_scores_ = scores
        del paths  # unpins the trees
        try_amf = (params["aggregation"] == "auto" and auto_lifetime and max_lifetime > 0
                   and ts.shape[0] >= MIN_AGGREGATION_HELD_OUT)
        if try_amf and self._aggregation_wins(X, targets, split, n_val, Xs, ts, max_lifetime,
                                              score(self.lifetime_, hyper)[0]):
            return
        # The held-out points join the trees (conditional Mondrian insertion).
        self.features_.partial_fit(X[val])
        self._targets = np.concatenate([self._targets, targets[val]])
        self._compute_stats()
        self.hyper_ = hyper
        self._resolved = self._resolve(self.lifetime_, hyper)

    def _fit_on_features(self, features: MondrianFeatures, targets: np.ndarray, lam: float,
                         select_hyper: bool) -> None:
        """The statistics of ``targets`` on fitted trees that hold every
        training point, predictions at ``lam``, the hyperparameters in sample
        if ``select_hyper`` (else their defaults)."""
        grid = self._hyper_grid()
        default = self._default_hyper(grid)
        self.__dict__["_pending"] = ()
        self.__dict__["_pending_bounds"] = None
        self.features_ = features
        self._targets = np.array(targets)
        self._compute_stats()
        self.lifetime_ = float(lam)
        self.hyper_ = self._select_in_sample(grid, default) if select_hyper else default
        self._resolved = self._resolve(self.lifetime_, self.hyper_)

    def _partial_fit_points(self, X: np.ndarray, targets: np.ndarray) -> None:
        """Insert X into every tree, then recompute the node statistics."""
        if getattr(self, "_share_token", None) is not None:
            # Built on another estimator's trees (from_features): insert into
            # a copy, leaving theirs as they are, and stop pinning them.
            self.features_ = copy.copy(self.features_)
            self.features_.forest_ = self.features_.forest_.copy()
            self._share_token = None
        self.features_.max_nodes = _check_max_nodes(self.max_nodes)
        if self.aggregation_:
            self.amf_state_ = amf.insert(self.features_, X, targets, self.amf_state_,
                                         **self._amf_args())
            self._amf_resolve()
            self._amf_cache = {}
            return
        self.features_.partial_fit(X)
        self._targets = np.concatenate([self._targets, targets])
        self._compute_stats()

    def _fit_aggregated(self, X, targets, params, rng) -> None:
        """AMF: the trees grown on all points, the node weights from the
        points in their given order (:mod:`mondrian.forest.aggregation`)."""
        self.lifetime_scale_ = lifetime_scale(X, rng, rotation=params["rotation"],
                                              scale=self.feature_scale_)
        lifetime = params["lifetime"]
        self.memory_capped_ = False
        if isinstance(lifetime, str):
            lifetime = self._lifetime_in_memory(
                X, amf.AUTO_LIFETIME_FACTOR * self.lifetime_scale_, rng, params, X.shape[0])
        self.features_ = self._features(params, lifetime, rng).fit(X)
        self.lifetime_ = float(lifetime)
        self.hyper_ = self._resolved = self.validation_scores_ = None
        self._set_mode(True)
        self._targets = targets.copy()  # the first batch's (relabelled by partial_fit)
        self._amf_restart(X, targets)

    def _aggregation_wins(self, X, targets, split, n_val, Xs, ts, max_lifetime,
                          rival: float) -> bool:
        """``aggregation='auto'``: the aggregated forest (AMF) on the trees
        grown on the training part, against the selected smoothed (or
        unsmoothed) forest, whose held-out loss is ``rival``.

        The node weights are computed from the training points in a random
        order (``split``'s, not the rows': rows sorted by, say, the target
        would bias the sequential losses), the lifetime is selected on the same held-out points ``Xs``
        by the same grid, and the loss is the one that selected the
        lifetime (squared error; log-loss for classes).  If AMF's is
        smaller, the estimator becomes the aggregated forest: the held-out
        points join the trees in their random order, the weights carried
        over (:func:`~mondrian.forest.aggregation.insert`), and True is
        returned; else nothing changes.  ``aggregation_scores_`` keeps the
        held-out scores of every lifetime tried."""
        args = self._amf_args()
        train_order, val_order = split[n_val:], split[:n_val]
        try:
            state = amf.new_state(self.forest_, args["n_classes"])
        except MemoryError:
            warnings.warn("aggregation='auto': the aggregated forest's node weights do not fit "
                          "in memory; the smoothed forest is kept", UserWarning, stacklevel=4)
            return False
        state = amf.update(self.forest_, X[train_order], targets[train_order], state, **args)
        step = self._amf_step(state)
        comp = np.ascontiguousarray(self._amf_components(state))
        scores, preds, weights = {}, {}, {}

        def score(lam):
            lam = float(lam)
            if lam not in scores:
                # one set of weight arrays for every lifetime tried
                preds[lam] = amf.predict(self.forest_, Xs, lam, state, step, comp,
                                         args["n_threads"], weights)
                scores[lam] = self._amf_scores(preds[lam], ts)
            return scores[lam][0]

        # AMF's held-out error falls with λ to a plateau (the aggregation
        # prunes what is too deep): on CPU, concrete, energy, CCPP and the
        # smooth set the full grid's choice is the descent's.
        lam = _grid_lifetime(max_lifetime, score, descend=True)
        weights.clear()  # 3 doubles a node, not to be held through the insertion
        if not score(lam) < rival:
            self.aggregation_scores_ = scores
            return False
        self._set_mode(True)
        self.aggregation_scores_ = scores
        self.lifetime_ = float(lam)
        self.hyper_ = self._resolved = None
        self._calibrate(preds[lam], ts)
        self.amf_state_ = amf.insert(self.features_, X[val_order], targets[val_order], state,
                                     **args)
        self._targets = np.concatenate([self._targets, targets[val_order]])
        self._amf_resolve()
        self._amf_cache = {}
        return True

    def _set_mode(self, aggregated: bool) -> None:
        """Start the fitted state of one mode (``aggregation_``): no AMF
        scores, no std calibration, and the other mode's state (an earlier
        fit's) dropped."""
        self.aggregation_ = aggregated
        self.aggregation_scores_ = None
        self._calibrate(None, None)
        if aggregated:
            self._drop_stats()
        else:
            for name in ("_amf_state_", "_step_"):
                self.__dict__.pop(name, None)

    def _selection_buffers(self, on: bool) -> None:
        """Make (``on``, with smoothing) or drop the arrays that the
        candidates of a held-out selection share (``_components``): fresh
        ones for each would be fresh pages for the kernel to clear (10⁵
        synthetic rows, 100 trees, 2·10⁷ nodes: 0.8 GB of scratch and 0.5 GB
        of output a regression candidate).  Each forest says which arrays
        its node posterior takes (``_posterior_arrays``: output arrays, then
        the scratch)."""
        d = self.__dict__
        d.pop("_posterior_work", None)
        d.pop("_posterior_work_key", None)
        if on and self.smoothing:
            d["_posterior_work"] = self._posterior_arrays()

    def _calibrate(self, pred, targets) -> None:
        """Calibrate an aggregated forest's predictions on held-out points
        (``pred`` its predictions of them, ``targets`` theirs; None: reset):
        the regressor's std (``std_scale_``); nothing for classes."""

    def _amf_restart(self, X, targets) -> None:
        """The AMF state of the fitted trees from scratch, points in order."""
        args = self._amf_args()
        state = amf.new_state(self.forest_, args["n_classes"])
        self.amf_state_ = amf.update(self.forest_, X, targets, state, **args)
        self._amf_resolve()
        self._amf_cache = {}

    def _amf_predict(self, X: np.ndarray, lam: float) -> np.ndarray:
        """AMF predictions of the node components (``_amf_components``),
        kept (with the weights) until the state changes or, for classes,
        ``dirichlet`` does: both cost O(nodes), which a prediction of a few
        rows should not pay each time (one row, 100 trees on 2000 points:
        3.8 ms, nearly all of it there)."""
        state = self.amf_state_      # first: reading it inserts waiting points
        cache = self._amf_cache
        key = self._amf_args()["dirichlet"]
        if "components" not in cache or cache.get("components_key") != key:
            cache["components"] = np.ascontiguousarray(self._amf_components(state))
            cache["components_key"] = key
        return amf.predict(self.forest_, X, lam, state, self.step_, cache["components"],
                           resolve_n_jobs(self.n_jobs), cache)

    @property
    def forest_(self):
        """The fitted C forest (``features_.forest_``)."""
        check_is_fitted(self, "features_")
        return self.features_.forest_

    @property
    def max_lifetime_(self) -> float:
        """Terminal lifetime Λ of the trees."""
        check_is_fitted(self, "features_")
        return self.features_.lifetime_

    def _prediction_lifetime(self, lifetime) -> float:
        if lifetime is None:
            return self.lifetime_
        return check_lifetime(lifetime, upper=self.max_lifetime_)

    def _mixture(self, X: np.ndarray, lam: float, resolved, paths=None) -> np.ndarray:
        leaf, branch, branch0 = self._components(lam, resolved)
        if paths is not None:
            return _mforest.mixture_paths(self.forest_, paths, lam, leaf, branch, branch0,
                                          resolve_n_jobs(self.n_jobs))
        return _mforest.mixture(self.forest_, X, lam, leaf, branch, branch0,
                                resolve_n_jobs(self.n_jobs))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


_COMMON_PARAMS = """n_trees : int, default=100
        Number M of independent Mondrian trees.
    lifetime : 'auto' or float, default='auto'
        Lifetime λ of the predictions.  A number: the trees are grown to it
        and predict at it.  'auto': the trees are grown to Λ = 2⁷λ₀ (λ₀ =
        1/median ℓ₁ distance between training points), and λ is selected
        among Λ·2⁻ᵏ, k = 0..12 (even k, then the neighbours of the best;
        smoothed, the even k from 0 up only while the error falls),
        before the smoothing, on a held-out ``validation_fraction`` of the
        training points (at most 1000 of them; see the module's
        docstring); the held-out points are then inserted into the trees.
        Where trees grown to 2⁷λ₀ would not fit in memory (100 trees on 8
        features: above about 2·10⁵ rows on a machine with 24 GB, where the
        trees of continuous data isolate every point, 2N nodes each), Λ is the
        largest lifetime 2⁷λ₀·2^(-j/16) whose fit is expected to need at
        most :data:`~mondrian.features.mondrian.MEMORY_SHARE` of the
        available memory, counted on two pilot trees (``memory_capped_``;
        the fit then depends on the machine's memory: pass a number for the
        same trees everywhere).
    random_state : None, int, SeedSequence or Generator, default=None
        Source of randomness (every tree draws from its own stream, so
        results do not depend on ``n_jobs``).
    n_jobs : int or None, default=None
        Threads (None or -1: all cores).
    rotation : {None, 'uniform'}, default=None
        As in :class:`MondrianFeatures`: 'uniform' gives every tree its own
        random rotation of the inputs.
    feature_scale : 'auto', 'std', None or array-like of shape (n_features,), default='auto'
        Per-feature length scales the trees divide the inputs by, as in
        :class:`MondrianFeatures`: 'std', the features' standard deviations
        over the points of ``fit`` (the first ``partial_fit`` before any
        ``fit``), so that features in different units are cut alike without
        a scaler (a Mondrian tree cuts a dimension in proportion to its
        extent: raw CPU data, seeds 0-2, regressor's test error 6.9-7.1 %
        with None, 3.0 % with 'std'); None, the inputs as given (the paper's
        forest); or the user's values; 'auto': 'std' with
        ``lifetime='auto'`` and at least 10 rows, None with a number (in the
        units of X) or fewer rows.  Fitted value: ``feature_scale_``.
    smoothing : bool, default=True
        Hierarchical smoothing of the node predictions (see below).  False
        gives the forest as the paper's Sec. 8.3 ran it: every node
        predicts from its own training points only.
    validation_fraction : float, default=0.2
        Fraction of the training points held out to select the lifetime and
        smoothing, when the lifetime is 'auto' (or, for the classifier, the
        discount is), if there are at least 20 points; at most
        :data:`MAX_SCORED` (1000) points.
    max_nodes : int or None, default=None
        Cap on the nodes of each tree for ``partial_fit`` (as in
        :class:`MondrianFeatures`)."""


class MondrianForestRegressor(RegressorMixin, _MondrianForestBase):
    r"""Mondrian forest regression: hierarchical Gaussian smoothing or
    aggregation over subtrees (AMF), whichever predicts held-out points better.

    Each tree predicts a mixture of Gaussians along the conditional Mondrian
    path of x (module docstring); the forest averages the trees.  By default
    (``aggregation='auto'``) the smoothed forest and the aggregated one are
    both fitted on the same trees and held-out points and the one with the
    smaller held-out squared error is kept (``aggregation_``).

    Smoothing (Lakshminarayanan, Roy & Teh, AISTATS 2016, Sec. 3).  Within
    the tree pruned at λ the node means follow a Brownian motion down the
    tree in the trees' time:

    .. math::

        \mu_{root} \sim N(\bar y, \phi(t_{root})), \quad
        \mu_j \mid \mu_{p(j)} \sim N(\mu_{p(j)}, \phi(t_j) - \phi(t_{p(j)})),
        \quad \phi(t) = \sigma_H^2 (1 - e^{-t/\theta}),

    the targets of an active node a being y ~ N(μ_a, σ_y²).  φ saturates, as
    the sigmoid of the AISTATS paper does: variance is added early in the
    tree's time, little after θ, so deep nodes (and the long-lived leaves
    of data-exhausted trees) stay close to their parents.  Two points
    separated by a Mondrian cut at time T ~ Exp(‖x - x'‖₁) share the
    Brownian path up to T, so the prior is a random-partition version of
    the kernel Cov(μ(x), μ(x')) = E φ(T) = σ_H² / (1 + θ‖x - x'‖₁) (for
    λ → ∞); θ = κλ₀, κ = ``prior_scale`` and λ₀ = ``lifetime_scale_`` (the
    inverse median ℓ₁ distance of the training points), so the prior's
    correlation halves at distance median/κ.  The posterior N(m_j, v_j) of
    every node's mean is computed exactly by Gaussian belief propagation,
    upward then
    downward (canonical factors (P, h); a leaf's is (n_a/σ_y², S_a/σ_y²),
    a child's message to its parent is (P, h)/(1 + PΔ_j), Δ_j the variance
    increment; the formulas are in ``c/mforest.c``), with the posterior
    covariance of a node and its parent, Cov(μ_p, μ_j) = v_p/(1 + P_jΔ_j).
    Components: a point in active node a, :math:`N(m_a, v_a + σ_y^2)`.  A
    point separating from node j at time s ∈ (t_p, t_j] (density ∝
    η_j e^{-η_j(s - t_p)}) sits in a new leaf whose branch leaves j's
    Brownian path at s: its mean is the bridge between μ_p and μ_j at s,

    .. math::

        \mu_p + r(s)(\mu_j - \mu_p), \quad
        r(s) = \frac{\phi(s) - \phi(t_p)}{\phi(t_j) - \phi(t_p)},
        \quad \text{variance } \frac{(\phi(s) - \phi(t_p))(\phi(t_j) -
        \phi(s))}{\phi(t_j) - \phi(t_p)},

    plus its own increment φ(λ) - φ(s) and σ_y²; the moments are
    integrated over (μ_p, μ_j) given the data and over s in closed form
    (E e^{-ks} of the truncated exponential, ``c/mforest.h``).  This refines
    the AISTATS paper's component, which hangs the new leaf from μ_p alone
    and so forgets how close to j the branching happened.  Above the root
    μ_p is the prior mean ȳ with variance 0.  σ_H² is the variance of the
    training targets (1 if they are constant); σ_y² = ``noise_variance``
    times it.

    Without smoothing (``smoothing=False``), node j's component is the
    moments of its own targets: mean S_j/n_j, second moment S2_j/n_j (so a
    training point at λ = Λ is predicted by the average over trees of its
    leaves' means, the "Mondrian forest" of the paper's Fig. 9), and the
    component above the root is the moments of all targets.

    Aggregation (``aggregation=True``; AMF).  Each tree predicts the
    average over all its pruned subtrees T (prior π(T) = 2^-N(T), N(T)
    the number of nodes of T that are internal in the tree) weighted by
    exp(-η L_T), L_T the square loss of T's predictions on the training
    points taken in their given order, each predicted before it is learnt
    (node predictions: the running means of their targets; a node's first
    point is not charged, as in the AMF authors' implementation).  Node
    weights are updated before the node's counts, the normalisers go up
    the tree (log w̄_v = log(½w_v + ½w̄_l w̄_r), w̄ = w at
    the leaves) and the prediction from x's leaf to the root (ŷ_v =
    a_v c_v + (1 - a_v) ŷ_child, a_v = w_v/2w̄_v); ``c/amf.h`` has the
    derivation.  ``lifetime='auto'`` grows the trees to Λ = 2¹⁴λ₀ (in
    practice to single-point leaves: AMF's infinite lifetime) and predicts
    there, the aggregation doing the pruning; any λ ≤ Λ can be predicted
    (the weights are recomputed on the tree pruned at λ).  AMF is an
    online method: ``fit`` takes the points in their given order, and the
    result depends on it.  ``partial_fit`` inserts the new points and
    carries every node's weight over (a new node inherits the history of
    the node it was inserted above), so fit on a stream in any batches
    gives the weights of the final trees as if they had existed all along.
    A new point follows the cuts to a leaf (AMF's convention), but one
    outside a tree's root box (the training points' bounding box) first
    separates from it with the conditional Mondrian's probability
    1 - exp(-Δ e) (e its ℓ₁ gap to the box, Δ = min(τ_root, λ)) into a leaf
    of its own, which holds no target and predicts the root's component:
    far from the data the prediction is the targets' mean and spread
    (``c/amf.h``; separating at every node of the path, the new leaf
    predicting as its parent, cost 2-9 % of test RMSE on CPU, concrete and
    energy).  ``predict(X, return_std=True)`` gives the standard deviation
    of the same average of the nodes' empirical target distributions
    (their means and second moments); it is not calibrated by itself
    (one-point leaves add no spread, shallow nodes the function's
    variation: 89 % to 99 % of test targets within ±1.96 std on the sets
    of ``doc/forests.rst``); with ``aggregation='auto'`` it is scaled on
    the held-out points (``std_scale_``).

    Predictive variance (law of total variance over the trees' mixture
    components c with weights w_{mc}):

    .. math::

        \mathrm{Var}[y] = \frac1M \sum_m \sum_c w_{mc} (s_c^2 + \mu_c^2)
                         - \Big(\frac1M \sum_m \sum_c w_{mc} \mu_c\Big)^2.

    Parameters
    ----------
    {common}
    noise_variance : 'auto' or float, default='auto'
        σ_y² as a fraction of the targets' variance.  'auto': selected
        among 0.003, 0.01, 0.03, 0.1, 0.3 by the log predictive density
        on the held-out points with ``lifetime='auto'``, else by
        leave-one-out on the trees of every training point (see
        ``hyper_``; 0.03 below 20 points); from an end of that grid, on
        past it while the density improves by more than :data:`EDGE_TOL`
        nats a step, :data:`EDGE_STEPS` steps at most: ×3 above 0.3, a
        decade below 0.003 down to the noise-free limit
        :data:`NOISE_FLOOR` = 1e-8 (the leaves' means taken as they are,
        the spread coming from the trees' disagreement and the separation
        components; on trees grown to one point per leaf it is often
        preferred: CCPP, energy).
    prior_scale : 'auto' or float, default='auto'
        κ of the prior's time scale θ = κλ₀.  'auto': selected among 0.25,
        1, 4, 16 as the noise is (1 below 20 points), and past either end
        (×4 a step) while the squared error improves by more than
        :data:`EDGE_TOL` of itself, :data:`EDGE_STEPS` steps at most.
        Large κ: short prior correlations (median/κ), but little prior
        variance spent by λ (φ(λ) = σ_H²(1 - e^{-λ/θ})), so shrinkage
        towards ȳ; small κ: the variance is spent early in the trees'
        time, and deep nodes are shrunk towards their ancestors.
    aggregation : 'auto' or bool, default='auto'
        True: online aggregation over the pruned subtrees of every tree
        (AMF, Mourtada, Gaïffas & Scornet, JRSS-B 2021; see "Aggregation"
        below and :mod:`mondrian.forest.aggregation`), the points taken in
        their given order; the smoothing parameters and
        ``validation_fraction`` are then not used.  False: the smoothed
        (or, ``smoothing=False``, unsmoothed) forest.  'auto': with
        ``lifetime='auto'`` and 50 held-out points or more (250 points at
        the default ``validation_fraction``), both on the same trees
        and held-out points: the smoothed forest's selection as with False,
        then AMF's weights from the training points in a random order (not
        the rows' order), its lifetime selected by the same grid, and AMF is
        kept if its held-out squared error is smaller (``aggregation_``,
        ``aggregation_scores_``); its predictive std is then scaled so that
        ±1.96 std covers 95 % of the held-out points (``std_scale_``; AMF's
        own spread is not calibrated).  Otherwise as False.  Default
        ``MondrianForestRegressor()``, test RMSE (sd units; 'auto' against
        False): CPU 0.261 / 0.304, concrete 0.384 / 0.439, energy 0.127 /
        0.146, CCPP 0.205 / 0.208, a smooth synthetic set 0.138 / 0.139
        (``asv_bench/mondrian_forest_check.py``, seed 0).
    step : 'auto' or float, default='auto'
        η of the aggregation's exponential weights exp(-η Σ (ŷ - y)²)
        (``aggregation=True`` only).  'auto': η = 1/(2ŝ²), ŝ² the noise
        variance estimated at ``fit`` on the trees' deepest splits (pooled
        variance within the nodes whose children are both leaves, at least
        10⁻³ Var(y)), which makes the weights the Gaussian likelihood of
        the targets (see :func:`mondrian.forest.aggregation.auto_step`;
        on dense, very noisy data a smaller step avoids interpolating the
        noise).  The nodes keep their cumulative losses, so η applies to
        the whole history and 'auto' is re-estimated after every
        ``partial_fit``.

    Attributes
    ----------
    features_ : MondrianFeatures
        The trees (the same forest serves the Mondrian kernel).
    forest_ : Forest
        ``features_.forest_``.
    lifetime_ : float
        Lifetime λ of the predictions.
    max_lifetime_ : float
        Lifetime Λ the trees are grown to.
    memory_capped_ : bool
        Whether ``lifetime='auto'`` lowered Λ below its automatic value
        (2⁷λ₀; 2¹⁴λ₀ with ``aggregation=True``) so that the fit fits in the
        available memory.
    hyper_ : tuple of float
        The noise fraction σ_y²/σ_H² and κ used.  Selection is a coordinate
        search: with ``lifetime='auto'``, on the held-out points, the
        lifetime by squared error at the default (0.03, 1), then κ by
        squared error, then the noise fraction by negative log predictive
        density; with a numeric lifetime, κ then the noise the same way but
        scored by the leave-one-out predictions of the training targets on
        the trees of every point.  κ and the noise are each taken past the
        ends of their grids while their criterion improves (see
        ``noise_variance``, ``prior_scale``), so a selected value at a grid's
        end is one its next step did not improve on.
    validation_scores_ : dict or None
        (mean squared error, mean negative log predictive density of the
        Gaussian with the mixture's mean and variance) on the held-out
        points of every (lifetime, hyper) evaluated (``lifetime='auto'``),
        or None.
    loo_scores_ : dict or None
        The same scores of the leave-one-out predictions of the training
        targets, for every (lifetime, hyper) evaluated by the selection of
        the smoothing, or None (nothing selected).
    lifetime_scale_ : float
        λ₀, the inverse median ℓ₁ distance between training points (divided
        by ``feature_scale_``).
    feature_scale_ : ndarray of shape (n_features,) or None
        The length scales the trees divide the inputs by (``feature_scale``).
    y_mean_ : float
        Mean ȳ of the targets at ``fit`` (the prior mean).
    y_var_ : float
        σ_H², their variance (1 if they are constant).
    node_count_ : ndarray of shape (n_nodes,)
        Number of training points of every node.
    node_sum_ : ndarray of shape (n_nodes,)
        Sum of their centred targets ``y - y_mean_``.
    node_sumsq_ : ndarray of shape (n_nodes,)
        Sum of the squares of their centred targets.  The ``node_*``
        arrays are not computed with ``aggregation=True``: ``amf_state_``
        holds them.
    amf_state_ : ndarray of shape (n_nodes, 4)
        With ``aggregation=True``: per node, minus the cumulative square
        loss L (log w = -η L), count, sum and sum of squares of the centred
        targets.
    step_ : float
        With aggregation: the η used.
    aggregation_ : bool
        Whether the fitted forest aggregates (AMF): ``aggregation`` itself,
        or what 'auto' chose.
    aggregation_scores_ : dict or None
        With 'auto' and held-out points: (squared error, negative log
        predictive density) of AMF on them at every lifetime tried; else
        None.
    std_scale_ : float
        Factor of the predictive std: with 'auto' choosing AMF, q/1.96, q
        the split-conformal 0.95 quantile of ``|y - ŷ| / std`` over the n
        held-out points (the k-th smallest, k = ⌈0.95 (n + 1)⌉; 1 if a zero
        std meets a non-zero residual at more than n - k of them); else 1.
    n_features_in_ : int
        Number of input features.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((300, 2))
    >>> y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> model = MondrianForestRegressor(n_trees=20, random_state=0).fit(X, y)
    >>> mean, std = model.predict(X[:3], return_std=True)
    >>> bool(np.all(std > 0))
    True
    """

    node_count_ = _Settled()
    node_sum_ = _Settled()
    node_sumsq_ = _Settled()

    def __init__(self, n_trees: int = 100, lifetime="auto", *, random_state=None,
                 n_jobs: int | None = None, rotation: str | None = None,
                 smoothing: bool = True, noise_variance="auto", prior_scale="auto",
                 validation_fraction: float = 0.2, max_nodes: int | None = None,
                 aggregation="auto", step="auto", feature_scale="auto"):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.rotation = rotation
        self.feature_scale = feature_scale
        self.smoothing = smoothing
        self.noise_variance = noise_variance
        self.prior_scale = prior_scale
        self.validation_fraction = validation_fraction
        self.max_nodes = max_nodes
        self.aggregation = aggregation
        self.step = step

    _selects_in_sample = True
    _NOISE_GRID = (0.003, 0.01, 0.03, 0.1, 0.3)
    _SCALE_GRID = (0.25, 1.0, 4.0, 16.0)

    def _hyper_grid(self) -> tuple:
        if not self.smoothing:
            return ((0.0, 0.0),)
        noise = self._NOISE_GRID if isinstance(self.noise_variance, str) \
            else (float(self.noise_variance),)
        scale = self._SCALE_GRID if isinstance(self.prior_scale, str) \
            else (float(self.prior_scale),)
        return tuple((r, k) for r in noise for k in scale)

    def _default_hyper(self, grid: tuple) -> tuple:
        noise = 0.03 if isinstance(self.noise_variance, str) else float(self.noise_variance)
        scale = 1.0 if isinstance(self.prior_scale, str) else float(self.prior_scale)
        return (noise, scale) if self.smoothing else grid[0]

    def _resolve(self, lam: float, hyper: tuple) -> tuple:
        """(noise fraction, κ) -> (noise fraction, θ = κλ₀)."""
        noise, kappa = hyper
        return (noise, kappa * self.lifetime_scale_)

    def _select_hyper(self, grid: tuple, default: tuple, score) -> tuple:
        """κ by held-out squared error at the default noise, then the noise
        by held-out NLPD at that κ."""
        kappa = _select_past_edge({k for _, k in grid}, lambda k: score((default[0], k))[0],
                                  relative=True)
        noise = _select_past_edge({r for r, _ in grid}, lambda r: score((r, kappa))[1],
                                  relative=False,
                                  floor=NOISE_FLOOR, down=NOISE_STEP_DOWN)
        return (noise, kappa)

    def fit(self, X, y) -> "MondrianForestRegressor":
        """Grow the trees on X and fit the node statistics of y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points (dense, finite).
        y : array-like of shape (n_samples,)
            Targets (finite).

        Returns
        -------
        self
        """
        params = self._check_common()
        _check_auto_or_positive(self.noise_variance, "noise_variance")
        _check_auto_or_positive(self.prior_scale, "prior_scale")
        amf.check_step(self.step, "step", allow_auto=True)
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64)
        check_target_scale(y, what=FOREST_STATISTICS)
        self.y_mean_ = float(np.mean(y))
        var = float(np.var(y))
        self.y_var_ = var if var > 0.0 else 1.0
        self._posterior_cache = [None]
        self._fit_forest(X, y - self.y_mean_, params)
        return self

    @classmethod
    def from_features(cls, features: MondrianFeatures, y, *, lifetime: float | None = None,
                      smoothing: bool = True, noise_variance="auto", prior_scale="auto",
                      random_state=None, n_jobs: int | None = None) -> "MondrianForestRegressor":
        """A fitted forest regressor on the trees of a fitted :class:`MondrianFeatures`.

        The Mondrian kernel and the Mondrian forest then share one set of
        Mondrian samples, as in the paper's Sec. 6 and 8.3 (Fig. 9): the
        kernel fits all trees' cell weights jointly (ridge on the features),
        the forest each tree's on its own (its node statistics of ``y``).
        The trees are not copied: the estimator reads ``features.forest_``
        itself (its ``features_`` is a shallow copy of ``features`` around the
        same :class:`~mondrian._ext._forest.Forest`, which it pins, so that an
        insertion or extension through ``features``, or through a kernel
        estimator holding it, grows a copy and leaves these trees as they
        are).  Its own :meth:`partial_fit` inserts into a copy too.

        The result predicts exactly as ``MondrianForestRegressor(n_trees,
        lifetime, random_state=random_state, ...)`` fitted on the same
        points would if its trees were these: for a numeric lifetime ``fit``
        grows the trees on every point and selects the smoothing in sample
        (leave-one-out), which is what is done here on the given trees; so
        with ``features = MondrianFeatures(n_trees, lifetime,
        random_state=s).fit(X)`` and ``random_state=s`` the two are
        identical.  ``lifetime='auto'`` is not available (its held-out
        points would already be in the trees).

        Parameters
        ----------
        features : MondrianFeatures
            Fitted, keeping its training points (``store_points=True``).
        y : array-like of shape (n_points,)
            Targets of the forest's points, in its row order (the order of
            ``fit``, then of every ``partial_fit``).
        lifetime : float or None, default=None
            Lifetime λ ≤ ``features.lifetime_`` of the predictions; None:
            ``features.lifetime_``.
        smoothing, noise_variance, prior_scale : see the class parameters
        random_state : None, int, SeedSequence or Generator, default=None
            Draws the rows from which λ₀ (``lifetime_scale_``, the prior's
            time scale) is computed when there are more than 1000 points.
        n_jobs : int or None, default=None
            Threads.

        Returns
        -------
        MondrianForestRegressor
            Fitted; its parameters describe it (``n_trees``, ``lifetime``,
            ``rotation``, ``feature_scale`` and ``max_nodes`` are those of
            ``features``), so
            :func:`sklearn.base.clone` gives an unfitted estimator that
            grows trees of its own.
        """
        check_fitted_features(features)
        forest = features.forest_
        lam = (features.lifetime_ if lifetime is None
               else check_lifetime(lifetime, upper=features.lifetime_))
        model = cls(n_trees=forest.n_trees, lifetime=lam, random_state=random_state,
                    n_jobs=n_jobs, rotation=features.rotation,
                    feature_scale=features.feature_scale_, smoothing=smoothing,
                    noise_variance=noise_variance, prior_scale=prior_scale,
                    max_nodes=features.max_nodes, aggregation=False)
        model._set_mode(False)
        model.memory_capped_ = False
        params = model._check_common()
        _check_auto_or_positive(noise_variance, "noise_variance")
        _check_auto_or_positive(prior_scale, "prior_scale")
        y = column_or_1d(np.asarray(y), warn=True)
        if y.dtype.kind not in "biuf":
            raise TypeError(f"y must be numeric, got dtype {y.dtype}")
        y = y.astype(np.float64)
        if y.shape[0] != forest.n_points:
            raise ValueError(f"y has {y.shape[0]} entries, but features' forest holds "
                             f"{forest.n_points} points")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity")
        check_target_scale(y, what=FOREST_STATISTICS)
        model.n_features_in_ = features.n_features_in_
        if hasattr(features, "feature_names_in_"):
            model.feature_names_in_ = features.feature_names_in_
        model.y_mean_ = float(np.mean(y))
        var = float(np.var(y))
        model.y_var_ = var if var > 0.0 else 1.0
        model._posterior_cache = [None]
        model._resolved = None
        rng = check_random_generator(random_state)
        model.feature_scale_ = features.feature_scale_
        model.lifetime_scale_ = lifetime_scale(np.asarray(forest.X), rng,
                                               rotation=params["rotation"],
                                               scale=model.feature_scale_)
        model.validation_scores_ = None
        model.loo_scores_ = None
        shared = copy.copy(features)
        model._share_token = _ShareToken()
        forest.pin(model._share_token)
        select_hyper = len(model._hyper_grid()) > 1 and y.size >= MIN_POINTS_FOR_SELECTION
        model._fit_on_features(shared, y - model.y_mean_, lam, select_hyper)
        return model

    def partial_fit(self, X, y) -> "MondrianForestRegressor":
        """Insert the points X into the trees and update the node statistics.

        Before any ``fit`` this is ``fit(X, y)``.  Otherwise every point is
        inserted into every tree by the conditional Mondrian
        (:meth:`MondrianFeatures.partial_fit`: the trees stay distributed as
        if grown in batch on all points seen), and the node statistics are
        recomputed exactly from the trees' point slices once per batch
        (O(points + nodes) per tree, the order of the insertion's own
        renumbering).  ``lifetime_``, ``hyper_``, ``std_scale_``,
        ``y_mean_`` and ``y_var_`` (the prior) are kept.  With aggregation
        (``aggregation_``) the node weights are carried over the insertion
        and the new points taken in order: the result is the one of ``fit``
        on the final trees with all the points in order.

        The points are inserted when the fitted state is next read
        (``predict``, ``forest_``, the node statistics...), or once those
        waiting are as many as the points the trees hold (or 64 MiB), all
        of them as one batch: the result is bit for bit that of inserting
        each call's points at once, and a stream given point by point costs
        O(log n) passes over the nodes instead of one per call.  Their
        values are checked (and copied) here.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points.
        y : array-like of shape (n_samples,)
            Their targets.

        Returns
        -------
        self
        """
        if "_features_" not in self.__dict__:
            return self.fit(X, y)
        X, y = check_array_input(self, X, reset=False, y=y, y_numeric=True)
        y = target_column(y).astype(np.float64, copy=False)
        # Against the fitted mean: a batch of equal, huge targets has a
        # centred norm of 0 but squares to inf in the node statistics.
        check_target_scale(y - self.y_mean_, "y", centre=False,
                           what=FOREST_STATISTICS)
        self._defer_points(X, y - self.y_mean_)
        return self

    def _fit_bytes_per_node(self, n_features: int) -> float:
        """Peak bytes of ``fit`` per node of the final trees: the forest's
        storage (node_bytes), and about as much again for the node
        statistics, the posterior's and AMF's arrays and the held-out
        points' insertion (each tree's links copied to its scratch), with
        32 bytes to spare (measured: 3·10⁵ synthetic rows of 8 features,
        100 trees, 3.5·10⁷ nodes, a peak of 13.1 GiB, 404 bytes a node; this
        gives 432)."""
        return 2.0 * node_bytes(n_features) + 32.0

    def _compute_stats(self) -> None:
        count, total, sumsq = _mforest.regression_stats(
            self.features_.forest_, self._targets, resolve_n_jobs(self.n_jobs))
        self.node_count_, self.node_sum_, self.node_sumsq_ = count, total, sumsq
        self._posterior_cache = [None]

    def _components(self, lam: float, hyper):
        """Without smoothing: the leaf and branch components (mean, second
        moment) of every node, centred at y_mean_, and the one above the
        root.  With smoothing: the posterior (mean, var, cov) of the node
        means, computed on the first prediction at (``lifetime_``,
        ``hyper_``) and kept (``fit`` does not need it)."""
        count, total, sumsq = self.node_count_, self.node_sum_, self.node_sumsq_
        if not self.smoothing:
            comp = np.column_stack([total / count, sumsq / count])
            root = np.array([np.mean(self._targets), np.mean(self._targets**2)])
            return comp, comp, root
        noise, theta = hyper
        key = (lam, hyper)
        cached = self._posterior_cache[0]
        if cached is not None and cached[0] == key:
            return cached[1]
        fitted = self._is_fitted_key(lam, hyper)
        # A selection's candidates share one scratch, and those not kept one
        # set of output arrays (_selection_buffers).
        work = self.__dict__.get("_posterior_work")
        # The prior increments (most of the work) depend on (λ, θ) only: the
        # noise levels tried at one (λ, θ) reuse those the last call left in
        # the scratch (on 2·10⁷ nodes, 0.35 -> 0.17 s a candidate).
        increments = (lam, self.y_var_, theta)
        reuse = work is not None and self.__dict__.get("_posterior_work_key") == increments
        post = _mforest.gauss_posterior(self.forest_, lam, count, total, 0.0, self.y_var_,
                                        theta, noise * self.y_var_,
                                        resolve_n_jobs(self.n_jobs),
                                        out=None if fitted or work is None else work[:3],
                                        work=None if work is None else work[3],
                                        reuse_increments=reuse)
        if work is not None:
            self.__dict__["_posterior_work_key"] = increments
        if fitted:
            # In place: predicting leaves the estimator's __dict__ as it was.
            self._posterior_cache[0] = (key, post)
        return post

    def _score_loo(self, lam: float, hypers: list) -> list[tuple[float, float]]:
        """(mean squared error, mean negative log predictive density) of the
        forest's leave-one-out predictions of its training targets at each
        of ``hypers`` (``c/mforest.h``, ``mt_forest_gauss_loo``): per tree,
        the predictive N(m, v + σ_y²) of y_i given every other target on the
        same trees; the forest's is the mixture over trees, scored by the
        Gaussian with its mean and variance, as held-out points are."""
        resolved = [self._resolve(lam, h) for h in hypers]
        out = _mforest.gauss_loo(self.forest_, lam, self.node_count_, self.node_sum_,
                                 self._targets, 0.0, self.y_var_,
                                 [theta for _, theta in resolved],
                                 [noise * self.y_var_ for noise, _ in resolved],
                                 resolve_n_jobs(self.n_jobs))
        return [_gauss_scores(self._targets - block[:, 0], block[:, 1] - block[:, 0]**2)
                for block in out]

    def _select_in_sample(self, grid: tuple, default: tuple) -> tuple:
        """A coordinate search (κ by squared error at the default noise,
        then the noise by NLPD at that κ), scored by leave-one-out on the trees of every point at ``lifetime_``; each
        stage's candidates in one call.  The scores go to ``loo_scores_``."""
        kappas = sorted({k for _, k in grid})
        noises = sorted({r for r, _ in grid})
        lam = self.lifetime_
        first = [(default[0], k) for k in kappas]
        scores = dict(zip(first, self._score_loo(lam, first)))

        def score(hyper):
            if hyper not in scores:  # past a grid's end: one at a time
                scores[hyper] = self._score_loo(lam, [hyper])[0]
            return scores[hyper]

        kappa = _select_past_edge(kappas, lambda k: score((default[0], k))[0], relative=True)
        second = [(r, kappa) for r in noises if (r, kappa) not in scores]
        if second:
            scores.update(zip(second, self._score_loo(lam, second)))
        noise = _select_past_edge(noises, lambda r: score((r, kappa))[1], relative=False,
                                  floor=NOISE_FLOOR, down=NOISE_STEP_DOWN)
        self.loo_scores_ = {(lam, h): v for h, v in scores.items()}
        return (noise, kappa)

    def _amf_resolve(self) -> None:
        self.step_ = self._amf_step(self.amf_state_)

    def _amf_step(self, state: np.ndarray) -> float:
        step = amf.check_step(self.step, "step", allow_auto=True)
        if step == "auto":
            step = amf.auto_step(self.forest_, state, self.y_var_)
        return step

    def _amf_args(self) -> dict:
        return dict(n_classes=None, dirichlet=None, n_threads=resolve_n_jobs(self.n_jobs))

    def _amf_components(self, state: np.ndarray) -> np.ndarray:
        return amf.regression_components(state)

    def _amf_scores(self, pred: np.ndarray, y_centred: np.ndarray) -> tuple[float, float]:
        """(squared error, Gaussian NLPD) of aggregated predictions (mean,
        second moment) of held-out centred targets, as ``_score_held_out``."""
        return _gauss_scores(y_centred - pred[:, 0], pred[:, 1] - pred[:, 0]**2)

    def _posterior_arrays(self) -> tuple:
        """mean, var, cov and the 5·n_nodes scratch of ``gauss_posterior``."""
        n = self.forest_.n_nodes
        return np.empty(n), np.empty(n), np.empty(n), np.empty(5 * n)

    def _calibrate(self, pred, y_centred) -> None:
        """``std_scale_`` of an aggregated forest selected on held-out points
        (1 without them, ``pred`` None): q/1.96, q the k-th smallest of the
        n normalised residuals ``|y - ŷ| / std`` over them, k = ⌈0.95 (n +
        1)⌉: the split-conformal quantile, with which ±1.96 std covers a new
        point exchangeable with them with probability at least 0.95 (the
        plain 0.95 quantile falls short by O(1/n): 1-4 % of coverage at
        50-123 points).  The std of AMF's node mixture is not calibrated by
        itself.  1 where it cannot be measured (a zero std with a non-zero
        residual at more than n - k of the points, no spread at all, or
        k > n)."""
        if pred is None:
            self.std_scale_ = 1.0
            return
        mean = pred[:, 0]
        std = np.sqrt(np.maximum(pred[:, 1] - mean**2, 0.0))
        resid = np.abs(y_centred - mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(std > 0.0, resid / std, np.where(resid > 0.0, np.inf, 0.0))
        k = conformal_rank(ratio.size, COVERAGE_LEVEL)
        q = float(np.partition(ratio, k - 1)[k - 1]) if k <= ratio.size else np.inf
        self.std_scale_ = q / COVERAGE_Z if np.isfinite(q) and q > 0.0 else 1.0

    def _drop_stats(self) -> None:
        for name in ("node_count_", "node_sum_", "node_sumsq_"):
            self.__dict__.pop("_" + name, None)

    def _moments(self, X: np.ndarray, lam: float, hyper,
                 paths=None) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance at X (or at the points of ``paths``,
        ``_mforest.Paths`` of X: the same numbers without walking)."""
        if self.aggregation_:
            out = self._amf_predict(X, lam)
        elif self.smoothing:
            noise, theta = hyper
            mean, var, cov = self._components(lam, hyper)
            args = (lam, mean, var, cov, 0.0, self.y_var_, theta, noise * self.y_var_,
                    resolve_n_jobs(self.n_jobs))
            if paths is not None:
                out = _mforest.gauss_mixture_paths(self.forest_, paths, *args)
            else:
                out = _mforest.gauss_mixture(self.forest_, X, *args)
        else:
            out = self._mixture(X, lam, hyper, paths)
        mean = out[:, 0]
        var = np.maximum(out[:, 1] - mean**2, 0.0)
        return mean + self.y_mean_, var

    def _score_held_out(self, X, y_centred, lam, hyper, paths=None) -> tuple[float, float]:
        mean, var = self._moments(X, lam, self._resolve(lam, hyper), paths)
        return _gauss_scores(y_centred + self.y_mean_ - mean, var)

    def predict(self, X, return_std: bool = False, lifetime: float | None = None):
        """Predictive mean (and standard deviation) of the forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points, anywhere (also outside the training data's hull).
        return_std : bool, default=False
            Also return the predictive standard deviation of the mixture of
            the trees' Gaussians (law of total variance).
        lifetime : float or None, default=None
            Lifetime λ ≤ ``max_lifetime_`` of the prediction; None:
            ``lifetime_``.  Every λ is predicted from the same trees.

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        check_is_fitted(self, "features_")
        check_bool(return_std, "return_std")
        lam = self._prediction_lifetime(lifetime)
        X = check_array_input(self, X, reset=False)
        mean, var = self._moments(X, lam, self._resolved)
        if return_std:
            return mean, np.sqrt(var) * self.std_scale_
        return mean


MondrianForestRegressor.__doc__ = MondrianForestRegressor.__doc__.replace(
    "{common}", _COMMON_PARAMS)


class MondrianForestClassifier(ClassifierMixin, _MondrianForestBase):
    r"""Mondrian forest classification with hierarchical smoothing.

    Each tree predicts the mixture of class distributions along the
    conditional Mondrian path of x (module docstring); the forest averages
    the trees.

    Smoothing: the interpolated Kneser-Ney approximation of the hierarchical
    normalised stable process of Lakshminarayanan, Roy & Teh (NIPS 2014,
    Sec. 5), on the tree pruned at λ.  An active node's counts c_jk are its
    class counts; an internal node's are its children's "tables",
    c_jk = Σ_children min(c_child,k, 1).  With tab_jk = min(c_jk, 1),
    T_j = Σ_k tab_jk, n_j = Σ_k c_jk and the discount d_j = exp(-γ Δ_j),
    Δ_j = t_j - t_parent(j):

    .. math::

        G_{jk} = \frac{c_{jk} - d_j\, tab_{jk} + d_j T_j\, G_{p(j),k}}{n_j},

    top-down from the uniform base distribution above the root.  A short
    node (small Δ_j) discounts much and leans on its parent; a long one
    keeps its own counts.  γ = ``discount``/λ₀, λ₀ = ``lifetime_scale_``
    (the NIPS paper's γ = 10D on data scaled to [0, 1]^D, where λ₀ ≈ 3/D,
    is ``discount`` ≈ 30).  Components: a point in
    active node a predicts G_a; a point in a new leaf branching off below p
    (no training point there) predicts G_p; above the root, the base.

    Without smoothing (``smoothing=False``) node j predicts its class
    frequencies c_jk/n_j, and the component above the root is the
    frequencies of all training labels.

    Aggregation (``aggregation=True``; AMF, as in
    :class:`MondrianForestRegressor` with the log loss): each tree predicts
    the average over its pruned subtrees T, prior 2^-N(T) (N(T) the nodes
    of T internal in the tree), weighted by exp(-η Σ_t -log p_T(y_t)), the
    points taken in their given order, each node predicting
    (n_k + α)/(n + Kα) from the points it had before (its first point not
    charged).  ``lifetime='auto'``
    grows the trees to Λ = 2¹⁴λ₀ (single-point leaves in practice) and
    predicts there; a point follows the cuts, except that outside a tree's
    root box it first leaves the tree with the conditional Mondrian's
    probability and then predicts the root's class probabilities
    (``c/amf.h``).

    Parameters
    ----------
    {common}
    discount : 'auto' or float, default='auto'
        γλ₀ of the discount (larger: less smoothing).  'auto': selected
        among 1, 3, 10, 30 on the held-out points by log-loss, and past
        either end (×3 a step) while the log-loss improves by more than
        :data:`EDGE_TOL` nats, :data:`EDGE_STEPS` steps at most; 10 when
        nothing is held out.
    aggregation : bool or 'auto', default=False
        Online aggregation over the pruned subtrees of every tree (AMF;
        see "Aggregation" below).  ``smoothing``, ``discount`` and
        ``validation_fraction`` are then not used.  'auto': as the
        regressor's, AMF against the smoothed forest on the held-out
        points, by log-loss (on 8000 rows of cod_rna the smoothed forest's
        was 0.305 against AMF's 0.324, which is why the default stays
        False here).
    step : float, default=1.0
        η of the exponential weights exp(-η Σ -log p(y)) (AMF's default 1:
        the aggregate is then the Bayesian mixture of the subtrees'
        sequential predictive distributions).
    dirichlet : float, default=0.5
        α of the nodes' Dirichlet predictions (n_k + α)/(n + Kα) (0.5: the
        Krichevsky-Trofimov estimator, AMF's default).

    Attributes
    ----------
    features_ : MondrianFeatures
        The trees.
    forest_ : Forest
        ``features_.forest_``.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    lifetime_ : float
        Lifetime λ of the predictions.
    max_lifetime_ : float
        Lifetime Λ the trees are grown to.
    memory_capped_ : bool
        Whether ``lifetime='auto'`` lowered Λ below its automatic value
        (2⁷λ₀; 2¹⁴λ₀ with ``aggregation=True``) so that the fit fits in the
        available memory.
    hyper_ : float
        The discount γλ₀ used.
    validation_scores_ : dict or None
        Held-out log-loss (twice) of every (lifetime, discount) evaluated,
        or None.
    lifetime_scale_ : float
        λ₀, the inverse median ℓ₁ distance between training points (divided
        by ``feature_scale_``).
    feature_scale_ : ndarray of shape (n_features,) or None
        The length scales the trees divide the inputs by (``feature_scale``).
    node_counts_ : ndarray of shape (n_nodes, n_classes)
        Class counts of every node (not computed with ``aggregation=True``:
        ``amf_state_`` holds them).
    amf_state_ : ndarray of shape (n_nodes, n_classes + 2)
        With ``aggregation=True``: per node, minus the cumulative log loss
        L (log w = -η L), count, and class counts.
    step_ : float
        With aggregation: the η used.
    aggregation_ : bool
        Whether the fitted forest aggregates (AMF): ``aggregation`` itself,
        or what 'auto' chose.
    aggregation_scores_ : dict or None
        With 'auto' and held-out points: AMF's held-out log-loss (twice) at
        every lifetime tried; else None.
    n_features_in_ : int
        Number of input features.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((300, 2))
    >>> y = np.where(X[:, 0] > 0.5, "a", "b")
    >>> model = MondrianForestClassifier(n_trees=20, random_state=0).fit(X, y)
    >>> model.predict_proba(X[:2]).sum(axis=1)
    array([1., 1.])
    """

    node_counts_ = _Settled()

    def __init__(self, n_trees: int = 100, lifetime="auto", *, random_state=None,
                 n_jobs: int | None = None, rotation: str | None = None,
                 smoothing: bool = True, discount="auto",
                 validation_fraction: float = 0.2, max_nodes: int | None = None,
                 aggregation: bool = False, step: float = 1.0, dirichlet: float = 0.5,
                 feature_scale="auto"):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.rotation = rotation
        self.feature_scale = feature_scale
        self.smoothing = smoothing
        self.discount = discount
        self.validation_fraction = validation_fraction
        self.max_nodes = max_nodes
        self.aggregation = aggregation
        self.step = step
        self.dirichlet = dirichlet

    _DISCOUNT_GRID = (1.0, 3.0, 10.0, 30.0)

    def _hyper_grid(self) -> tuple:
        if not self.smoothing:
            return (0.0,)
        if isinstance(self.discount, str):
            return self._DISCOUNT_GRID
        return (float(self.discount),)

    def _default_hyper(self, grid: tuple) -> float:
        return 10.0 if len(grid) > 1 else grid[0]

    def _resolve(self, lam: float, discount: float) -> float:
        """γλ₀ -> γ."""
        return discount / self.lifetime_scale_

    def fit(self, X, y) -> "MondrianForestClassifier":
        """Grow the trees on X and fit the node class counts of y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points (dense, finite).
        y : array-like of shape (n_samples,)
            Class labels (strings, integers, ...).

        Returns
        -------
        self
        """
        params = self._check_common()
        _check_auto_or_positive(self.discount, "discount", allow_zero=True)
        amf.check_step(self.step, "step")
        amf.check_step(self.dirichlet, "dirichlet")
        X, y = check_array_input(self, X, reset=True, y=y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        self._posterior_cache = [None]
        self._fit_forest(X, codes.astype(np.int64), params)
        return self

    def partial_fit(self, X, y, classes=None) -> "MondrianForestClassifier":
        """Insert the points X into the trees and update the node counts.

        Before any ``fit`` this is ``fit(X, y)`` (with ``classes``, if given,
        as the full set of labels).  Otherwise every point is inserted into
        every tree by the conditional Mondrian and the class counts are
        recomputed exactly from the trees' point slices once per batch
        (with ``aggregation=True``: the node weights carried over and the
        new points taken in order).  Labels must be among ``classes_``.
        As in :meth:`MondrianForestRegressor.partial_fit`, the points wait
        until the fitted state is next read (or until they are as many as
        the trees hold) and are then inserted as one batch, with the same
        result bit for bit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points.
        y : array-like of shape (n_samples,)
            Their labels.
        classes : array-like or None, default=None
            Every label of the stream (first call only; later calls must
            pass None or the same set).

        Returns
        -------
        self
        """
        if "_features_" not in self.__dict__:
            self.fit(X, y)
            if classes is not None:
                all_classes = np.unique(np.asarray(classes))
                if not np.all(np.isin(self.classes_, all_classes)):
                    raise ValueError(f"y has labels outside classes={classes!r}")
                codes = np.searchsorted(all_classes, self.classes_[self._targets])
                self.classes_ = all_classes
                self._targets = codes.astype(np.int64)
                if self.aggregation_:  # the Dirichlet node predictions depend on K
                    self._amf_restart(self.forest_.X, self._targets)
                else:
                    self._compute_stats()
            return self
        if classes is not None and not np.array_equal(np.unique(np.asarray(classes)),
                                                      self.classes_):
            raise ValueError(f"classes={classes!r} differs from the fitted classes_ "
                             f"{self.classes_!r}")
        X, y = check_array_input(self, X, reset=False, y=y)
        y = target_column(y)
        unknown = ~np.isin(y, self.classes_)
        if np.any(unknown):
            raise ValueError(f"y has labels not seen in fit: {np.unique(y[unknown])!r}; "
                             f"pass every label as classes= on the first partial_fit")
        codes = np.searchsorted(self.classes_, y).astype(np.int64)
        self._defer_points(X, codes)
        return self

    def _fit_bytes_per_node(self, n_features: int) -> float:
        """Peak bytes of ``fit`` per node of the final trees, as the
        regressor's with the class counts for its statistics (measured:
        3·10⁵ synthetic rows of 8 features, two classes, 100 trees, 3.6·10⁷
        nodes, a peak of 12.1 GiB, 355 bytes a node; this gives 416)."""
        return 2.0 * node_bytes(n_features) + 8.0 * max(int(self.classes_.size), 2)

    def _compute_stats(self) -> None:
        self.node_counts_ = _mforest.class_stats(self.features_.forest_, self._targets,
                                                 self.classes_.size,
                                                 resolve_n_jobs(self.n_jobs))
        self._posterior_cache = [None]

    def _amf_resolve(self) -> None:
        self.step_ = self._amf_step(self.amf_state_)

    def _amf_step(self, state: np.ndarray) -> float:
        return amf.check_step(self.step, "step")

    def _amf_args(self) -> dict:
        return dict(n_classes=self.classes_.size,
                    dirichlet=float(self.dirichlet), n_threads=resolve_n_jobs(self.n_jobs))

    def _amf_components(self, state: np.ndarray) -> np.ndarray:
        return amf.class_components(state, float(self.dirichlet))

    def _amf_scores(self, proba: np.ndarray, codes: np.ndarray) -> tuple[float, float]:
        """Held-out log-loss of aggregated class probabilities (twice, as
        ``_score_held_out``)."""
        return _log_loss(proba / proba.sum(axis=1, keepdims=True), codes)

    def _drop_stats(self) -> None:
        self.__dict__.pop("_node_counts_", None)

    def _components(self, lam: float, rate: float):
        K = self.classes_.size
        counts = self.node_counts_
        if not self.smoothing:
            comp = counts / counts.sum(axis=1, keepdims=True)
            root = np.bincount(self._targets, minlength=K) / self._targets.size
            return comp, comp, root
        base = np.full(K, 1.0 / K)
        key = (lam, rate)
        cached = self._posterior_cache[0]
        if cached is not None and cached[0] == key:
            prob = cached[1]
        else:
            # A selection's candidates share one scratch, and those not kept
            # one output array (_selection_buffers).
            fitted = self._is_fitted_key(lam, rate)
            work = self.__dict__.get("_posterior_work")
            prob = _mforest.class_posterior(self.forest_, lam, counts, base, rate,
                                            resolve_n_jobs(self.n_jobs),
                                            out=None if fitted or work is None else work[0],
                                            work=None if work is None else work[1])
            if fitted:
                self._posterior_cache[0] = (key, prob)
        return prob, prob, base

    def _posterior_arrays(self) -> tuple:
        """The class probabilities (n_nodes x K) and the n_nodes·K scratch of
        ``class_posterior``."""
        n, K = self.forest_.n_nodes, self.classes_.size
        return np.empty((n, K)), np.empty(n * K)

    def _score_held_out(self, X, codes, lam, hyper, paths=None) -> tuple[float, float]:
        return _log_loss(self._mixture(X, lam, self._resolve(lam, hyper), paths), codes)

    def _select_hyper(self, grid: tuple, default: float, score) -> float:
        """The discount by held-out log-loss (past the grid's ends while it
        improves: :func:`_select_past_edge`)."""
        return _select_past_edge(grid, lambda h: score(h)[0], relative=False)

    def predict_proba(self, X, lifetime: float | None = None) -> np.ndarray:
        """Class probabilities of the forest (rows sum to 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points, anywhere.
        lifetime : float or None, default=None
            Lifetime λ ≤ ``max_lifetime_``; None: ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self, "features_")
        lam = self._prediction_lifetime(lifetime)
        X = check_array_input(self, X, reset=False)
        if self.aggregation_:
            proba = self._amf_predict(X, lam)
        else:
            proba = self._mixture(X, lam, self._resolved)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X, lifetime: float | None = None) -> np.ndarray:
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points.
        lifetime : float or None, default=None
            Lifetime λ ≤ ``max_lifetime_``; None: ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X, lifetime)
        return self.classes_[np.argmax(proba, axis=1)]


MondrianForestClassifier.__doc__ = MondrianForestClassifier.__doc__.replace(
    "{common}", _COMMON_PARAMS)
