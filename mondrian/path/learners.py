"""Learners that follow the kernel-width path (Balog et al. 2016, Sec. 4.2).

* :class:`ExactRidgePath` -- exact ridge regression by O(C²) Cholesky
  up/down-dates of A = ΦᵀΦ + αI (Sec. 4.2.1), with the training error and
  the exact log marginal likelihood L(λ) at *every* event, for several
  alphas (one factor per alpha); :class:`DualExactRidgePath` records the
  same quantities from the N x N factor of K + αI in O(N²) per event, the
  cheaper form when the training points are fewer than the columns
  (:func:`exact_ridge_path` chooses);
* :class:`CGRidgePath` -- the scalable learner: weights warm-started across
  events (parent weight copied to both children) and solved by
  Jacobi-preconditioned conjugate gradients at a grid of lifetimes, memory
  O(N·M + number of nodes);
* :class:`SGDPath` -- stochastic gradient descent with squared, hinge or
  logistic loss (Sec. 4.2.2), so classifiers get a width path too.

Each wraps a Cython learner of :mod:`mondrian._ext._path` that reads the
trees from the C arrays of the events' forest (``events.forest``), which it
pins; :meth:`extend` moves the state to the events of the extended forest
(a new forest object when the old one was in use: the old events and
learners keep reading theirs).
"""
from __future__ import annotations

import abc

import numpy as np

from .._ext import _path
from .._ext._dual import cell_labels as forest_cell_labels
from .._validation import (check_alphas, check_int, check_positive_float, check_target_scale,
                          resolve_n_jobs)
from ..features.mondrian import MondrianFeatures
from .events import SplitEvents, _EventsRecord, _remapper, split_events

__all__ = ["ExactRidgePath", "DualExactRidgePath", "exact_ridge_path", "CGRidgePath", "SGDPath",
           "check_sgd_step", "exact_path_memory", "check_exact_size", "check_dual_size",
           "check_exact_path_size", "EXACT_MAX_COLUMNS", "EXACT_MAX_BYTES", "EXACT_MAX_WORK"]

#: Largest number of columns (cells at Λ) the exact path accepts in its
#: primal form, and of training points in its dual form: the primal's time
#: is O(C³) over the path (about 5·C²/2 flops per event per alpha), 5000
#: columns take about a minute per alpha on one core.
EXACT_MAX_COLUMNS = 5000

#: Largest memory of the Cholesky factors, n_alphas·(C+1)²·8 bytes.
EXACT_MAX_BYTES = 2 * 1024**3

#: Largest work of the exact path's dual form per alpha, events x N² (each
#: event an update, a downdate and two solves of the N x N factor): the
#: primal's largest path, about C³/3 at :data:`EXACT_MAX_COLUMNS` columns.
EXACT_MAX_WORK = EXACT_MAX_COLUMNS**3 // 3

_LOSSES = {"squared": 0, "hinge": 1, "logistic": 2}


def _learner_state(cls, what: str, forest, n_alphas: int, *args, **kwargs):
    """``cls(forest, *args, **kwargs)``, a MemoryError naming what was being allocated.

    A learner holds an (N, M) int32 table of active nodes plus, per alpha,
    vectors over the N points and the forest's nodes; numpy's own message
    gives only a shape.
    """
    try:
        return cls(forest, *args, **kwargs)
    except MemoryError as exc:
        n, m, nodes = forest.n_points, forest.n_trees, forest.n_nodes
        need = 4 * n * m + 8 * 5 * n_alphas * (n + nodes)
        raise MemoryError(
            f"{what}: allocating its state for {n} points x {m} trees x {n_alphas} alphas "
            f"(about {need / 2**30:.2f} GiB for the active-node table and the per-alpha "
            f"vectors) failed ({exc}); use fewer trees (n_trees), fewer alphas or fewer "
            "points") from exc


def exact_path_memory(n_columns: int, n_alphas: int) -> int:
    """Bytes of the Cholesky factors of the exact path: n_alphas·(C+1)²·8."""
    return int(n_alphas) * (int(n_columns) + 1) ** 2 * 8


# --------------------------------------------------------------------------
# Exact ridge path
# --------------------------------------------------------------------------
class _ExactRecords(abc.ABC):
    """The quantities of the exact path derived from its records per state
    (after each event) and alpha: the columns C, ‖z‖² = yᵀΦA⁻¹Φᵀy,
    ‖ŵ‖² and log det A (``_records()``), with ``events``, ``alphas``,
    ``yty`` = yᵀy and ``n_points`` (training points) set by the learner."""

    @abc.abstractmethod
    def _records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(columns, ‖z‖², ‖ŵ‖², log det A) of the states so far, shapes
        (n_states,) and (n_states, n_alphas)."""

    @property
    @abc.abstractmethod
    def n_done(self) -> int:
        """Number of events processed so far."""

    @property
    def lifetimes(self) -> np.ndarray:
        """Start of each state processed: 0, then the event times."""
        return np.concatenate(([0.0], self.events.times[: self.n_done]))

    @property
    def n_columns(self) -> np.ndarray:
        return self._records()[0].copy()

    def train_sse(self) -> np.ndarray:
        """‖y - Φŵ‖² per state and alpha, shape (n_states, n_alphas)."""
        _, zz, ww, _ = self._records()
        return np.maximum(self.yty - zz - self.alphas[None, :] * ww, 0.0)

    def log_marginal_likelihood(self, prior_variance: float | str = 1.0) -> np.ndarray:
        """Exact log evidence per state and alpha, shape (n_states, n_alphas).

        Parameters
        ----------
        prior_variance : float or 'profile', default=1.0
            Prior variance s² of the weights; the noise variance is α·s².
            1.0 is the paper's parametrisation (noise variance α, Sec.
            4.2.1).  'profile' maximises over s² in closed form per state:
            s² = (yᵀy - ‖z‖²)/(αN), giving the scale-free evidence.
        """
        cols, zz, _, logdet = self._records()
        n = self.n_points
        alphas = self.alphas[None, :]
        quad = np.maximum(self.yty - zz, 1e-300) / alphas
        c = cols[:, None].astype(np.float64)
        base = -0.5 * logdet - 0.5 * (n - c) * np.log(alphas) - 0.5 * n * np.log(2 * np.pi)
        if isinstance(prior_variance, str):
            if prior_variance != "profile":
                raise ValueError("prior_variance must be a positive float or 'profile', "
                                 f"got {prior_variance!r}")
            s2 = quad / n
            return base - 0.5 * n - 0.5 * n * np.log(s2)
        s2 = check_positive_float(prior_variance, "prior_variance")
        return base - quad / (2 * s2) - 0.5 * n * np.log(s2)


class ExactRidgePath(_ExactRecords):
    """Exact ridge regression at every event, by Cholesky up/down-dates.

    With A = ΦᵀΦ + αI (the paper's δ² = α), deleting the column of a split
    cell is a rank-1 update of the trailing block of chol(A) (Seeger 2004)
    and appending a child is one triangular solve, O(C²) each (Sec. 4.2.1);
    the new rows are the co-occurrence counts ΦₖᵀΦ_child (the number of
    points in both cell k and the child, divided by M), gathered from the
    table of active cells of the child's points.
    Per event and alpha it records ‖z‖² (z = L⁻¹Φᵀy), ‖ŵ‖² and log det A,
    from which

    * training residual ‖y - Φŵ‖² = yᵀy - ‖z‖² - α‖ŵ‖²,
    * log marginal likelihood, y = Φw + ε, w ~ N(0, s²I), ε ~ N(0, αs²I):
      L = -(yᵀy - ‖z‖²)/(2αs²) - ½ log det A - (N-C)/2 log α
      - N/2 log s² - N/2 log 2π   (Woodbury and the matrix determinant
      lemma; s² = 1 is the paper's choice; the (N-C) log α term matters
      because C grows along the path).

    Memory O(n_alphas·C²) for C columns at Λ: refused above
    :data:`EXACT_MAX_COLUMNS` columns or :data:`EXACT_MAX_BYTES` bytes.

    Parameters
    ----------
    events : SplitEvents
    y : ndarray of shape (N,)
        Targets of the points the trees were grown on, in fit order (centre
        them first; the model has no intercept).
    alphas : sequence of float
    train_mask : ndarray of bool, shape (N,), optional
        Points that enter the ridge fit (default all); the others (held out
        for validation) keep exact features and are predicted by
        :meth:`predict_points`.
    n_jobs : int or None
        Threads over alphas.
    """

    def __init__(self, events: SplitEvents, y, alphas, *, train_mask=None,
                 n_jobs: int | None = None):
        self.events = events
        self.alphas = check_alphas(alphas)
        check_exact_size(events.n_columns, self.alphas.shape[0])
        y, is_train, node_y, counts = events.learner_inputs(y, train_mask)
        check_target_scale(y)
        self.y = y
        self.yty = float(y @ y)
        self.n_points = int(is_train.sum())
        self._mask = is_train.astype(bool)
        self._n_threads = resolve_n_jobs(n_jobs)
        self._state = _path.CholeskyPath(events.forest, is_train, node_y, counts,
                                         self.alphas, events.n_columns, self._n_threads)

    @property
    def n_done(self) -> int:
        """Number of events processed so far."""
        return int(self._state.cursor)

    def run(self, lifetime: float) -> int:
        """Process the events with split time <= ``lifetime``; returns how many."""
        return int(self._state.run(float(lifetime)))

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """(global node ids of the current columns, weights (n_alphas, C))."""
        return self._state.weights()

    def node_weights(self) -> np.ndarray:
        """Current weights in node space, shape (n_alphas, n_nodes)."""
        ids, w = self._state.weights()
        out = np.zeros((w.shape[0], self.events.n_nodes))
        out[:, ids] = w
        return out

    def predict_points(self, rows, n_jobs: int | None = None) -> np.ndarray:
        """Current predictions Φŵ of the points ``rows`` (indices into the
        points the trees were grown on), shape (n_alphas, len(rows))."""
        return self._state.gather(self.node_weights(), np.asarray(rows, dtype=np.int64),
                                  resolve_n_jobs(n_jobs))

    def factor(self, alpha_index: int = 0) -> np.ndarray:
        """Current Cholesky factor of A (columns ordered as :meth:`weights`)."""
        return self._state.factor(alpha_index)

    def extend(self, events: SplitEvents) -> "ExactRidgePath":
        """Continue on the events of the same forest extended to a larger
        lifetime (``MondrianFeatures.extend``, memorylessness): the factors,
        weights and records so far are kept, only new events remain to run."""
        remap = _remapper(self.events, events)
        check_exact_size(events.n_columns, self.alphas.shape[0])
        state = self._state._export()
        state["act"] = remap.table(state["act"])
        state["order"] = remap(state["order"])
        _, is_train, node_y, counts = events.learner_inputs(self.y, self._mask)
        new = _path.CholeskyPath(events.forest, is_train, node_y, counts, self.alphas,
                                 events.n_columns, self._n_threads)
        new._import(state)
        self._state, self.events = new, events
        return self

    def _records(self):
        k = self.n_done + 1
        s = self._state
        return (np.asarray(s.rec_columns)[:k], np.asarray(s.rec_zz)[:k],
                np.asarray(s.rec_ww)[:k], np.asarray(s.rec_logdet)[:k])


class DualExactRidgePath(_ExactRecords):
    """The exact path in the dual: the records of :class:`ExactRidgePath`
    from the N x N factor of G = K + αI over the N training points.

    Every point shares the root in every tree, so K = 11ᵀ at λ = 0.  A cell
    of one of the M trees that splits into children l and r separates their
    pairs: K changes by -(1/M)(1_l 1_rᵀ + 1_r 1_lᵀ) = ddᵀ - ppᵀ with
    d = (1_l - 1_r)/√(2M), p = (1_l + 1_r)/√(2M) -- a rank-1 update and a
    rank-1 downdate of chol(G), then c = G⁻¹y by two triangular solves:
    O(N²) per event and alpha (``_path.dual_events``, the alphas on
    ``n_jobs`` threads) where the primal form costs O(C²), C the columns.
    With ΦA⁻¹Φᵀ = I - αG⁻¹ (push-through), Φᵀc = ŵ and the matrix
    determinant lemma, the primal records are

        ‖z‖² = yᵀy - α yᵀc,   ‖ŵ‖² = yᵀc - α cᵀc,
        log det A = log det G + (C - N) log α,

    so :meth:`log_marginal_likelihood` and :meth:`train_sse` are those of
    the primal path, up to rounding.  A child without training points (only
    held-out ones) leaves G as it is.  Held-out points are predicted from
    the weights on their cells at the state's lifetime
    (:meth:`predict_points`).  Memory n_alphas·N²·8 bytes: refused above
    :data:`EXACT_MAX_COLUMNS` training points or :data:`EXACT_MAX_BYTES`
    bytes.

    Parameters
    ----------
    events : SplitEvents
    y : ndarray of shape (n_points,)
        Targets of the points the trees were grown on, in fit order
        (centred; the model has no intercept).
    alphas : sequence of float
    train_mask : ndarray of bool, shape (n_points,), optional
        Points that enter the ridge fit (default all); the others are
        predicted by :meth:`predict_points`.
    n_jobs : int or None
        Threads over alphas.
    """

    def __init__(self, events: SplitEvents, y, alphas, *, train_mask=None,
                 n_jobs: int | None = None):
        self.events = events
        self._n_threads = resolve_n_jobs(n_jobs)
        self.alphas = check_alphas(alphas)
        y_all, self._mask = events.learner_targets(y, train_mask)
        check_target_scale(y_all)
        self._train = np.flatnonzero(self._mask)
        y = np.ascontiguousarray(y_all[self._train])
        n = y.shape[0]
        check_dual_size(n, self.alphas.shape[0], events.times.shape[0])
        self.y = y
        self.yty = float(y @ y)
        self.n_points = n
        self._cursor = 0
        self._lifetime = 0.0
        self._slices = None
        # State 0: G = 11ᵀ + αI for every alpha, and its records.  Each
        # factor is kept transposed in C order: the lower factor in Fortran
        # order, its columns contiguous (c/cholupdate.h).
        self._L = np.empty((self.alphas.shape[0], n, n), order="C")
        self._c = np.empty((self.alphas.shape[0], n))
        self._rec = np.empty((events.times.shape[0] + 1, 3, self.alphas.shape[0]))
        for a, alpha in enumerate(self.alphas):
            G = np.ones((n, n)) + alpha * np.eye(n)
            self._L[a] = np.linalg.cholesky(G).T
            self._c[a] = np.linalg.solve(G, y)
            logdet = 2.0 * float(np.sum(np.log(np.diag(self._L[a]))))
            yc, cc = float(y @ self._c[a]), float(self._c[a] @ self._c[a])
            self._rec[0, :, a] = (logdet, yc, cc)

    @property
    def n_done(self) -> int:
        """Number of events processed so far."""
        return self._cursor

    def run(self, lifetime: float) -> int:
        """Process the events with split time <= ``lifetime``; returns how many."""
        ev = self.events
        stop = int(np.searchsorted(ev.times, float(lifetime), side="right"))
        self._lifetime = max(self._lifetime, float(lifetime))
        if self._slices is None:
            # The trees' training points, as ranks among them.
            tstart, tend, perm = ev.train_slices(self._mask)
            rank = np.full(ev.n_points, -1, dtype=np.int32)
            rank[self._train] = np.arange(self.n_points, dtype=np.int32)
            self._slices = (tstart, tend, np.ascontiguousarray(rank[perm]))
        tstart, tend, perm = self._slices
        if stop <= self._cursor:
            return 0
        _path.dual_events(self._L, self._c, self.y, ev.tree, ev.left, ev.right, tstart, tend,
                          perm, self._cursor, stop, 1.0 / np.sqrt(2.0 * ev.n_trees), self._rec,
                          self._n_threads)
        done, self._cursor = stop - self._cursor, stop
        return done

    def _records(self):
        k = self._cursor + 1
        rec = self._rec[:k]
        logdet_g, yc, cc = rec[:, 0], rec[:, 1], rec[:, 2]
        cols = self.events.n_trees + np.arange(k, dtype=np.int64)
        alphas = self.alphas[None, :]
        logdet = logdet_g + (cols[:, None] - self.n_points) * np.log(alphas)
        return cols, self.yty - alphas * yc, yc - alphas * cc, logdet

    def _cell_weights(self, active: np.ndarray) -> np.ndarray:
        """ŵ = Φᵀc on the cells ``active`` (this state's, the active nodes
        at the largest lifetime run to), shape (n_alphas, len(active)): the
        sum of c over their points / √M."""
        ev = self.events
        out = np.empty((self.alphas.shape[0], active.shape[0]))
        c = np.zeros(ev.n_points)
        for a in range(self.alphas.shape[0]):
            c[self._train] = self._c[a]
            out[a] = ev.node_sums(c)[active] / np.sqrt(ev.n_trees)
        return out

    def node_weights(self) -> np.ndarray:
        """Current weights ŵ = Φᵀc in node space, shape (n_alphas, n_nodes):
        on the active cells, the sum of c over their points / √M."""
        active = self.events.columns_at(self._lifetime)
        out = np.zeros((self.alphas.shape[0], self.events.n_nodes))
        out[:, active] = self._cell_weights(active)
        return out

    def predict_points(self, rows, n_jobs: int | None = None) -> np.ndarray:
        """Current predictions Φŵ of the points ``rows`` (indices into the
        points the trees were grown on), shape (n_alphas, len(rows)): the
        weights of their cells in every tree, from the cell labels at the
        largest lifetime run to (whose active cells are this state's)."""
        ev = self.events
        rows = np.asarray(rows, dtype=np.int64)
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= ev.n_points)):
            raise ValueError(f"rows must index the {ev.n_points} points of the forest")
        col_of_node, col_offset = ev.forest.active_columns(self._lifetime)
        labels = forest_cell_labels(ev.forest, self._lifetime,
                                    resolve_n_jobs(n_jobs))[rows].astype(np.int64)
        cols = labels + np.asarray(col_offset)[None, :-1]
        # The weights in column order (a cell's column, not its node id).
        active = ev.columns_at(self._lifetime)
        W = np.empty((self.alphas.shape[0], active.shape[0]))
        W[:, np.asarray(col_of_node)[active]] = self._cell_weights(active)
        return W[:, cols].sum(axis=2) / np.sqrt(ev.n_trees)

    def extend(self, events: SplitEvents) -> "DualExactRidgePath":
        """Continue on the events of the same forest extended to a larger
        lifetime (``MondrianFeatures.extend``, memorylessness): the factors
        and records so far are kept (they depend on the points' cells, not
        on node ids), only the new events remain to run."""
        old = self.events.times.shape[0]
        if (events.n_points != self.events.n_points or events.times.shape[0] < old
                or not np.array_equal(events.times[:old], self.events.times)):
            raise ValueError("extend needs the events of the same forest, extended")
        check_dual_size(self.n_points, self.alphas.shape[0], events.times.shape[0])
        rec = np.empty((events.times.shape[0] + 1,) + self._rec.shape[1:])
        rec[: old + 1] = self._rec[: old + 1]
        self._rec, self.events, self._slices = rec, events, None
        return self


def _dual_fits(n_train: int, n_alphas: int, n_events: int) -> bool:
    return (n_train <= EXACT_MAX_COLUMNS and n_alphas * n_train**2 * 8 <= EXACT_MAX_BYTES
            and n_events * n_train**2 <= EXACT_MAX_WORK)


def check_dual_size(n_points: int, n_alphas: int, n_events: int = 0) -> None:
    """Raise ``ValueError`` if the exact path's dual form is too big: more
    than :data:`EXACT_MAX_COLUMNS` training points, :data:`EXACT_MAX_BYTES`
    bytes of factors or :data:`EXACT_MAX_WORK` for events x N²."""
    n, a, e = int(n_points), int(n_alphas), int(n_events)
    if not _dual_fits(n, a, e):
        raise ValueError(
            f"the exact path in the dual needs O(N²) memory and O(N²) time per split: "
            f"N={n} training points, {e} splits and {a} alpha(s) need "
            f"{a * n**2 * 8 / 2**20:.0f} MiB and {e * n**2:.3g} steps per alpha (limits: "
            f"{EXACT_MAX_COLUMNS} points, {EXACT_MAX_BYTES / 2**20:.0f} MiB, "
            f"{EXACT_MAX_WORK:.3g} steps); use solver='cg' (the scalable path), fewer trees "
            f"or a smaller max_lifetime")


def _dual_form(n_columns: int, n_train: int, n_alphas: int, n_events: int) -> bool:
    """Whether :func:`exact_ridge_path` takes the dual form: fewer training
    points than columns, within the dual's limits."""
    return n_train < n_columns and _dual_fits(n_train, n_alphas, n_events)


def exact_ridge_path(events: SplitEvents, y, alphas, *, train_mask=None,
                     n_jobs: int | None = None) -> ExactRidgePath | DualExactRidgePath:
    """The exact path in its cheaper form: :class:`DualExactRidgePath`
    (O(N²) per event) when the N training points are fewer than the columns
    at the terminal lifetime (and its work, events x N², is within
    :data:`EXACT_MAX_WORK`), else :class:`ExactRidgePath` (O(C²) per
    event).  The records, hence the evidence and the training error at
    every state, and the predictions of held-out points are the same."""
    n_train = (events.n_points if train_mask is None
               else int(np.count_nonzero(np.asarray(train_mask, dtype=bool))))
    n_alphas = np.atleast_1d(np.asarray(alphas)).shape[0]
    if _dual_form(events.n_columns, n_train, n_alphas, events.times.shape[0]):
        return DualExactRidgePath(events, y, alphas, train_mask=train_mask, n_jobs=n_jobs)
    return ExactRidgePath(events, y, alphas, train_mask=train_mask, n_jobs=n_jobs)


def check_exact_path_size(n_columns: int, n_train: int, n_alphas: int, n_events: int) -> None:
    """The size check of the form :func:`exact_ridge_path` takes (the
    primal's when the dual does not fit)."""
    if not _dual_form(n_columns, n_train, n_alphas, n_events):
        check_exact_size(n_columns, n_alphas)


def check_exact_size(n_columns: int, n_alphas: int) -> None:
    """Raise ``MemoryError``-like ``ValueError`` if the exact path is too big."""
    need = exact_path_memory(n_columns, n_alphas)
    if n_columns > EXACT_MAX_COLUMNS or need > EXACT_MAX_BYTES:
        raise ValueError(
            f"the exact Cholesky path needs O(C²) memory and O(C³) time: C={n_columns} "
            f"columns at the terminal lifetime and {n_alphas} alpha(s) need "
            f"{need / 2**20:.0f} MiB (limits: {EXACT_MAX_COLUMNS} columns, "
            f"{EXACT_MAX_BYTES / 2**20:.0f} MiB); use solver='cg' (the scalable path), "
            f"fewer trees or a smaller max_lifetime")


# --------------------------------------------------------------------------
# Scalable ridge path
# --------------------------------------------------------------------------
class CGRidgePath:
    """Ridge regression along the path by warm-started conjugate gradients.

    Weights are kept per node; at a split both children take the parent's
    weight, so predictions are unchanged (Sec. 4.2.2) and CG restarts from
    the previous solution.  At each lifetime passed to :meth:`solve_at` the
    normal equations (ΦᵀΦ + αI)w = Φᵀy are solved for every alpha to
    ‖residual‖ ≤ tol·‖Φᵀy‖ with the Jacobi preconditioner diag(A) = cell
    count/M + α, which is exact within each tree (ΦₘᵀΦₘ is diagonal, the
    link to Mondrian forests of Sec. 6).  Before CG, ``local_sweeps``
    Gauss-Seidel sweeps run over the cells created since the last solve,
    where the warm start leaves the residual (O(size of those cells)).  One
    CG iteration costs O(N·M): two gathers, over the rows of the
    active-node table and over the trees' training-point slices, with
    ``n_jobs`` threads; memory is two (N, M) int32 tables plus
    O(N + n_nodes) per alpha.  Every sum runs in an order fixed independently of the
    threads, so results are bitwise identical for any ``n_jobs``.

    Parameters
    ----------
    events : SplitEvents
    y : ndarray of shape (N,)
    alphas : sequence of float
    train_mask : ndarray of bool, shape (N,), optional
        Points that enter the fit (default all); see :class:`ExactRidgePath`.
    tol : float, default=1e-4
        Relative residual tolerance ‖(ΦᵀΦ + αI)w - Φᵀy‖ ≤ tol·‖Φᵀy‖
        (scikit-learn's sparse_cg default).
    max_iter : int
        Iteration cap per solve; reaching it raises ``RuntimeError``.
    warm_start : {'copy', 'dual'}, default='copy'
        'copy': children take the parent's weight (predictions unchanged);
        'dual': children take Σ_{i∈child} residualᵢ/(α√M), keeping the dual
        weights of the last solve (the warm start stays in the range of Φᵀ).
    local_sweeps : int, default=2
        Gauss-Seidel sweeps over the new cells before CG ('copy' only).
    n_jobs : int or None
        Threads for the products with ΦᵀΦ.
    """

    def __init__(self, events: SplitEvents, y, alphas, *, train_mask=None, tol: float = 1e-4,
                 max_iter: int = 5000, warm_start: str = "copy", local_sweeps: int = 2,
                 n_jobs: int | None = None):
        if warm_start not in ("dual", "copy"):
            raise ValueError(f"warm_start must be 'dual' or 'copy', got {warm_start!r}")
        self.warm_start = warm_start
        self.local_sweeps = check_int(local_sweeps, "local_sweeps", minimum=0)
        self.events = events
        self.alphas = check_alphas(alphas)
        self.tol = check_positive_float(tol, "tol")
        self.max_iter = check_int(max_iter, "max_iter")
        self.n_threads = resolve_n_jobs(n_jobs)
        y, is_train, node_y, counts = events.learner_inputs(y, train_mask)
        check_target_scale(y)
        self.y, self._mask = y, is_train.astype(bool)
        self._state = _learner_state(_path.CGPath, "CG ridge path", events.forest,
                                     self.alphas.shape[0], is_train, node_y, counts, y,
                                     self.alphas, self.n_threads)
        self.lifetime = 0.0

    def extend(self, events: SplitEvents) -> "CGRidgePath":
        """Continue on the events of the same forest extended to a larger
        lifetime (``MondrianFeatures.extend``): weights, residuals and the
        active-node table are carried over, only new events remain to run."""
        self._continue(self.events, self._state._export(), events)
        return self

    def extend_forest(self, features: MondrianFeatures, lifetime: float) -> SplitEvents:
        """``features.extend(lifetime)`` and :meth:`extend` on the new
        events, the forest grown in place: the learner first exports its
        state and lets go of the forest and of its events, so that -- when
        nothing else reads the forest (the caller holds no other events,
        learner or array view of it) -- the extension does not copy it
        (``MondrianFeatures.extend`` grows a copy of a forest in use: on the
        CPU data's 2000-tree forest of the default kernel ridge's ladder,
        190 MB of nodes and permutations).  The same state as the two calls.
        If the extension fails, the learner continues on the forest as it is
        (its trees unchanged, ``c/grow.h``) and the error is raised.

        Parameters
        ----------
        features : MondrianFeatures
            The feature map whose forest the learner's events were read from.
        lifetime : float
            The new terminal lifetime.

        Returns
        -------
        SplitEvents
            The events of the extended forest, which the learner now reads.
        """
        if features.forest_ is not self.events.forest:
            raise ValueError("features must be the feature map whose forest the learner reads")
        record = _EventsRecord.of(self.events)
        # The state with the active-node table itself: this learner drops
        # its state here, and _continue remaps the table in place and hands
        # it to the new one (no copy of the N x M table: four passes over
        # it, 40 MB at 5000 points x 2000 trees, were half of the ladder's
        # extension beside the growth).
        state = self._state._export(take_table=True)
        self._state = self.events = None
        try:
            features.extend(lifetime)
        finally:
            # On failure too: the trees are as they were, so the state
            # continues on their events under the identity map.
            events = split_events(features)
            self._continue(record, state, events)
        return events

    def _continue(self, old: SplitEvents | _EventsRecord, state: dict,
                  events: SplitEvents) -> None:
        """Load the exported ``state`` of a path on the events ``old`` (or
        their record) onto ``events``, the same forest extended (checked by
        :func:`_remapper`, which moves the node ids)."""
        remap = _remapper(old, events)
        new_ids = remap(np.arange(old.n_nodes))
        W = np.zeros((self.alphas.shape[0], events.n_nodes))
        W[:, new_ids] = state["W"]
        active = np.zeros(events.n_nodes, dtype=np.uint8)
        active[new_ids] = state["active"]
        # The exported table is this learner's to change (a copy, or the
        # table of the state extend_forest dropped): remapped in place and
        # adopted by the new state.
        state.update(W=W, active=active, act=remap.table(state["act"], out=state["act"]),
                     fresh=remap(state["fresh"]))
        y, is_train, node_y, counts = events.learner_inputs(self.y, self._mask)
        new = _learner_state(_path.CGPath, "CG ridge path", events.forest,
                             self.alphas.shape[0], is_train, node_y, counts, y, self.alphas,
                             self.n_threads, act=state["act"])
        new._import(state)
        self._state, self.events = new, events

    def solve_at(self, lifetime: float) -> tuple[np.ndarray, np.ndarray]:
        """Advance to ``lifetime`` (>= the last one) and solve.

        Returns
        -------
        n_iter : ndarray of int, shape (n_alphas,)
        train_sse : ndarray, shape (n_alphas,)
            ‖y - Φŵ‖² on the training points.
        """
        self.advance(lifetime)
        iters, sse = self._state.solve(self.tol, self.max_iter, self.local_sweeps)
        if np.any(iters < 0):
            raise RuntimeError(f"conjugate gradients did not reach tol={self.tol} in "
                               f"{self.max_iter} iterations at lifetime {lifetime}; "
                               f"raise max_iter or alpha")
        return iters, sse

    def node_weights(self) -> np.ndarray:
        """Current weights in node space, shape (n_alphas, n_nodes)."""
        return self._state.weights()

    def advance(self, lifetime: float) -> int:
        """Apply the events up to ``lifetime`` (>= the last one) with the warm
        start, without solving; returns how many."""
        lifetime = float(lifetime)
        if lifetime < self.lifetime:
            raise ValueError(f"lifetime {lifetime} is below the path's {self.lifetime}")
        done = self._state.advance(lifetime, self.warm_start == "dual")
        self.lifetime = lifetime
        return int(done)

    def set_weights(self, W) -> None:
        """Start the next solve from node-space weights W (n_alphas, n_nodes);
        entries off the active nodes are ignored."""
        self._state.set_weights(W)

    def predict_points(self, rows) -> np.ndarray:
        """Current predictions of the points ``rows``, shape (n_alphas, len(rows))."""
        return self._state.gather(self._state.weights(), np.asarray(rows, dtype=np.int64),
                                  self.n_threads)


# --------------------------------------------------------------------------
# SGD path
# --------------------------------------------------------------------------
def check_sgd_step(learning_rate: float, alpha: float) -> None:
    """Refuse a step size whose penalty step amplifies the weights.

    Every SGD step multiplies the weights it touches by 1 - η·α before the
    gradient step (w_j -= η(g/√M + α w_j)); for η·α >= 2 that factor has
    modulus >= 1, so the penalty no longer shrinks the weights and they
    grow without bound (to inf, then NaN decision values).
    """
    if learning_rate * alpha >= 2.0:
        raise ValueError(
            f"learning_rate * alpha = {learning_rate * alpha:g} >= 2: each SGD step multiplies "
            f"the weights by 1 - learning_rate*alpha, of modulus >= 1, and SGD diverges; "
            f"lower learning_rate (now {learning_rate:g}) or alpha (now {alpha:g})")


class SGDPath:
    """Stochastic gradient descent along the path (Sec. 4.2.2).

    Minimises Σᵢ ℓ(yᵢ, φ(xᵢ)ᵀw + b) + (α/2)‖w‖² with ``loss`` 'squared'
    (½(f - y)²), 'hinge' (max(0, 1 - yf)) or 'logistic' (log(1 + e^{-yf})),
    labels ±1 for the last two.  At every split the children take the
    parent's weight (predictions unchanged), then one SGD pass runs over the
    points of the split cell -- the only points whose features changed --
    or, with ``pass_='full'``, over all points (the authors' schedule,
    O(N·M) per event).  :meth:`epochs` adds full passes at a lifetime.
    :meth:`extend` continues the path on the forest extended to a larger
    lifetime.

    Parameters
    ----------
    events : SplitEvents
    y : ndarray of shape (N,)
    train_mask : ndarray of bool, shape (N,), optional
        Points that enter the SGD passes (default all); the others are
        held out and only predicted (:meth:`decision_points`).
    loss : {'squared', 'hinge', 'logistic'}
    learning_rate : float
        Constant step size η; the change of one prediction per step is about
        η·ℓ', so η < 1 is stable for the squared loss.
    alpha : float
        L2 penalty (applied to the weights each step touches).
    fit_intercept : bool
    pass_ : {'cell', 'full'}, default='cell'
        SGD after each split: one pass over the split cell's points, in tree
        order (deterministic), or one full pass in a random order.
    random_state : numpy Generator, optional
        Orders of the full passes (``pass_='full'`` and :meth:`epochs`).
    """

    def __init__(self, events: SplitEvents, y, *, train_mask=None, loss: str = "squared",
                 learning_rate: float = 0.5, alpha: float = 1e-4, fit_intercept: bool = True,
                 pass_: str = "cell", random_state: np.random.Generator | None = None):
        if loss not in _LOSSES:
            raise ValueError(f"loss must be one of {tuple(_LOSSES)}, got {loss!r}")
        if pass_ not in ("cell", "full"):
            raise ValueError(f"pass_ must be 'cell' or 'full', got {pass_!r}")
        self.events = events
        self.learning_rate = check_positive_float(learning_rate, "learning_rate")
        self.alpha = check_positive_float(alpha, "alpha", allow_zero=True)
        check_sgd_step(self.learning_rate, self.alpha)
        self.y, self._mask = events.learner_targets(y, train_mask)
        self.loss = loss
        self.fit_intercept = bool(fit_intercept)
        self.rows = np.flatnonzero(self._mask).astype(np.int64)
        self.pass_ = pass_
        self.rng = np.random.default_rng() if random_state is None else random_state
        self._state = self._new_state(events)
        self.lifetime = 0.0

    def _new_state(self, events: SplitEvents) -> _path.SGDPath:
        _, is_train = events.learner_targets(self.y, self._mask)
        return _path.SGDPath(events.forest, is_train.astype(np.uint8), self.y, _LOSSES[self.loss],
                             self.learning_rate, self.alpha, self.fit_intercept)

    def extend(self, events: SplitEvents) -> "SGDPath":
        """Continue on the events of the same forest extended to a larger
        lifetime (``MondrianFeatures.extend``, memorylessness).

        The weights (moved to the extended forest's node ids), the
        intercept, the active-node table, the event cursor, the lifetime
        reached and the random generator of the full passes are carried
        over; only the new events remain to run.  Continuing a path this way
        gives exactly the weights of a path run straight through on
        ``events`` with the same schedule and generator state.

        Parameters
        ----------
        events : SplitEvents
            ``split_events`` of the path's forest after
            ``MondrianFeatures.extend``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If ``events`` is not an extension of the path's forest (other
            trees or points, a smaller lifetime, or changed old events).
        """
        remap = _remapper(self.events, events)
        state = self._state._export()
        W = np.zeros(events.n_nodes)
        W[remap(np.arange(self.events.n_nodes))] = state["W"]
        state.update(W=W, act=remap.table(state["act"]))
        new = self._new_state(events)
        new._import(state)
        self._state, self.events = new, events
        return self

    def advance(self, lifetime: float, *, learn: bool = True) -> int:
        """Apply the events up to ``lifetime``, with SGD after each when
        ``learn`` (``learn=False`` only re-parents weights)."""
        lifetime = float(lifetime)
        if lifetime < self.lifetime:
            raise ValueError(f"lifetime {lifetime} is below the path's {self.lifetime}")
        order = None
        if learn and self.pass_ == "full":
            order = self.rng.permutation(self.rows)
        done = self._state.advance(lifetime, learn and self.pass_ == "cell", order)
        self.lifetime = lifetime
        self._check_finite()
        return int(done)

    def epochs(self, n_epochs: int) -> None:
        """``n_epochs`` full SGD passes in random order at the current lifetime."""
        for _ in range(check_int(n_epochs, "n_epochs", minimum=0)):
            self._state.epoch(self.rng.permutation(self.rows))
        self._check_finite()

    def _check_finite(self) -> None:
        """Raise if SGD has diverged (a weight or the intercept not finite):
        a diverged path would select a lifetime from NaN decision values."""
        if not (np.isfinite(self._state.intercept)
                and np.all(np.isfinite(self._state.weights()))):
            raise ValueError(
                f"SGD diverged: the weights are not finite at lifetime {self.lifetime:.6g} "
                f"(loss={self.loss!r}, learning_rate={self.learning_rate:g}, "
                f"alpha={self.alpha:g}); lower learning_rate")

    def node_weights(self) -> np.ndarray:
        """Weights in node space, shape (n_nodes,)."""
        return self._state.weights()

    @property
    def intercept(self) -> float:
        return float(self._state.intercept)

    def decision_points(self, rows=None) -> np.ndarray:
        """φ(x)ᵀw + b at the current lifetime for the points ``rows`` (indices
        into the points the trees were grown on; default all)."""
        out = self._state.train_decision()
        return out if rows is None else out[np.asarray(rows, dtype=np.int64)]
