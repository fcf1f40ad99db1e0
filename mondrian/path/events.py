"""Split events of a Mondrian forest and the lifetime grids of the path (Sec. 4.1).

A forest grown to a terminal lifetime Λ holds the features of every lifetime
λ ∈ [0, Λ]: sorting the split events of all trees by time, each event
replaces the feature of the cell that splits by the features of its two
children.  Everything here is read from the C forest of
:class:`~mondrian.features.MondrianFeatures` (``features.forest_``, a
:class:`~mondrian._ext._forest.Forest`): the events are sorted in C
(``c/events.h``), node sums and active nodes come from C functions of the
forest, and the node arrays are read-only views of its memory -- no copy of
the trees.  Node ids are the forest's *global* ids: node j of tree m is
``node_offset[m] + j``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._ext._forest import Forest
from .._validation import check_int
from ..features.mondrian import MondrianFeatures

__all__ = ["SplitEvents", "split_events", "lifetime_grid"]


@dataclass(frozen=True, eq=False)
class SplitEvents:
    """The split events of a forest, sorted by time, with the forest itself.

    The events pin the forest (``Forest.pin``): it cannot be grown in place
    while they live, so their node ids stay valid
    (``MondrianFeatures.extend`` then grows a copy).

    Attributes
    ----------
    forest : Forest
        The C forest the events were read from.
    times : ndarray of shape (n_events,)
        Split times, increasing.
    nodes, left, right : ndarray of int64, shape (n_events,)
        The node that splits and its two children (global ids).
    tree : ndarray of int64, shape (n_events,)
        The tree of each event.
    lifetime : float
        The terminal lifetime Λ of the forest.
    node_offset : ndarray of int64, shape (M + 1,)
        Node j of tree m has global id ``node_offset[m] + j`` (a view).
    roots : ndarray of int64, shape (M,)
        The trees' roots, ``node_offset[:-1]`` (a view).
    """

    forest: Forest
    times: np.ndarray
    nodes: np.ndarray
    left: np.ndarray
    right: np.ndarray
    tree: np.ndarray
    lifetime: float

    def __post_init__(self):
        self.forest.pin(self)

    @property
    def node_offset(self) -> np.ndarray:
        return self.forest.node_offset

    @property
    def roots(self) -> np.ndarray:
        return self.forest.roots

    @property
    def tree_of(self) -> np.ndarray:
        """The tree of every node (a view)."""
        return self.forest.tree_of

    @property
    def n_trees(self) -> int:
        return int(self.forest.n_trees)

    @property
    def n_nodes(self) -> int:
        return int(self.forest.n_nodes)

    @property
    def n_columns(self) -> int:
        """Number of cells at the terminal lifetime, M + n_events."""
        return self.n_trees + int(self.times.shape[0])

    @property
    def n_points(self) -> int:
        """Number of points the trees were grown on."""
        return int(self.forest.n_points)

    def learner_inputs(self, y, train_mask=None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]:
        """Validated (y, is_train as uint8, Φᵀy per node, training count per node).

        ``y`` has one value per point the trees were grown on; points with
        ``train_mask`` False (held-out points inside the trees, whose
        features are then exact) are ignored by the learners.
        """
        yt, mask = self.learner_targets(y, train_mask)
        node_y = self.node_sums(yt) / np.sqrt(self.n_trees)
        counts = self.node_sums(mask.astype(np.float64))
        return yt, mask.astype(np.uint8), node_y, counts

    def learner_targets(self, y, train_mask=None) -> tuple[np.ndarray, np.ndarray]:
        """Validated (y with the held-out points' values set to 0, training
        mask as bool), without the per-node sums of :meth:`learner_inputs`."""
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
        return np.ascontiguousarray(np.where(mask, y, 0.0)), mask

    def train_slices(self, is_train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's slice (start, end) of its tree's permutation restricted
        to the training points, and those permutations (M x N_train, int32)."""
        return self.forest.train_slices(np.asarray(is_train, dtype=bool))

    def node_sums(self, values: np.ndarray) -> np.ndarray:
        """Σ of ``values`` (one per point) over every node's points (C, from
        the node slices)."""
        return self.forest.node_sums(values)

    def columns_at(self, lifetime: float) -> np.ndarray:
        """Global ids of the active nodes at ``lifetime``, in increasing
        global id (tree by tree): the column order of
        :meth:`MondrianFeatures.transform` for trees grown in batch (after
        ``partial_fit`` its columns are numbered by key instead).  Computed
        by the same C code as the feature matrix; a lifetime above Λ gives
        the cells at Λ."""
        return self.forest.active_nodes(min(float(lifetime), self.lifetime))


def split_events(features: MondrianFeatures) -> SplitEvents:
    """All split events of a fitted :class:`MondrianFeatures`, sorted by time.

    An event is an internal node j (split time τⱼ ≤ Λ) whose feature column
    is replaced at λ = τⱼ by its two children's (Sec. 4.1).  There are
    C_Λ - M events when the forest has C_Λ cells at Λ.  Ties in time are
    broken by global id (a parent before its children).

    Parameters
    ----------
    features : MondrianFeatures
        A fitted feature map.

    Returns
    -------
    SplitEvents
    """
    check_is_fitted(features, "forest_")
    forest = features.forest_
    nodes, times, left, right, tree = forest.split_events()
    return SplitEvents(forest=forest, times=times, nodes=nodes, left=left, right=right,
                       tree=tree, lifetime=float(forest.lifetime))


@dataclass(frozen=True, eq=False)
class _EventsRecord:
    """What :func:`_remapper` reads of a forest's old events, kept without
    the events (which pin the forest): so that a learner can let go of its
    forest, have it extended in place, and continue on the new events
    (:meth:`~mondrian.path.CGRidgePath.extend_forest`)."""

    n_trees: int
    n_points: int
    lifetime: float
    tree_of: np.ndarray
    node_offset: np.ndarray
    times: np.ndarray
    nodes: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.tree_of.shape[0])

    @classmethod
    def of(cls, events: SplitEvents) -> "_EventsRecord":
        # tree_of and node_offset are views of the forest: copied.  The
        # event arrays are the forest's cache of a growth, not its memory.
        return cls(events.n_trees, events.n_points, events.lifetime, np.array(events.tree_of),
                   np.array(events.node_offset), events.times, events.nodes)


def _remapper(old: SplitEvents | _EventsRecord, new: SplitEvents):
    """Map global node ids of ``old`` to those of ``new``, an extension of the
    same forest (``MondrianFeatures.extend``: node ids within each tree are
    unchanged, new nodes appended); checks that the old events come first.

    Returns ``remap(ids)``, which maps any array of ids; ``remap.table(act,
    out=None)`` maps an active-node table (N, M) (int32, column m holding tree m's ids)
    by one broadcast addition of each tree's shift instead of a lookup of
    every id's tree (0.1 s per extension of a 2000-tree path on 5000 points,
    a tenth of the default fit)."""
    if (old.n_trees != new.n_trees or old.n_points != new.n_points
            or new.lifetime < old.lifetime):
        raise ValueError("the new events do not extend the path's forest")
    tree_of = old.tree_of
    shift = new.node_offset[:-1] - old.node_offset[:-1]

    def remap(ids):
        ids = np.asarray(ids, dtype=np.int64)
        return ids + shift[tree_of[ids]]

    def table(act, out=None):
        # Ids are int32 on both sides (the learners' tables); the largest
        # new id fits, being a node of the new forest.  ``out=act``: in place.
        return np.add(act, shift.astype(np.int32)[None, :], out=out, dtype=np.int32)

    remap.table = table

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
