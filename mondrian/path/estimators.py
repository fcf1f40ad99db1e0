"""Estimators that learn the kernel width from one forest (paper Sec. 4).

:class:`MondrianKernelRidgeCV` sweeps the lifetime λ ∈ [0, Λ] of a Mondrian
forest grown once to Λ, with ridge regression warm-started along the path
(exact Cholesky up/down-dates or conjugate gradients, :mod:`mondrian.path`)
for several alphas, and selects (λ, α) on validation data or by the exact
log marginal likelihood (Sec. 4.2.1).  :class:`MondrianKernelClassifierCV`
does the same for classification with the SGD path (Sec. 4.2.2).

Validation points held out from ``X`` are grown into the trees with the
training points (their targets are never used by the learners), so their
features along the path are exact indicators, read off the trees like the
training points'; explicit ``X_val`` is treated the same way.  After
selection the weights are refitted on all labelled points at (λ̂, α̂).

With ``warm_start=True`` a later ``fit`` to a larger ``max_lifetime`` on
the same data continues the path: the forest is extended
(``MondrianFeatures.extend``, memorylessness, DESIGN.md §2), the learners
run over the new split events only and the selection is redone over the
whole path.
"""
from __future__ import annotations

import hashlib
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import column_or_1d
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted

from .._validation import (check_alphas, check_array_input, check_bool, check_fraction,
                           check_int, check_lifetime, check_positive_float,
                           check_random_generator)
from ..features.mondrian import MondrianFeatures
from ..ridge import ridge_solve
from .events import lifetime_grid, split_events
from .learners import (CGRidgePath, ExactRidgePath, SGDPath, check_exact_size,
                       exact_path_memory)
from .posterior import LifetimePosterior

__all__ = ["MondrianKernelRidgeCV", "MondrianKernelClassifierCV", "AUTO_EXACT_COLUMNS"]

#: Largest number of path states averaged by ``predict(average=True)``.
_BMA_MAX_STATES = 200

#: ``solver='auto'`` uses the exact Cholesky path up to this many columns at
#: the terminal lifetime (about 1 s per alpha at 1500 columns), CG above.
AUTO_EXACT_COLUMNS = 1500

_SOLVERS = ("auto", "cholesky", "cg")
_SELECTIONS = ("validation", "evidence")


def _stack_data(X, y, X_val, y_val, classification: bool = False):
    """Validate ``X_val``/``y_val`` and stack them under the validated X, y.

    Returns (X_all, y_all, n_given): the first ``n_given`` rows are X.
    """
    if (X_val is None) != (y_val is None):
        raise ValueError("pass both X_val and y_val, or neither")
    if X_val is None:
        return X, y, X.shape[0]
    X_val = check_array(X_val, dtype=np.float64, order="C", ensure_all_finite=True,
                        input_name="X_val")
    if X_val.shape[1] != X.shape[1]:
        raise ValueError(f"X_val has {X_val.shape[1]} features, but X has {X.shape[1]}")
    y_val = column_or_1d(np.asarray(y_val), warn=True)
    if not classification:
        y_val = y_val.astype(np.float64)
        if not np.all(np.isfinite(y_val)):
            raise ValueError("y_val must be finite")
    if y_val.shape[0] != X_val.shape[0]:
        raise ValueError(f"X_val has {X_val.shape[0]} rows but y_val has {y_val.shape[0]}")
    return np.vstack([X, X_val]), np.concatenate([y, y_val]), X.shape[0]


def _holdout_mask(est, n_all: int, n_given: int, need_validation: bool, fraction: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Training mask over the stacked points: explicit validation rows (after
    ``n_given``) are held out; without them, and if ``need_validation``, a
    random ``fraction`` of X is."""
    mask = np.ones(n_all, dtype=bool)
    if n_given < n_all:
        mask[n_given:] = False
        return mask
    if need_validation:
        if n_all < 2:
            raise ValueError(f"{type(est).__name__} needs at least 2 samples to hold out "
                             f"validation data, got n_samples = {n_all} (1 sample)")
        n_val = min(n_all - 1, max(1, int(round(fraction * n_all))))
        mask[rng.permutation(n_all)[:n_val]] = False
    return mask


# --------------------------------------------------------------------------
# warm_start: continuing the path to a larger max_lifetime
# --------------------------------------------------------------------------
#: Parameters that may differ between two fits continued by ``warm_start``
#: (``n_jobs`` only changes the threads).
_WARM_FREE = frozenset({"max_lifetime", "warm_start", "n_jobs"})


def _digest(a: np.ndarray) -> tuple:
    """(shape, dtype, SHA-256 of the content) of an array."""
    a = np.ascontiguousarray(a)
    payload = repr(a.tolist()).encode() if a.dtype.kind == "O" else a.tobytes()
    return a.shape, a.dtype.str, hashlib.sha256(payload).hexdigest()


def _data_key(X_all: np.ndarray, y_all: np.ndarray, n_given: int) -> tuple:
    """Fingerprint of the data of a fit: X, y, X_val and y_val by content."""
    return _digest(X_all), _digest(y_all), int(n_given)


def _param_snapshot(est) -> dict:
    """The parameters that must not change for a warm continuation
    (sequences copied, so later in-place edits are seen as changes)."""
    out = {}
    for name, value in est.get_params(deep=False).items():
        if name in _WARM_FREE:
            continue
        if isinstance(value, (list, tuple, np.ndarray)):
            value = np.array(value, copy=True)
        out[name] = value
    return out


def _same_param(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
        except (TypeError, ValueError):
            return False
    try:
        return bool(type(a) is type(b) and a == b)
    except (TypeError, ValueError):
        return False


def _continued_grid(events, n_old: int, n_lifetimes: int) -> np.ndarray:
    """Up to ``n_lifetimes`` lifetimes spread evenly over the events after
    the first ``n_old`` (the new events of an extended forest), always
    including the last one; empty if there is none."""
    n_ev = events.times.shape[0]
    if n_ev <= n_old:
        return np.empty(0)
    if n_ev - n_old <= n_lifetimes:
        return events.times[n_old:].copy()
    ranks = np.unique(np.round(np.linspace(n_old, n_ev - 1, n_lifetimes)).astype(np.int64))
    return events.times[ranks]


def _append_rows(old: dict | None, new: dict) -> dict:
    """The path's per-grid-lifetime rows, with a new segment appended."""
    if old is None:
        return dict(new, segments=np.zeros(1, dtype=np.int64))
    if new["lifetimes"].shape[0] == 0:
        return old
    out = {k: np.concatenate([old[k], new[k]]) for k in new}
    out["segments"] = np.append(old["segments"], old["lifetimes"].shape[0])
    return out


class _PathWarmStart:
    """``warm_start`` bookkeeping shared by the path estimators.

    With ``warm_start=True`` a fit stores, in ``_warm``, the learners, the
    grid rows of ``path_``, the training mask and fingerprints of the data
    and of the parameters; the next fit continues from there if only
    ``max_lifetime`` grew (or stayed).  The learners hold C-level state that
    is not pickled: an unpickled estimator fits from scratch.
    """

    def _continuable(self, lam_max: float, key: tuple) -> bool:
        warm = getattr(self, "_warm", None)
        if warm is None or not self.warm_start:
            return False
        features = getattr(self, "features_", None)
        if features is not warm["features"] or features.lifetime_ != warm["lifetime"]:
            return False    # the forest was replaced or extended by hand
        if lam_max < warm["lifetime"] or key != warm["key"]:
            return False
        params = _param_snapshot(self)
        return (params.keys() == warm["params"].keys()
                and all(_same_param(params[k], warm["params"][k]) for k in params))

    def _forest_for_fit(self, lam_max: float, key, X_all: np.ndarray, n_given: int,
                        need_validation: bool, fraction: float):
        """The forest and training mask of this fit.

        A continuable warm start extends the stored forest to ``lam_max`` and
        reuses the stored mask; otherwise the stored learners are released
        and ``random_state`` gives, in turn, the validation split, the trees
        and a third stream for the learners.

        Returns (warm state or None, train mask, MondrianFeatures, learner
        generator or None when continuing).
        """
        warm = self._warm if self._continuable(lam_max, key) else None
        if warm is not None:
            features = self.features_
            if lam_max > features.lifetime_:
                features.extend(lam_max)
            return warm, warm["mask"], features, None
        self._warm = None   # release the previous learners before regrowing
        split_rng, tree_rng, learner_rng = check_random_generator(self.random_state).spawn(3)
        mask = _holdout_mask(self, X_all.shape[0], n_given, need_validation, fraction,
                             split_rng)
        features = MondrianFeatures(n_trees=self.n_trees, lifetime=lam_max,
                                    random_state=tree_rng, n_jobs=self.n_jobs).fit(X_all)
        return None, mask, features, learner_rng

    def __getstate__(self):
        state = dict(super().__getstate__())
        if state.get("_warm") is not None:
            state["_warm"] = None
        return state


class MondrianKernelRidgeCV(_PathWarmStart, RegressorMixin, BaseEstimator):
    """Mondrian kernel ridge regression with the kernel width and the
    regularisation learned along the path (paper Sec. 4).

    One forest of ``n_trees`` Mondrian trees is grown to ``max_lifetime``
    Λ; sweeping λ from 0 to Λ, every split replaces one feature by two
    (Sec. 4.1) and ridge regression for every alpha follows warm-started
    (Sec. 4.2).  The pair (λ, α) is selected by the error on validation data
    or by the exact log marginal likelihood L(λ) (Sec. 4.2.1), and the
    weights are then refitted on all labelled points at the selected pair
    (exactly after the exact path; by CG to ``tol`` from the selected path
    weights after the CG path).

    Parameters
    ----------
    n_trees : int, default=100
        Number M of Mondrian trees.
    max_lifetime : float, default=1.0
        Terminal lifetime Λ > 0 of the path.
    alphas : sequence of float, default=(1e-3, 1e-2, 1e-1, 1.0)
        Ridge regularisations α > 0 (the paper's δ², the noise variance with
        unit prior weight variance), all run along the one path.
    selection : {'validation', 'evidence'}, default='validation'
        'validation': smallest validation mean squared error over a grid of
        ``n_lifetimes`` lifetimes; 'evidence': largest exact log marginal
        likelihood over every event (needs the exact solver).
    validation_fraction : float, default=0.2
        Fraction of X held out when ``selection='validation'`` and no
        ``X_val`` is given.
    solver : {'auto', 'cholesky', 'cg'}, default='auto'
        'cholesky': exact path, O(C²) memory for C cells at Λ, refused
        above :data:`mondrian.path.EXACT_MAX_COLUMNS` columns; 'cg':
        warm-started preconditioned conjugate gradients at each grid
        lifetime, to relative residual ``tol``; 'auto': 'cholesky' up to
        :data:`AUTO_EXACT_COLUMNS` columns (and always for 'evidence'),
        else 'cg'.
    n_lifetimes : int, default=200
        Grid size: lifetimes spread evenly over the events (every event if
        there are fewer) where validation errors (and CG solves) are made.
    tol : float, default=1e-4
        Relative residual tolerance of the CG path.
    prior : {'uniform', 'log-uniform'}, default='uniform'
        Prior on λ of the posterior ``posterior_`` (exact solver only).
    prior_variance : float or 'profile', default=1.0
        Prior variance s² of the weights in the evidence (noise variance
        α·s²); 1.0 is the paper's choice (Sec. 4.2.1), 'profile' maximises
        over s² per lifetime (useful for unscaled targets).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Trees and the validation split.
    n_jobs : int or None, default=None
        Threads (None: 1; -1: all cores).
    warm_start : bool, default=False
        Keep the path's learners after ``fit`` so that a later ``fit`` to a
        larger ``max_lifetime`` continues the path instead of starting
        over: the forest is extended in place (``features_.extend``; by
        memorylessness the cells at every λ up to the previous Λ are
        unchanged), the learners continue from the previous Λ over the new
        split events only, up to ``n_lifetimes`` grid lifetimes spread over
        those new events are appended to ``path_`` (the old rows are kept),
        and (λ, α) is re-selected over the whole path [0, Λ_new].  An equal
        ``max_lifetime`` re-selects without running the path.  The fit
        starts from scratch, as with ``warm_start=False``, if X, y, X_val
        or y_val differ in shape or content from the previous fit, if any
        parameter other than ``max_lifetime`` and ``n_jobs`` changed, if
        ``max_lifetime`` is smaller, or if ``solver='auto'`` picks another
        solver for the extended forest (then the extended forest is kept
        and the path re-run on it).  Cost: the learners stay in memory
        (exact solver: n_alphas·(C+1)²·8 bytes); they are not pickled.
        The extended forest is distributed as one grown to Λ_new directly,
        but it is not the forest that ``random_state`` grows directly to
        Λ_new.

    Attributes
    ----------
    features_ : MondrianFeatures
        The forest, grown on the training and validation points.
    lifetime_ : float
        Selected λ̂.
    alpha_ : float
        Selected α̂.
    path_ : dict
        ``lifetimes`` (grid), ``alphas``, ``n_features`` (columns at each
        grid lifetime), ``train_mse`` and ``validation_mse`` (grid x alphas;
        NaN without validation data), ``log_marginal_likelihood`` (grid x
        alphas; NaN for the CG solver), ``solver``, ``tol``,
        ``validation_rows``, ``segments`` (first grid row of each fit that
        contributed to the path: ``[0]``, then one more per warm
        continuation that added grid lifetimes) and, for the exact solver,
        ``event_lifetimes`` and ``event_log_marginal_likelihood`` at every
        event.
    posterior_ : LifetimePosterior or None
        Posterior over λ at ``alpha_`` (exact solver), else None.
    coef_ : ndarray of shape (n_columns at ``lifetime_``,)
    intercept_ : float
    solver_ : str
        'cholesky' or 'cg'.
    path_time_ : float
        Seconds spent growing (or extending) the forest and sweeping the
        path in the last ``fit``.
    n_features_in_ : int
    """

    def __init__(self, n_trees: int = 100, max_lifetime: float = 1.0, *,
                 alphas=(1e-3, 1e-2, 1e-1, 1.0), selection: str = "validation",
                 validation_fraction: float = 0.2, solver: str = "auto",
                 n_lifetimes: int = 200, tol: float = 1e-4, prior: str = "uniform",
                 prior_variance=1.0, random_state=None, n_jobs: int | None = None,
                 warm_start: bool = False):
        self.n_trees = n_trees
        self.max_lifetime = max_lifetime
        self.alphas = alphas
        self.selection = selection
        self.validation_fraction = validation_fraction
        self.solver = solver
        self.n_lifetimes = n_lifetimes
        self.tol = tol
        self.prior = prior
        self.prior_variance = prior_variance
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.warm_start = warm_start

    def _check_params(self):
        check_int(self.n_trees, "n_trees")
        lam = check_lifetime(self.max_lifetime, "max_lifetime")
        if lam <= 0:
            raise ValueError(f"max_lifetime must be > 0, got {lam!r}")
        alphas = check_alphas(self.alphas)
        if self.selection not in _SELECTIONS:
            raise ValueError(f"selection must be one of {_SELECTIONS}, got {self.selection!r}")
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}")
        if self.prior not in ("uniform", "log-uniform"):
            raise ValueError(f"prior must be 'uniform' or 'log-uniform', got {self.prior!r}")
        check_int(self.n_lifetimes, "n_lifetimes", minimum=2)
        check_positive_float(self.tol, "tol")
        if not (isinstance(self.prior_variance, str) and self.prior_variance == "profile"):
            if isinstance(self.prior_variance, str):
                raise ValueError("prior_variance must be a positive float or 'profile', "
                                 f"got {self.prior_variance!r}")
            check_positive_float(self.prior_variance, "prior_variance")
        fraction = check_fraction(self.validation_fraction, "validation_fraction")
        check_bool(self.warm_start, "warm_start")
        return lam, alphas, fraction

    def fit(self, X, y, X_val=None, y_val=None, progress=None) -> "MondrianKernelRidgeCV":
        """Grow the forest, sweep the path and select (λ, α).

        With ``warm_start=True`` and the previous fit's data and parameters
        except a larger (or equal) ``max_lifetime``, the forest and the path
        are continued instead (see ``warm_start``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        X_val, y_val : array-like, optional
            Validation data (both or neither).  Without them and with
            ``selection='validation'``, a ``validation_fraction`` of X is
            held out.
        progress : callable, optional
            Called as ``progress(done, total)`` after each grid lifetime of
            this fit.

        Returns
        -------
        self
        """
        lam_max, alphas, fraction = self._check_params()
        X, y = check_array_input(self, X, reset=True, y=y, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64)
        X_all, y_all, n_given = _stack_data(X, y, X_val, y_val)
        key = _data_key(X_all, y_all, n_given) if self.warm_start else None
        t0 = time.perf_counter()
        warm, mask, features, _ = self._forest_for_fit(
            lam_max, key, X_all, n_given, self.selection == "validation", fraction)
        val_rows = np.flatnonzero(~mask)
        events = split_events(features)
        solver = self._resolve_solver(events.n_columns, alphas.shape[0])
        mean = float(y_all[mask].mean())
        yc = y_all - mean
        if warm is not None and warm["solver"] == solver:
            learner = warm["learner"]
            n_old = learner.events.times.shape[0]
            if events.lifetime > learner.events.lifetime:
                learner.extend(events)
            grid = _continued_grid(events, n_old, self.n_lifetimes)
            rows, best = warm["rows"], warm["best"]
        else:
            if solver == "cholesky":
                learner = ExactRidgePath(events, yc, alphas, train_mask=mask,
                                         n_jobs=self.n_jobs)
            else:
                learner = CGRidgePath(events, yc, alphas, train_mask=mask, tol=self.tol,
                                      n_jobs=self.n_jobs)
            grid = lifetime_grid(events, self.n_lifetimes)
            rows, best = None, (np.inf, None, None)
        new_rows, best = self._sweep(learner, events, solver, grid, yc, mask, best, progress)
        rows = _append_rows(rows, new_rows)
        # Copies: the rows kept for a warm continuation stay as computed.
        path = {k: v.copy() for k, v in rows.items()}
        path.update(alphas=alphas, solver=solver, tol=self.tol if solver == "cg" else 0.0,
                    validation_rows=val_rows)
        grid, val_mse = rows["lifetimes"], rows["validation_mse"]
        posterior = None
        if solver == "cholesky":
            learner.run(lam_max)
            ev_ll = learner.log_marginal_likelihood(self.prior_variance)
            path["event_lifetimes"] = learner.lifetimes
            path["event_log_marginal_likelihood"] = ev_ll
        if self.selection == "validation":
            if not val_rows.size:
                raise ValueError("selection='validation' needs validation data")
            g, a = np.unravel_index(np.argmin(val_mse), val_mse.shape)
            lifetime, alpha = float(grid[g]), float(alphas[a])
        else:
            k, a = np.unravel_index(np.argmax(ev_ll), ev_ll.shape)
            alpha = float(alphas[a])
            breaks = path["event_lifetimes"]
            end = breaks[k + 1] if k + 1 < breaks.shape[0] else lam_max
            lifetime = float(0.5 * (breaks[k] + end))
        if solver == "cholesky":
            a_sel = int(np.flatnonzero(alphas == alpha)[0])
            posterior = LifetimePosterior(path["event_lifetimes"], ev_ll[:, a_sel], lam_max,
                                          prior=self.prior)
            self._bma = self._bma_states(events, yc, mask, alpha, posterior, mean)
        else:
            self._bma = None
        self.path_time_ = time.perf_counter() - t0
        if self.warm_start:
            self._warm = dict(features=features, lifetime=features.lifetime_, key=key,
                              params=_param_snapshot(self), mask=mask, solver=solver,
                              learner=learner, rows=rows, best=best)
        del learner
        # Refit on every labelled point at the selected pair: exactly after the
        # exact path; by CG to the path's tolerance, warm-started from the
        # selected path weights, after the CG path.
        self.intercept_ = float(y_all.mean())
        if solver == "cholesky":
            Phi = features.training_features(lifetime)
            coef = ridge_solve(Phi, y_all - self.intercept_, alpha, solver="cholesky").coef
        else:
            # The scalable learner on all points: memory O(N·M) as on the path.
            refit = CGRidgePath(events, y_all - self.intercept_, [alpha], tol=self.tol,
                                local_sweeps=0, n_jobs=self.n_jobs)
            refit.advance(lifetime)
            _, best_lifetime, best_w = best
            if best_w is not None:
                W = np.zeros((1, events.n_nodes))
                W[0, events.columns_at(best_lifetime)] = best_w
                refit.set_weights(W)
            refit.solve_at(lifetime)
            coef = refit.node_weights()[0][events.columns_at(lifetime)]
        self.coef_ = coef
        self.features_ = features
        self.lifetime_ = lifetime
        self.alpha_ = alpha
        self.path_ = path
        self.posterior_ = posterior
        self.solver_ = solver
        return self

    def _sweep(self, learner, events, solver: str, grid: np.ndarray, yc: np.ndarray,
               mask: np.ndarray, best: tuple, progress) -> tuple[dict, tuple]:
        """Advance ``learner`` through ``grid`` and record the path's rows.

        ``best`` is (validation MSE, lifetime, weights on the columns at that
        lifetime) of the best CG state so far, updated here.
        """
        alphas = learner.alphas
        n_grid, n_alpha = grid.shape[0], alphas.shape[0]
        val_rows = np.flatnonzero(~mask)
        n_train = int(mask.sum())
        train_mse = np.empty((n_grid, n_alpha))
        val_mse = np.full((n_grid, n_alpha), np.nan)
        log_ml = np.full((n_grid, n_alpha), np.nan)
        n_cols = np.empty(n_grid, dtype=np.int64)
        for g, lam in enumerate(grid):
            if solver == "cholesky":
                learner.run(lam)
                train_mse[g] = learner.train_sse()[-1] / n_train
                log_ml[g] = learner.log_marginal_likelihood(self.prior_variance)[-1]
                n_cols[g] = learner.n_columns[-1]
            else:
                _, sse = learner.solve_at(lam)
                train_mse[g] = sse / n_train
                n_cols[g] = events.n_trees + int(np.searchsorted(events.times, lam, "right"))
            if val_rows.size:
                pred = learner.predict_points(val_rows)
                val_mse[g] = np.mean((pred - yc[val_rows][None, :]) ** 2, axis=1)
                if solver == "cg" and val_mse[g].min() < best[0]:
                    a = int(np.argmin(val_mse[g]))
                    best = (float(val_mse[g, a]), float(lam),
                            learner.node_weights()[a][events.columns_at(lam)])
            if progress is not None:
                progress(g + 1, n_grid)
        rows = dict(lifetimes=np.asarray(grid, dtype=np.float64), n_features=n_cols,
                    train_mse=train_mse, validation_mse=val_mse,
                    log_marginal_likelihood=log_ml)
        return rows, best

    def _resolve_solver(self, n_columns: int, n_alphas: int) -> str:
        if self.solver == "cholesky" or self.selection == "evidence":
            if self.solver == "cg":
                raise ValueError("selection='evidence' needs the exact log marginal "
                                 "likelihood: use solver='cholesky' or 'auto'")
            check_exact_size(n_columns, n_alphas)
            return "cholesky"
        if self.solver == "cg":
            return "cg"
        fits = n_columns <= AUTO_EXACT_COLUMNS
        return "cholesky" if fits and exact_path_memory(n_columns, n_alphas) <= 2**30 else "cg"

    def _bma_states(self, events, yc, mask, alpha, posterior, mean):
        """Weights of the most probable states of the posterior over λ.

        Keeps the states of largest posterior mass until they cover
        1 - 1e-6 of it (at most ``_BMA_MAX_STATES``), re-running the exact
        path at ``alpha`` to record their weights (fitted on the training
        part, as on the path).
        """
        order = np.argsort(-posterior.mass, kind="stable")
        covered = np.cumsum(posterior.mass[order])
        n_keep = min(int(np.searchsorted(covered, 1.0 - 1e-6)) + 1, _BMA_MAX_STATES)
        keep = np.sort(order[:n_keep])
        learner = ExactRidgePath(events, yc, [alpha], train_mask=mask, n_jobs=self.n_jobs)
        states = []
        for k in keep:
            # State k holds after the first k events (state 0: λ in [0, t_1)).
            learner.run(events.times[k - 1] if k > 0 else 0.0)
            mid = 0.5 * (posterior.lower[k] + posterior.upper[k])
            cols = events.columns_at(mid)
            states.append((float(mid), float(posterior.mass[k]),
                           learner.node_weights()[0][cols]))
        return dict(states=states, mean=mean, mass=float(covered[n_keep - 1]))

    def predict(self, X, average: bool = False) -> np.ndarray:
        """Predictions Φ_λ̂(X)ŵ + ȳ at the selected lifetime and alpha.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        average : bool, default=False
            Bayesian model averaging over λ (exact solver only): the
            posterior-weighted mean Σₖ πₖ Φ_λₖ(X)ŵₖ + ȳ over the path's
            states k (interval midpoints λₖ, posterior masses πₖ of
            ``posterior_``, ridge weights of the training part), over the
            states covering 1 - 1e-6 of the posterior mass (at most
            :data:`_BMA_MAX_STATES`; the covered mass is
            ``bma_mass_``), renormalised.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        X = check_array_input(self, X, reset=False)
        if not average:
            return self.features_.transform(X, self.lifetime_) @ self.coef_ + self.intercept_
        if self._bma is None:
            raise ValueError("average=True needs the posterior over the lifetime, which the "
                             "exact path provides: fit with solver='cholesky' (or 'auto' "
                             "on a small forest)")
        total, out = 0.0, np.zeros(X.shape[0])
        for lam, mass, coef in self._bma["states"]:
            out += mass * (self.features_.transform(X, lam) @ coef)
            total += mass
        return out / total + self._bma["mean"]

    @property
    def bma_mass_(self) -> float:
        """Posterior mass covered by the states of ``predict(average=True)``."""
        check_is_fitted(self, "coef_")
        if self._bma is None:
            raise AttributeError("bma_mass_ exists only after the exact path")
        return self._bma["mass"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


class MondrianKernelClassifierCV(_PathWarmStart, ClassifierMixin, BaseEstimator):
    """Mondrian kernel classifier with the kernel width learned along the
    SGD path (paper Sec. 4.2.2).

    A linear classifier with hinge (SVM) or logistic loss on the Mondrian
    features is trained by stochastic gradient descent while λ sweeps
    [0, Λ]: at every split both children inherit the parent's weight (so no
    prediction changes), then one SGD pass runs over the points of the split
    cell; ``n_epochs`` full passes run at each grid lifetime, where the
    validation accuracy is measured.  The lifetime with the best accuracy is
    selected.  More than two classes: one-vs-rest, one path per class.

    Parameters
    ----------
    n_trees : int, default=100
    max_lifetime : float, default=1.0
        Terminal lifetime Λ > 0.
    loss : {'hinge', 'logistic'}, default='hinge'
    alpha : float, default=1e-4
        L2 penalty of the SGD objective.
    learning_rate : float, default=0.2
        Constant SGD step size.
    n_epochs : int, default=2
        Full SGD passes at λ = 0 and at each grid lifetime.
    validation_fraction : float, default=0.2
        Fraction of X held out when no ``X_val`` is given.
    n_lifetimes : int, default=50
        Grid size (lifetimes spread over the events).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Trees, the validation split and the orders of the SGD passes.
    n_jobs : int or None, default=None
    warm_start : bool, default=False
        Keep the SGD paths after ``fit`` so that a later ``fit`` to a larger
        ``max_lifetime`` continues them: the forest is extended in place
        (``features_.extend``, memorylessness), the weights, intercepts and
        random generator carry over to the new split events (so the path
        equals one run straight through on the extended forest), up to
        ``n_lifetimes`` grid lifetimes spread over the new events are
        appended to ``path_``, and λ is re-selected over the whole path.
        An equal ``max_lifetime`` re-selects only.  The fit starts from
        scratch, as with ``warm_start=False``, if X, y, X_val or y_val
        differ in shape or content from the previous fit, if any parameter
        other than ``max_lifetime`` and ``n_jobs`` changed, or if
        ``max_lifetime`` is smaller.  The paths (an (N, M) table each) stay
        in memory; they are not pickled.

    Attributes
    ----------
    classes_ : ndarray
    features_ : MondrianFeatures
    lifetime_ : float
        Selected λ̂.
    path_ : dict
        ``lifetimes``, ``n_features``, ``train_accuracy``,
        ``validation_accuracy`` (one per grid lifetime) and ``segments``
        (first grid row of each fit that added grid lifetimes).
    coef_ : ndarray of shape (n_paths, n_columns at ``lifetime_``)
        n_paths = 1 for two classes, else the number of classes.
    intercept_ : ndarray of shape (n_paths,)
    n_features_in_ : int
    """

    def __init__(self, n_trees: int = 100, max_lifetime: float = 1.0, *, loss: str = "hinge",
                 alpha: float = 1e-4, learning_rate: float = 0.2, n_epochs: int = 2,
                 validation_fraction: float = 0.2, n_lifetimes: int = 50, random_state=None,
                 n_jobs: int | None = None, warm_start: bool = False):
        self.n_trees = n_trees
        self.max_lifetime = max_lifetime
        self.loss = loss
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.n_epochs = n_epochs
        self.validation_fraction = validation_fraction
        self.n_lifetimes = n_lifetimes
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.warm_start = warm_start

    def fit(self, X, y, X_val=None, y_val=None) -> "MondrianKernelClassifierCV":
        """Grow the forest, run the SGD path and select λ.

        With ``warm_start=True`` and the previous fit's data and parameters
        except a larger (or equal) ``max_lifetime``, the forest and the
        paths are continued instead (see ``warm_start``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels.
        X_val, y_val : array-like, optional
            Validation data (both or neither).

        Returns
        -------
        self
        """
        check_int(self.n_trees, "n_trees")
        lam_max = check_lifetime(self.max_lifetime, "max_lifetime")
        if lam_max <= 0:
            raise ValueError(f"max_lifetime must be > 0, got {lam_max!r}")
        if self.loss not in ("hinge", "logistic"):
            raise ValueError(f"loss must be 'hinge' or 'logistic', got {self.loss!r}")
        check_positive_float(self.alpha, "alpha", allow_zero=True)
        check_positive_float(self.learning_rate, "learning_rate")
        n_epochs = check_int(self.n_epochs, "n_epochs", minimum=0)
        check_int(self.n_lifetimes, "n_lifetimes", minimum=2)
        fraction = check_fraction(self.validation_fraction, "validation_fraction")
        check_bool(self.warm_start, "warm_start")
        X, y = check_array_input(self, X, reset=True, y=y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes; "
                             f"got 1 class ({classes[0]!r})")
        X_all, y_all, n_given = _stack_data(X, y, X_val, y_val, classification=True)
        if X_val is not None and not np.all(np.isin(y_all[n_given:], classes)):
            raise ValueError("y_val holds labels not seen in y")
        key = _data_key(X_all, y_all, n_given) if self.warm_start else None
        warm, mask, features, sgd_rng = self._forest_for_fit(
            lam_max, key, X_all, n_given, True, fraction)
        codes = np.searchsorted(classes, y_all)
        val_rows = np.flatnonzero(~mask)
        train_rows = np.flatnonzero(mask)
        events = split_events(features)
        n_paths = 1 if classes.shape[0] == 2 else classes.shape[0]
        if warm is not None:
            paths = warm["paths"]
            n_old = paths[0].events.times.shape[0]
            if events.lifetime > paths[0].events.lifetime:
                for p in paths:
                    p.extend(events)
            grid = _continued_grid(events, n_old, self.n_lifetimes)
            rows, best = warm["rows"], warm["best"]
        else:
            targets = ([np.where(codes == 1, 1.0, -1.0)] if n_paths == 1 else
                       [np.where(codes == k, 1.0, -1.0) for k in range(n_paths)])
            paths = [SGDPath(events, t, train_mask=mask, loss=self.loss,
                             learning_rate=self.learning_rate, alpha=self.alpha,
                             fit_intercept=True, random_state=sgd_rng) for t in targets]
            for p in paths:
                p.epochs(n_epochs)
            grid = lifetime_grid(events, self.n_lifetimes)
            rows, best = None, (-1.0, None, None, None)
        train_acc = np.empty(grid.shape[0])
        val_acc = np.empty(grid.shape[0])
        for g, lam in enumerate(grid):
            for p in paths:
                p.advance(lam)
                p.epochs(n_epochs)
            dec = np.stack([p.decision_points() for p in paths])
            pred = (dec[0] > 0).astype(np.int64) if n_paths == 1 else np.argmax(dec, axis=0)
            train_acc[g] = np.mean(pred[train_rows] == codes[train_rows])
            val_acc[g] = np.mean(pred[val_rows] == codes[val_rows])
            if val_acc[g] > best[0]:
                cols = events.columns_at(lam)
                best = (val_acc[g], float(lam), np.stack([p.node_weights()[cols] for p in paths]),
                        np.array([p.intercept for p in paths]))
        rows = _append_rows(rows, dict(lifetimes=np.asarray(grid, dtype=np.float64),
                                       train_accuracy=train_acc, validation_accuracy=val_acc))
        if self.warm_start:
            self._warm = dict(features=features, lifetime=features.lifetime_, key=key,
                              params=_param_snapshot(self), mask=mask, paths=paths,
                              rows=rows, best=best)
        _, lifetime, coef, b = best
        self.classes_ = classes
        self.features_ = features
        self.lifetime_ = lifetime
        self.coef_ = coef.copy()     # copies: the warm state keeps its own
        self.intercept_ = b.copy()
        grid = rows["lifetimes"]
        self.path_ = {k: v.copy() for k, v in rows.items()}
        self.path_["n_features"] = events.n_trees + np.searchsorted(events.times, grid, "right")
        return self

    def decision_function(self, X) -> np.ndarray:
        """φ_λ̂(x)ᵀw + b: shape (n_samples,) for two classes (positive means
        ``classes_[1]``), else (n_samples, n_classes)."""
        check_is_fitted(self, "coef_")
        X = check_array_input(self, X, reset=False)
        dec = np.asarray(self.features_.transform(X, self.lifetime_) @ self.coef_.T)
        dec = dec + self.intercept_[None, :]
        return dec[:, 0] if dec.shape[1] == 1 else dec

    def predict(self, X) -> np.ndarray:
        """Predicted class labels."""
        dec = self.decision_function(X)
        idx = (dec > 0).astype(np.int64) if dec.ndim == 1 else np.argmax(dec, axis=1)
        return self.classes_[idx]

    def _is_logistic(self) -> bool:
        return self.loss == "logistic"

    @available_if(_is_logistic)
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (logistic loss only): the sigmoid of the
        decision function; for more than two classes the one-vs-rest
        sigmoids normalised to sum to one."""
        dec = self.decision_function(X)
        if dec.ndim == 1:
            p1 = _sigmoid(dec)
            return np.column_stack([1.0 - p1, p1])
        p = _sigmoid(dec)
        return p / p.sum(axis=1, keepdims=True)

    @available_if(_is_logistic)
    def predict_log_proba(self, X) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
