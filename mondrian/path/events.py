"""Split events of a Mondrian forest and the lifetime grids of the path (Sec. 4.1).

A forest grown to a terminal lifetime Λ holds the features of every lifetime
λ ∈ [0, Λ]: sorting the split events of all trees by time, each event
replaces the feature of the cell that splits by the features of its two
children.  All node ids here are *global*: node j of tree m is
``node_offset[m] + j``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int
from ..features.mondrian import MondrianFeatures

__all__ = ["SplitEvents", "split_events", "lifetime_grid"]


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
