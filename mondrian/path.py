"""The kernel-width path: every lifetime from one forest (Balog et al. 2016, Sec. 4).

A Mondrian forest grown to a terminal lifetime Λ holds the features of every
lifetime λ ∈ [0, Λ]: sorting the split events of all trees by time, each
event replaces the feature of the cell that splits by the features of its two
children (Sec. 4.1).  Learners follow the events warm-started:

* :class:`ExactRidgePath` -- exact ridge regression by O(C²) Cholesky
  up/down-dates of A = ΦᵀΦ + αI (Sec. 4.2.1), with the training error and
  the exact log marginal likelihood L(λ) at *every* event, for several
  alphas (one factor per alpha);
* :class:`CGRidgePath` -- the scalable learner: weights warm-started across
  events (parent weight copied to both children) and solved by
  Jacobi-preconditioned conjugate gradients at a grid of lifetimes, memory
  O(N·M + number of nodes);
* :class:`SGDPath` -- stochastic gradient descent with squared, hinge or
  logistic loss (Sec. 4.2.2), so classifiers get a width path too;
* :class:`LifetimePosterior` -- the exact posterior over λ given the
  piecewise-constant L(λ) and a uniform or log-uniform prior.

Validation points are carried along the path by
:class:`mondrian._ext._path.ValidationTracker` (expected features of new
points, DESIGN.md §3), so their predictions at a lifetime cost O(N_val·M).

All node ids here are *global*: node j of tree m is ``node_offset[m] + j``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._ext import _path
from ._validation import check_int, check_lifetime, check_positive_float, resolve_n_jobs
from .features import MondrianFeatures

__all__ = [
    "SplitEvents",
    "split_events",
    "lifetime_grid",
    "ExactRidgePath",
    "CGRidgePath",
    "SGDPath",
    "LifetimePosterior",
    "check_alphas",
    "exact_path_memory",
    "EXACT_MAX_COLUMNS",
    "EXACT_MAX_BYTES",
]

#: Largest number of columns (cells at Λ) the exact path accepts: its time is
#: O(C³) over the path (about 5·C²/2 flops per event per alpha), 5000 columns
#: take about a minute per alpha on one core.
EXACT_MAX_COLUMNS = 5000

#: Largest memory of the Cholesky factors, n_alphas·(C+1)²·8 bytes.
EXACT_MAX_BYTES = 2 * 1024**3

_LOSSES = {"squared": 0, "hinge": 1, "logistic": 2}


def check_alphas(alphas) -> np.ndarray:
    """A non-empty 1-d float array of finite alphas > 0 (ridge regularisations)."""
    if isinstance(alphas, numbers.Real) and not isinstance(alphas, (bool, np.bool_)):
        alphas = [alphas]
    try:
        arr = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"alphas must be a sequence of positive floats, got {alphas!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-d sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"alphas must be finite and > 0, got {arr.tolist()}")
    return arr


def exact_path_memory(n_columns: int, n_alphas: int) -> int:
    """Bytes of the Cholesky factors of the exact path: n_alphas·(C+1)²·8."""
    return int(n_alphas) * (int(n_columns) + 1) ** 2 * 8


# --------------------------------------------------------------------------
# Split events
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class SplitEvents:
    """The forest in global node ids, with its split events sorted by time.

    Attributes
    ----------
    times : ndarray of shape (n_events,)
        Split times, increasing.
    nodes, left, right : ndarray of int64, shape (n_events,)
        The node that splits and its two children (global ids).
    tree : ndarray of int64, shape (n_events,)
        The tree of each event.
    node_offset : ndarray of int64, shape (M + 1,)
        Node j of tree m has global id ``node_offset[m] + j``.
    roots : ndarray of int64, shape (M,)
    lifetime : float
        The terminal lifetime Λ of the forest.
    arrays : dict
        Concatenated node arrays (``left``, ``right``, ``parent``,
        ``tree_of``, ``start``, ``end``, ``tau``, ``tau_parent``,
        ``feature``, ``threshold``, ``lower``, ``upper``) and ``perm``
        (M x N: tree m's point permutation).
    """

    times: np.ndarray
    nodes: np.ndarray
    left: np.ndarray
    right: np.ndarray
    tree: np.ndarray
    node_offset: np.ndarray
    roots: np.ndarray
    lifetime: float
    arrays: dict

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.node_offset[-1])

    @property
    def n_columns(self) -> int:
        """Number of cells at the terminal lifetime, M + n_events."""
        return self.n_trees + int(self.times.shape[0])

    @property
    def n_points(self) -> int:
        """Number of points the trees were grown on."""
        return int(self.arrays["perm"].shape[1])

    def base_args(self, is_train: np.ndarray) -> tuple:
        a = self.arrays
        return (a["left"], a["right"], a["tree_of"], a["start"], a["end"], a["perm"],
                a["tau"], self.nodes, self.roots, is_train)

    def learner_inputs(self, y, train_mask=None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]:
        """Validated (y, is_train as uint8, Φᵀy per node, training count per node).

        ``y`` has one value per point the trees were grown on; points with
        ``train_mask`` False (held-out points inside the trees, whose
        features are then exact) are ignored by the learners.
        """
        n = self.n_points
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},), got {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite")
        if train_mask is None:
            mask = np.ones(n, dtype=bool)
        else:
            mask = np.asarray(train_mask, dtype=bool)
            if mask.shape != (n,):
                raise ValueError(f"train_mask must have shape ({n},), got {mask.shape}")
            if not mask.any():
                raise ValueError("train_mask selects no training point")
        yt = np.where(mask, y, 0.0)
        node_y = self.node_sums(yt) / np.sqrt(self.n_trees)
        counts = self.node_sums(mask.astype(np.float64))
        return np.ascontiguousarray(yt), mask.astype(np.uint8), node_y, counts

    def train_slices(self, is_train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each tree's permutation restricted to the training points (M x
        N_train, int32) and every node's slice of it (start, end)."""
        a = self.arrays
        perm = a["perm"]
        mask = np.asarray(is_train, dtype=bool)
        n_train = int(mask.sum())
        ptrain = np.empty((self.n_trees, n_train), dtype=np.int32)
        tstart = np.empty(self.n_nodes, dtype=np.int64)
        tend = np.empty(self.n_nodes, dtype=np.int64)
        for m in range(self.n_trees):
            lo, hi = self.node_offset[m], self.node_offset[m + 1]
            keep = mask[perm[m]]
            ptrain[m] = perm[m][keep]
            cs = np.concatenate(([0], np.cumsum(keep)))
            tstart[lo:hi] = cs[a["start"][lo:hi]]
            tend[lo:hi] = cs[a["end"][lo:hi]]
        return tstart, tend, ptrain

    def node_sums(self, values: np.ndarray) -> np.ndarray:
        """Σ of ``values`` (one per training point) over every node's points."""
        a = self.arrays
        perm = a["perm"]
        out = np.empty(self.n_nodes)
        for m in range(self.n_trees):
            lo, hi = self.node_offset[m], self.node_offset[m + 1]
            cs = np.concatenate(([0.0], np.cumsum(values[perm[m]])))
            out[lo:hi] = cs[a["end"][lo:hi]] - cs[a["start"][lo:hi]]
        return out

    def columns_at(self, lifetime: float) -> np.ndarray:
        """Global ids of the active nodes at ``lifetime``, in the column
        order of :meth:`MondrianFeatures.transform` (tree by tree, node-id
        order, i.e. increasing global id)."""
        a = self.arrays
        tau, tp = a["tau"], a["tau_parent"]
        # Split times increase along root-to-leaf paths, so a node whose
        # parent split by ``lifetime`` has every ancestor split by then.
        return np.flatnonzero((tp <= lifetime) & (tau > lifetime))


def split_events(features: MondrianFeatures) -> SplitEvents:
    """All split events of a fitted :class:`MondrianFeatures`, sorted by time.

    An event is an internal node j (split time τⱼ ≤ Λ) whose feature column
    is replaced at λ = τⱼ by its two children's (Sec. 4.1).  There are
    C_Λ - M events when the forest has C_Λ cells at Λ.

    Parameters
    ----------
    features : MondrianFeatures
        A fitted feature map.

    Returns
    -------
    SplitEvents
    """
    check_is_fitted(features, "trees_")
    trees = features.trees_
    sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
    offset = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)

    def cat_index(name):
        parts = []
        for m, t in enumerate(trees):
            v = getattr(t, name).astype(np.int64)
            parts.append(np.where(v >= 0, v + offset[m], -1))
        return np.ascontiguousarray(np.concatenate(parts))

    left, right, parent = cat_index("left"), cat_index("right"), cat_index("parent")
    tau = np.ascontiguousarray(np.concatenate([t.split_time for t in trees]))
    tau_parent = np.where(parent >= 0, tau[np.maximum(parent, 0)], 0.0)
    tree_of = np.repeat(np.arange(len(trees), dtype=np.int64), sizes)
    arrays = dict(
        left=left, right=right, parent=parent, tree_of=tree_of,
        start=np.ascontiguousarray(np.concatenate([t.start for t in trees]).astype(np.int64)),
        end=np.ascontiguousarray(np.concatenate([t.end for t in trees]).astype(np.int64)),
        tau=tau, tau_parent=np.ascontiguousarray(tau_parent),
        feature=np.ascontiguousarray(np.concatenate([t.feature for t in trees]).astype(np.int64)),
        threshold=np.ascontiguousarray(np.concatenate([t.threshold for t in trees])),
        lower=np.ascontiguousarray(np.concatenate([t.lower for t in trees])),
        upper=np.ascontiguousarray(np.concatenate([t.upper for t in trees])),
        perm=np.ascontiguousarray(np.stack([t.perm for t in trees]).astype(np.int64)),
    )
    internal = np.flatnonzero(left >= 0)
    order = np.lexsort((internal, tau[internal]))
    nodes = np.ascontiguousarray(internal[order])
    return SplitEvents(times=tau[nodes], nodes=nodes, left=left[nodes], right=right[nodes],
                       tree=tree_of[nodes], node_offset=offset,
                       roots=np.ascontiguousarray(offset[:-1]),
                       lifetime=float(features.lifetime_), arrays=arrays)


def _remapper(old: SplitEvents, new: SplitEvents):
    """Map global node ids of ``old`` to those of ``new``, an extension of the
    same forest (``MondrianFeatures.extend``: node ids within each tree are
    unchanged, new nodes appended); checks that the old events come first."""
    if (old.n_trees != new.n_trees or old.n_points != new.n_points
            or new.lifetime < old.lifetime):
        raise ValueError("the new events do not extend the path's forest")
    tree_of = old.arrays["tree_of"]
    shift = new.node_offset[:-1] - old.node_offset[:-1]

    def remap(ids):
        ids = np.asarray(ids, dtype=np.int64)
        return ids + shift[tree_of[ids]]

    n_old = old.times.shape[0]
    if (new.times.shape[0] < n_old
            or not np.array_equal(new.nodes[:n_old], remap(old.nodes))
            or not np.array_equal(new.times[:n_old], old.times)):
        raise ValueError("the new events do not extend the path's forest: the old "
                         "split events must be unchanged (use MondrianFeatures.extend)")
    return remap


def lifetime_grid(events: SplitEvents, n_lifetimes: int = 200) -> np.ndarray:
    """Up to ``n_lifetimes`` lifetimes spread evenly over the events.

    The grid holds 0 and the times of events with evenly spaced ranks (every
    event if there are fewer than ``n_lifetimes``), always including the last
    one, so each grid point is the moment a feature set first appears.
    """
    n_lifetimes = check_int(n_lifetimes, "n_lifetimes", minimum=2)
    n_ev = events.times.shape[0]
    if n_ev + 1 <= n_lifetimes:
        return np.concatenate(([0.0], events.times))
    ranks = np.unique(np.round(np.linspace(0, n_ev - 1, n_lifetimes - 1)).astype(np.int64))
    return np.concatenate(([0.0], events.times[ranks]))


def _tracker(events: SplitEvents, X: np.ndarray, n_threads: int) -> _path.ValidationTracker:
    a = events.arrays
    return _path.ValidationTracker(np.ascontiguousarray(X, dtype=np.float64), a["left"],
                                   a["right"], a["feature"], a["threshold"], a["tau"],
                                   a["tau_parent"], a["lower"], a["upper"], events.roots,
                                   n_threads)


# --------------------------------------------------------------------------
# Exact ridge path
# --------------------------------------------------------------------------
class ExactRidgePath:
    """Exact ridge regression at every event, by Cholesky up/down-dates.

    With A = ΦᵀΦ + αI (the paper's δ² = α), deleting the column of a split
    cell is a rank-1 update of the trailing block of chol(A) (Seeger 2004)
    and appending a child is one triangular solve, O(C²) each (Sec. 4.2.1);
    the new rows are the co-occurrence counts ΦₖᵀΦ_child = |cell k ∩
    child|/M, gathered from the table of active cells of the child's points.
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
        self.y = y
        self.yty = float(y @ y)
        self.n_points = int(is_train.sum())
        self._mask = is_train.astype(bool)
        self._n_threads = resolve_n_jobs(n_jobs)
        self._state = _path.CholeskyPath(*events.base_args(is_train), node_y, counts,
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
        state["act"] = remap(state["act"]).astype(np.int32)
        state["order"] = remap(state["order"])
        _, is_train, node_y, counts = events.learner_inputs(self.y, self._mask)
        new = _path.CholeskyPath(*events.base_args(is_train), node_y, counts, self.alphas,
                                 events.n_columns, self._n_threads)
        new._import(state)
        self._state, self.events = new, events
        return self

    def _records(self):
        k = self.n_done + 1
        s = self._state
        return (np.asarray(s.rec_columns)[:k], np.asarray(s.rec_zz)[:k],
                np.asarray(s.rec_ww)[:k], np.asarray(s.rec_logdet)[:k])

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
        self.y, self._mask = y, is_train.astype(bool)
        self._state = _path.CGPath(*events.base_args(is_train), node_y, counts, y,
                                   self.alphas, *events.train_slices(is_train), self.n_threads)
        self.lifetime = 0.0

    def extend(self, events: SplitEvents) -> "CGRidgePath":
        """Continue on the events of the same forest extended to a larger
        lifetime (``MondrianFeatures.extend``): weights, residuals and the
        active-node table are carried over, only new events remain to run."""
        remap = _remapper(self.events, events)
        state = self._state._export()
        old_ids = np.arange(self.events.n_nodes)
        new_ids = remap(old_ids)
        W = np.zeros((self.alphas.shape[0], events.n_nodes))
        W[:, new_ids] = state["W"]
        active = np.zeros(events.n_nodes, dtype=np.uint8)
        active[new_ids] = state["active"]
        state.update(W=W, active=active, act=remap(state["act"]).astype(np.int32),
                     fresh=remap(state["fresh"]))
        y, is_train, node_y, counts = events.learner_inputs(self.y, self._mask)
        new = _path.CGPath(*events.base_args(is_train), node_y, counts, y, self.alphas,
                           *events.train_slices(is_train), self.n_threads)
        new._import(state)
        self._state, self.events = new, events
        return self

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
        y, is_train, _, _ = events.learner_inputs(y, train_mask)
        self.y, self._mask = y, is_train.astype(bool)
        self.loss = loss
        self.fit_intercept = bool(fit_intercept)
        self.rows = np.flatnonzero(is_train).astype(np.int64)
        self.pass_ = pass_
        self.rng = np.random.default_rng() if random_state is None else random_state
        self._state = self._new_state(events)
        self.lifetime = 0.0

    def _new_state(self, events: SplitEvents) -> _path.SGDPath:
        _, is_train, _, _ = events.learner_inputs(self.y, self._mask)
        return _path.SGDPath(*events.base_args(is_train), self.y, _LOSSES[self.loss],
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
        state.update(W=W, act=remap(state["act"]).astype(np.int32))
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
        return int(done)

    def epochs(self, n_epochs: int) -> None:
        """``n_epochs`` full SGD passes in random order at the current lifetime."""
        for _ in range(check_int(n_epochs, "n_epochs", minimum=0)):
            self._state.epoch(self.rng.permutation(self.rows))

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


# --------------------------------------------------------------------------
# Posterior over the lifetime
# --------------------------------------------------------------------------
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
