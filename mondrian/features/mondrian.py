"""Mondrian random features (Balog et al. 2016, Sec. 3).

:class:`MondrianFeatures` grows M independent Mondrian trees on the training
data up to a lifetime Λ and maps points to the sparse feature vectors of
eq. (2): one indicator per tree, of the point's cell at lifetime λ ≤ Λ,
scaled by 1/√M.  The induced kernel k_M(x, x') = φ(x)ᵀφ(x') converges to the
Laplace kernel exp(-λ‖x - x'‖₁) as M → ∞ (Prop. 1).

The trees, a copy of the training points and the trees' random streams live
in one C forest (:class:`~mondrian._ext._forest.Forest`, ``forest_``); the
feature matrix, the Gram matrix and the kernel-width path
(:mod:`mondrian.path`) are all computed from it.

Online learning (Sec. 5): :meth:`MondrianFeatures.partial_fit` inserts new
points into the fitted trees by the conditional Mondrian (``c/insert.h``),
which leaves the forest distributed as if grown in batch on every point seen
so far.  A new point may create new cells: new columns, zero for every
earlier point, numbered after all existing ones (see ``partial_fit``).
"""
from __future__ import annotations

import copy
import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._ext._forest import Forest
from .._progress import check_verbose, progress
from .._scale import lifetime_scale, resolve_feature_scale
from .._streams import copy_streams, spawn_streams
from .._dask import is_dask_collection
from .._validation import (all_finite, available_memory, check_array_input, check_auto_or,
                           check_bool, check_int, check_lifetime, check_random_generator,
                           check_rotation, format_bytes, resolve_n_jobs)

__all__ = ["MondrianFeatures"]


class SharesTreesOnCopy:
    """``copy.copy`` shares the trees until either side changes them
    (:func:`copy_sharing_trees`): for the estimators whose ``partial_fit``
    or ``extend`` change their fitted state in place."""

    def __copy__(self):
        return copy_sharing_trees(self)


class MondrianFeatures(SharesTreesOnCopy, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                       BaseEstimator):
    """Sparse random features of the Mondrian kernel.

    ``fit`` grows ``n_trees`` Mondrian trees (paper Sec. 2.2) on X up to
    ``lifetime``; ``transform`` maps points to the feature vector of eq. (2)
    at any lifetime λ ≤ the fitted one, so one forest serves every kernel
    width in [0, Λ] (Sec. 4.1).

    Each row has exactly ``n_trees`` stored entries, one per tree.  For the
    training points every entry is 1/√M.  A point not seen in ``fit`` gets,
    in each tree, the *expected* value of its indicator under the
    conditional Mondrian (Sec. 2.4): the probability
    exp(-Σⱼ eⱼ(x)(min(τⱼ, λ) - τ_parent(j))⁺)/√M that no cut separates it
    from its cell's training points, where eⱼ(x) is the ℓ₁ distance of x to
    node j's data box.  Hence ``Φ(X_train) Φ(x)ᵀ`` is an unbiased estimate of
    exp(-λ‖x_train - x‖₁) for any x, also outside the training data's hull.

    Parameters
    ----------
    n_trees : int, default=100
        Number M of independent Mondrian trees (non-zeros per row).
    lifetime : float or 'auto', default='auto'
        Terminal lifetime Λ ≥ 0: the Laplace kernel's inverse width λ of
        ``exp(-λ‖x - x'‖₁)`` (Sec. 3) and the largest lifetime ``transform``
        accepts.  'auto': the data's scale λ₀ = 1/(median ℓ₁ distance between
        the rows of X) (:func:`~mondrian._scale.lifetime_scale`, on at most
        1000 rows drawn from ``random_state``; with ``rotation='uniform'``,
        the rotated kernel's distance), at which a typical pair of points has
        kernel e⁻¹ -- the starting point of the kernel-width search of
        :class:`~mondrian.MondrianKernelRidgeCV`, which selects the width
        instead.  A fixed number does not follow the units of X: on the raw
        CPU data (features up to 10⁶) ``lifetime=1`` gives every training
        point its own cell in every tree.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of randomness.  Every tree draws from its own child stream
        (``Generator.spawn``), so results do not depend on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads for growing trees and building features (None or -1: all cores;
        capped at the cores available).
    verbose : int, default=0
        0: silent; 1 or more: ``fit`` and ``extend`` report the trees grown
        and the time on stderr (a tqdm bar if tqdm is installed).  The trees
        are grown in one parallel call of the C core, so the report has two
        points, before and after.  Results do not depend on it.
    store_points : bool, default=True
        Keep a copy of the training points in the forest.  ``False`` is for
        streams that do not fit in memory: after ``fit`` the forest keeps
        the trees' boxes, split times and cell counts but not the points,
        so its memory is O(nodes) however many points ``partial_fit``
        inserts.  ``transform`` and ``partial_fit`` work as before; what
        reads the training points does not (``training_features``,
        ``gram``, ``extend``, the kernel-width path) and raises ValueError.
    max_nodes : int or None, default=None
        Cap on the nodes of each tree for ``partial_fit``: once an insertion
        would take a tree above ``max_nodes`` nodes, new points no longer
        split its cells; they only enlarge the data boxes on their path and
        join the cell they reach (so every feature stays exact, and the
        number of columns stops growing).  A capped tree is no longer
        distributed as a Mondrian tree on every point seen.  ``fit`` is not
        capped.  None: no cap.
    rotation : {None, 'uniform'}, default=None
        None: axis-aligned cuts, the Laplace kernel exp(-λ‖x - x'‖₁).
        'uniform': the uniformly rotated Mondrian kernel (Osborne &
        O'Reilly 2025): tree m cuts the points in its own coordinates
        (x - c) Q_m, with Q_m a Haar-random rotation of SO(D) drawn from the
        tree's own random stream and c the mean of the points passed to
        ``fit`` (fixed then; test points never move it).  The limit kernel
        is isotropic, :func:`~mondrian.kernels.rotated_laplace_kernel`:
        E_v[exp(-λ‖x - x'‖₂‖v‖₁)] over v uniform on the unit sphere, whose
        width is about λ·E‖v‖₁ (≈ λ√(2D/π)) in Euclidean distance.  Costs D²
        multiply-adds per point per tree in ``fit``, ``extend`` and
        ``transform`` (see :doc:`/rotated`).
    feature_scale : None, 'std', 'auto' or array-like of shape (n_features,), default=None
        Per-feature length scales l: the trees cut the points x / l (before
        any rotation), so the kernel is exp(-λ Σ_b ∣x_b - x'_b∣ / l_b), an
        ARD Laplace kernel.  None: the paper's kernel on x itself.  'std':
        l = the standard deviation of each feature over the points passed
        to ``fit`` -- the robust IQR/1.349 where the deviation exceeds 30
        times it (a gross outlier), at least half the gap of a two-valued
        feature (a rare 0/1 indicator is not stretched beyond a balanced
        one), 1 for a constant feature (:func:`mondrian._scale.feature_std`)
        -- the kernel of standardised inputs, which the automatic
        estimators use by default (features in different units otherwise
        weigh by their units); 'auto': 'std' with ``lifetime='auto'`` and
        at least 10 rows, else None.  Fixed at ``fit``: ``partial_fit`` and
        ``transform`` divide new points by the same l.

    Attributes
    ----------
    forest_ : Forest
        The fitted forest: the trees in one global node numbering (read-only
        node arrays, views of the C memory), its own copy of the training
        points and the trees' bit generators.
    trees_ : tuple of TreeView
        Per-tree read-only access to ``forest_`` in node ids local to each
        tree (computed on access).
    lifetime_ : float
        The lifetime up to which the trees are grown.
    n_features_in_ : int
        Input dimension D.
    n_cells_ : int
        Number of columns of the feature matrix at ``lifetime_``.
    rotation_ : ndarray of shape (n_trees, n_features, n_features) or None
        With ``rotation='uniform'``, the trees' rotations Q_m (orthogonal,
        determinant +1; with a ``feature_scale``, row b divided by l_b):
        tree m's coordinates of x are ``(x - center_) @ rotation_[m]``.
        None for axis-aligned trees.
    center_ : ndarray of shape (n_features,) or None
        The centre c of the rotations (the mean of the training points), or
        None.
    feature_scale_ : ndarray of shape (n_features,) or None
        The length scales l the trees divide the points by, or None.

    See Also
    --------
    mondrian.kernels.laplace_kernel : the exact kernel approximated here.
    mondrian.kernels.rotated_laplace_kernel : the one with ``rotation='uniform'``.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianFeatures
    >>> X = np.random.default_rng(0).random((200, 3))
    >>> mf = MondrianFeatures(n_trees=50, lifetime=2.0, random_state=0).fit(X)
    >>> Phi = mf.transform(X)
    >>> Phi.shape[0], Phi.nnz
    (200, 10000)
    """

    def __init__(self, n_trees: int = 100, lifetime: float | str = "auto", *, random_state=None,
                 n_jobs: int | None = None, verbose: int = 0, store_points: bool = True,
                 max_nodes: int | None = None, rotation: str | None = None,
                 feature_scale=None):
        self.n_trees = n_trees
        self.lifetime = lifetime
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.store_points = store_points
        self.max_nodes = max_nodes
        self.rotation = rotation
        self.feature_scale = feature_scale

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None) -> "MondrianFeatures":
        """Grow the trees on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points: dense, finite; float32 input is promoted.
        y : ignored

        Returns
        -------
        self

        Notes
        -----
        A dask array or data frame X (chunked by rows) is fitted on the
        cluster: the trees are grown on a random sample of
        :data:`mondrian._dask.SAMPLE_ROWS` rows, then every other row is
        inserted block by block (``partial_fit``), so the forest is
        distributed as one grown on all rows; it keeps no points (as with
        ``store_points=False``), and ``feature_scale='std'`` is that
        sample's.  See :doc:`/dask`.
        """
        if is_dask_collection(X):
            from .._dask import fit_features
            fit_features(self, X)
            return self
        self._grow(X)
        self._finish_fit()
        return self

    def _grow(self, X, spare_points: int = 0) -> None:
        """Validate the parameters and X, grow the forest (keeping the points),
        with room for inserting ``spare_points`` points later: in its node
        arrays (2 nodes per point and tree), in X and in the trees' rows of
        point indices (free until written)."""
        n_trees = check_int(self.n_trees, "n_trees")
        lifetime = check_auto_or(self.lifetime, "lifetime", check_lifetime,
                                 "a finite number >= 0")
        check_bool(self.store_points, "store_points")
        _check_max_nodes(self.max_nodes)
        n_threads = resolve_n_jobs(self.n_jobs)
        verbose = check_verbose(self.verbose)
        rotation = check_rotation(self.rotation)
        X = check_array_input(self, X, reset=True)
        scale = resolve_feature_scale(self.feature_scale, X, lifetime == "auto")
        rng = check_random_generator(self.random_state)
        if lifetime == "auto":
            # Draws rows from rng, not from its seed sequence: the trees'
            # streams (spawned below) are the same as with a number.
            lifetime = lifetime_scale(X, rng, rotation=rotation, scale=scale)
        budget = _MemoryBudget(X, n_trees, n_threads, rotation, scale,
                               spare_points=spare_points)
        budget.check_fixed()
        streams = spawn_streams(rng, n_trees)
        budget.check_fit(X, lifetime, streams)
        # The forest copies X: changing the caller's array later cannot
        # affect the trees or their extension.
        forest = Forest(n_trees, X.shape[1])
        with progress(n_trees, f"MondrianFeatures.fit: trees to lifetime {lifetime:.4g}",
                      verbose) as bar:
            forest.fit(X, lifetime, streams, n_threads, rotation=rotation,
                       spare_nodes=2 * int(spare_points) * n_trees, scale=scale,
                       spare_points=int(spare_points))
            bar.update(n_trees)
        self.forest_ = forest
        self.lifetime_ = lifetime
        self.n_cells_ = int(forest.n_leaves)

    def _fit_leaving_room(self, X, n_points: int) -> "MondrianFeatures":
        """``fit(X)`` with room for inserting ``n_points`` points afterwards
        without moving the node arrays (the forest estimators' held-out
        points: the same trees, a lower peak and no copy at the insertion)."""
        self._grow(X, spare_points=n_points)
        self._finish_fit()
        return self

    def _finish_fit(self) -> None:
        """Drop the forest's points if ``store_points`` is False."""
        if not self.store_points:
            self.forest_.drop_points()

    def partial_fit(self, X, y=None) -> "MondrianFeatures":
        """Insert the points X into the trees (online learning, Sec. 5).

        Before any ``fit`` this is ``fit(X)``.  Afterwards every point is
        inserted into every tree by the conditional Mondrian (Sec. 2.4;
        Lakshminarayanan, Roy & Teh 2014): along its path from the root, at
        each node whose data box does not contain it, a cut separating it
        from the node's points is drawn at an exponential time of rate its
        ℓ₁ distance to the box; if that comes before the node's own split
        (and the lifetime) a new parent splits there, with the point alone
        in a new leaf.  By memorylessness of the exponential clocks and
        projectivity of the Mondrian process (Sec. 2.3) the trees are then
        distributed as trees grown in batch on every point seen, in any
        arrival order and batch sizes (the derivation is in ``c/insert.h``).
        Each tree continues its own random stream.

        Columns.  At any lifetime, an insertion never moves an earlier point
        to another cell: a point either joins an existing cell or creates a
        new one.  Existing columns keep their index; new cells are appended
        as new columns, zero for every earlier point, numbered point by
        point (and tree by tree within a point), so the numbering does not
        depend on how the stream is cut into batches.  Within a row the
        columns are then no longer sorted, nor tree m's cells contiguous.
        :meth:`extend` renumbers the columns (tree by tree again).

        The forest is updated in place, unless views, split events or path
        learners still read it (then a copy is, as in :meth:`extend`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New points: dense, finite, with the fitted number of features.
        y : ignored

        Returns
        -------
        self
        """
        if not hasattr(self, "forest_"):
            return self.fit(X, y)
        max_nodes = _check_max_nodes(self.max_nodes)
        X = check_array_input(self, X, reset=False)
        old = self.forest_
        _check_joint_range(old, X)
        n_threads = resolve_n_jobs(self.n_jobs)
        _MemoryBudget(X, old.n_trees, n_threads,
                      None if old.rotation is None else "uniform", old.scale).check_insert(
            old, copy=old.shared)
        forest = old.copy() if old.shared else old
        forest.insert(X, n_threads, max_nodes or 0)
        self.forest_ = forest
        self.n_cells_ = int(forest.n_leaves)
        return self

    def extend(self, lifetime: float) -> "MondrianFeatures":
        """Grow the fitted trees further, up to a larger ``lifetime``.

        By memorylessness of the exponential clocks (Sec. 2.2), a leaf that
        has not split by the fitted lifetime Λ splits at Λ + Exp(linear
        dimension), so continuing the existing trees gives forests with the
        same distribution as growing them to ``lifetime`` from scratch; the
        cells at every λ ≤ Λ are unchanged.  Each tree continues its own
        random stream.

        The forest is grown in place, unless split events or path learners
        (or views of its arrays) still read it: then a copy is grown and
        becomes ``forest_``, and they keep the forest they were made from.

        Parameters
        ----------
        lifetime : float
            The new terminal lifetime, >= ``lifetime_``.

        Returns
        -------
        self
        """
        check_is_fitted(self, "forest_")
        lifetime = check_lifetime(lifetime)
        if lifetime < self.lifetime_:
            raise ValueError(f"lifetime={lifetime!r} is below the fitted lifetime "
                             f"{self.lifetime_!r}; extend only grows trees")
        verbose = check_verbose(self.verbose)
        n_threads = resolve_n_jobs(self.n_jobs)
        old = self.forest_
        budget = _MemoryBudget(old.X, old.n_trees, n_threads,
                               None if old.rotation is None else "uniform", old.scale)
        budget.check_extend(old, lifetime, copy=old.shared)
        forest = old.copy() if old.shared else old
        with progress(forest.n_trees, f"MondrianFeatures.extend: trees to lifetime "
                      f"{lifetime:.4g}", verbose) as bar:
            forest.extend(lifetime, n_threads)
            bar.update(forest.n_trees)
        self.forest_ = forest
        self.lifetime_ = lifetime
        self.n_cells_ = int(forest.n_leaves)
        return self

    @property
    def rotation_(self) -> np.ndarray | None:
        """The trees' rotations (copies), or None for axis-aligned trees."""
        check_is_fitted(self, "forest_")
        rotation = self.forest_.rotation
        return None if rotation is None else np.array(rotation)

    @property
    def feature_scale_(self) -> np.ndarray | None:
        """The per-feature length scales l (a copy), or None."""
        check_is_fitted(self, "forest_")
        scale = self.forest_.scale
        return None if scale is None else np.array(scale)

    @property
    def center_(self) -> np.ndarray | None:
        """The centre of the rotations (a copy), or None."""
        check_is_fitted(self, "forest_")
        center = self.forest_.center
        return None if center is None else np.array(center)

    @property
    def trees_(self) -> tuple:
        """The fitted trees as read-only :class:`TreeView` objects (local node
        ids), views of ``forest_``."""
        forest = self.forest_
        return tuple(forest.tree(m) for m in range(forest.n_trees))

    def fit_transform(self, X, y=None, **fit_params) -> sp.csr_array:
        """Grow the trees on X and return its features at the fitted lifetime.

        Faster than ``fit(X).transform(X)`` (the features of training points
        are read off the trees without lookups) and equal to it.
        """
        self._grow(X)
        Phi = self._features(None, self.lifetime_)
        self._finish_fit()
        return Phi

    # ------------------------------------------------------------ transform
    def transform(self, X, lifetime: float | None = None) -> sp.csr_array:
        """Feature matrix Φ of X at ``lifetime`` (eq. (2)).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        lifetime : float, optional
            λ in [0, ``lifetime_``]; default ``lifetime_``.

        Returns
        -------
        scipy.sparse.csr_array of shape (n_samples, n_columns), float64
            Exactly ``n_trees`` stored entries per row, one per tree in tree
            order.  For trees grown by ``fit`` (or ``extend``) tree m's
            cells occupy a contiguous block of columns, so rows are sorted
            by column; after ``partial_fit`` columns keep the indices they
            had and new cells are appended (see ``partial_fit``).
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        if is_dask_collection(X):
            from .._dask import transform_blocks
            return transform_blocks(self, X, lam)
        X = check_array_input(self, X, reset=False)
        return self._features(X, lam)

    def dot(self, X, coef, lifetime: float | None = None) -> np.ndarray:
        """Φ(X)·coef at ``lifetime`` without forming Φ: a linear model on the
        features, evaluated tree by tree in C.

        ``transform(X, lifetime) @ coef`` holds n_samples × ``n_trees``
        entries (12 bytes each: 2.4 GB for 10⁵ rows and 2000 trees); this
        holds the output only, and is faster.  The same numbers: each row
        sums its trees in tree order, as the sparse product does, for any
        ``n_jobs``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        coef : array-like of shape (n_columns,) or (n_columns, n_outputs)
            Weights of the columns of ``transform(X, lifetime)``.
        lifetime : float, optional
            λ in [0, ``lifetime_``]; default ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        if is_dask_collection(X):
            raise TypeError("X: dot takes in-memory arrays; for a dask array use "
                            "X.map_blocks(lambda b: features.dot(b, coef), ...) or transform")
        coef = _dense_real(coef, "coef")
        X = check_array_input(self, X, reset=False)
        rank = _column_rank(self.forest_, lam)
        n_cols = int(self.forest_.active_columns(lam)[1][-1])
        if coef.ndim not in (1, 2) or coef.shape[0] != n_cols or \
                (coef.ndim == 2 and coef.shape[1] == 0):
            raise ValueError(f"coef must have shape ({n_cols},) or ({n_cols}, n_outputs >= 1) "
                             f"(the columns at lifetime {lam:g}), got {coef.shape}")
        if rank is not None:
            coef = coef[rank]   # to the C core's numbering of the columns
        return self.forest_.features_dot(X, lam, coef, resolve_n_jobs(self.n_jobs))

    def training_features(self, lifetime: float | None = None) -> sp.csr_array:
        """Feature matrix of the training points at ``lifetime``, rows in fit order.

        Equal to ``transform(X_fit, lifetime)`` but read off the trees'
        node slices, without lookups.
        """
        check_is_fitted(self, "forest_")
        return self._features(None, self._check_lifetime_arg(lifetime))

    def training_features_rdot(self, values, lifetime: float | None = None) -> np.ndarray:
        """Φᵀv: the transposed feature matrix of the training points at
        ``lifetime`` times one value per point (rows in fit order).

        Equal, to rounding, to ``training_features(lifetime).T @ values``
        (column j: the values of the points of cell j, summed, times
        1/sqrt(M)), but read off the trees' node slices (prefix sums along
        each tree's permutation, :meth:`Forest.node_sums`) without building
        the n x M sparse matrix: the dual solvers' weights w = Φᵀc (600
        points, 12 809 trees: 0.075 s for the matrix and its product).

        Parameters
        ----------
        values : array-like of shape (n_points,)
            One finite value per training point.
        lifetime : float or None, default=None
            λ ≤ ``lifetime_``; None: ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_columns,)
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        forest = self.forest_
        values = _dense_real(values, "values").astype(np.float64, copy=False)
        if values.shape != (forest.n_points,):
            raise ValueError(f"values must have shape ({forest.n_points},), got "
                             f"{values.shape}")
        if not all_finite(values):
            raise ValueError("values must be finite")
        sums = forest.node_sums(values)
        col_of_node, _ = forest.active_columns(lam)
        active = col_of_node >= 0
        out = np.empty(int(np.count_nonzero(active)), dtype=np.float64)
        out[col_of_node[active]] = sums[active]
        rank = _column_rank(forest, lam)
        if rank is not None:
            stable = np.empty_like(out)
            stable[rank] = out
            out = stable
        return out * (1.0 / np.sqrt(forest.n_trees))

    def gram(self, lifetime: float | None = None) -> np.ndarray:
        """Dense Gram matrix ΦᵀΦ of the training features at ``lifetime``.

        Entry (a, b) is the number of training points in both cells a and b,
        divided by M (Sec. 4.2.1's A = ΦᵀΦ + δ²I without the ridge term).
        Computed in C from the trees' point slices, tree pair by tree pair;
        several times faster than the sparse product ``Phi.T @ Phi``.

        Returns
        -------
        ndarray of shape (n_columns, n_columns)
            Symmetric; memory 8·n_columns² bytes.
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        gram = self.forest_.gram(lam, resolve_n_jobs(self.n_jobs))
        rank = _column_rank(self.forest_, lam)
        if rank is None:
            return gram
        order = np.empty_like(rank)
        order[rank] = np.arange(rank.size)
        return gram[np.ix_(order, order)]

    def normal_sums(self, X, y=None, lifetime: float | None = None):
        """ΦᵀΦ (and Φᵀy, Φᵀ1) of the features of the rows of ``X``, dense.

        The products of :meth:`transform`'s matrix, computed in C in one walk
        of every tree per row without forming Φ: the tree-pair contingency
        counts of :meth:`gram` for any points, so blocks of rows can be
        summed (the normal equations of ridge regression over data that do
        not fit in memory, e.g. the Dask fit of :class:`MondrianKernelRidge`).
        Scratch: 12 bytes per tree for 16384 rows at a time.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets), optional
        lifetime : float, optional
            λ ≤ the fitted lifetime; default the fitted lifetime.

        Returns
        -------
        gram : ndarray of shape (n_columns, n_columns)
            ΦᵀΦ.
        Pty : ndarray of shape (n_columns,) or (n_columns, n_targets)
            Φᵀy; only with ``y``.
        Pt1 : ndarray of shape (n_columns,)
            Φᵀ1, the column sums; only with ``y``.
        """
        check_is_fitted(self, "forest_")
        lam = self._check_lifetime_arg(lifetime)
        X = np.ascontiguousarray(check_array_input(self, X, reset=False), dtype=np.float64)
        targets = None
        if y is not None:
            y = np.asarray(y, dtype=np.float64)
            if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
                raise ValueError(f"y must have shape ({X.shape[0]},) or ({X.shape[0]}, k), "
                                 f"got {y.shape}")
            if not np.all(np.isfinite(y)):
                raise ValueError("y contains NaN or infinite values")
            targets = np.ascontiguousarray(y.reshape(X.shape[0], -1))
        out = self.forest_.gram_points(X, lam, targets, resolve_n_jobs(self.n_jobs))
        gram, Pty, Pt1 = out if targets is not None else (out, None, None)
        rank = _column_rank(self.forest_, lam)
        if rank is not None:
            order = np.empty_like(rank)
            order[rank] = np.arange(rank.size)
            gram = gram[np.ix_(order, order)]
            if targets is not None:
                Pty, Pt1 = Pty[order], Pt1[order]
        if targets is None:
            return gram
        return gram, (Pty[:, 0] if y.ndim == 1 else Pty), Pt1

    def kernel(self, X, Y=None, lifetime: float | None = None) -> np.ndarray:
        """Mondrian kernel estimate k_M(x, y) = φ(x)ᵀφ(y) (Sec. 3.1).

        With training points in either argument this is an unbiased estimate
        of the Laplace kernel exp(-λ‖x - y‖₁) (Prop. 1), or with
        ``rotation='uniform'`` of :func:`~mondrian.rotated_laplace_kernel`;
        for two points both unseen in ``fit`` it is a product of
        expectations, not unbiased.

        Parameters
        ----------
        X : array-like of shape (n_x, n_features)
        Y : array-like of shape (n_y, n_features), optional
            Default: X.
        lifetime : float, optional
            λ in [0, ``lifetime_``]; default ``lifetime_``.

        Returns
        -------
        ndarray of shape (n_x, n_y)
        """
        Phi_x = self.transform(X, lifetime)
        Phi_y = Phi_x if Y is None else self.transform(Y, lifetime)
        return (Phi_x @ Phi_y.T).toarray()

    # -------------------------------------------------------------- helpers
    def _check_lifetime_arg(self, lifetime) -> float:
        if lifetime is None:
            return self.lifetime_
        return check_lifetime(lifetime, upper=self.lifetime_)

    def _features(self, X: np.ndarray | None, lifetime: float) -> sp.csr_array:
        n_threads = resolve_n_jobs(self.n_jobs)
        data, indices, indptr, n_cols = self.forest_.features(X, lifetime, n_threads)
        n_rows = self.forest_.n_points if X is None else X.shape[0]
        rank = _column_rank(self.forest_, lifetime)
        if rank is not None:
            indices = rank.astype(indices.dtype, copy=False)[indices]
        return _csr(data, indices, indptr, (n_rows, n_cols), sorted_rows=rank is None)

    @property
    def _n_features_out(self) -> int:
        """Number of output columns at ``lifetime_``, for ``get_feature_names_out``
        (names ``mondrianfeatures0``, ...; the columns of ``transform`` at a
        smaller lifetime are fewer and not named)."""
        return self.n_cells_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def copy_sharing_trees(obj):
    """``copy.copy`` of a fitted estimator whose ``partial_fit`` or
    ``extend`` change its fitted state in place: every attribute is copied
    (as by ``copy.deepcopy``) except the forests (:class:`Forest`, held
    directly or by a :class:`MondrianFeatures`), which the copy shares and
    pins.  A pinned forest is never grown in place: the first ``partial_fit``
    or ``extend`` of either side grows a copy of it.  So a copy costs what
    the small attributes cost, not the trees, and neither side can change
    the other (a plain shallow copy shared the trees, the feature map and
    the statistics: an insertion through one left the other inconsistent).
    """
    forests = {}

    def collect(value):
        if isinstance(value, Forest):
            forests[id(value)] = value
        elif isinstance(value, MondrianFeatures):
            collect(value.__dict__.get("forest_"))

    for value in vars(obj).values():
        collect(value)
    memo = dict(forests)
    out = copy.deepcopy(obj, memo)
    for forest in forests.values():
        forest.pin(out)
    return out


def node_bytes(n_features: int) -> int:
    """Bytes per node of the forest's storage (``c/forest.h``): seven int64
    arrays (tree, parent, children, split dimension, slice start and end),
    two doubles (threshold, split time) and the node's data box (two
    corners of ``n_features`` doubles)."""
    return 7 * 8 + 2 * 8 + 2 * 8 * n_features


#: Bytes per tree of its stream: a numpy ``BitGenerator`` and ``SeedSequence``
#: (about 1000 bytes measured with tracemalloc, numpy 2.4), or 88 bytes of C
#: for the default PCG64 held in C (``c/pcg64.h``); the larger is counted.
TREE_OBJECT_BYTES = 1024

#: Trees grown as a pilot to estimate the size of a forest whose bound does
#: not fit in memory.
PILOT_TREES = 2
#: Fewest points :meth:`_MemoryBudget.most_trees` grows its pilot trees on
#: when all of them do not fit.
PILOT_MIN_ROWS = 10_000

#: Share of the available memory that an automatic lifetime may fill
#: (:meth:`_MemoryBudget.largest_lifetime`): the rest is left to the
#: caller's data, the estimate's error and the rest of the process.
MEMORY_SHARE = 0.75

#: Steps per octave of the grid that such a lifetime is rounded down to
#: (2^(1/16): at most 4.3 % below what fits; quarter octaves cost the default
#: regressor 3-7 % of test RMSE at 3·10⁵-10⁶ rows).
GRID_STEPS = 16.0


def expected_leaves_bound(n_points: int, extent: np.ndarray, lifetime: float) -> float:
    """Upper bound on the expected number of leaves of one Mondrian tree
    grown to ``lifetime`` on N points whose bounding box has the side
    lengths ``extent``: min(N, ∏_d (1 + λ·extent_d)).

    A Mondrian process of lifetime λ on a box with side lengths a_d has
    ∏_d (1 + λ a_d) cells in expectation (Mourtada, Gaïffas & Scornet 2020,
    Prop. 2; Balog et al. 2016, Prop. 3 bound it by e^{λ Σ_d a_d}).  The
    tree grown on the data is that process on the data's bounding box
    restricted to the points (projectivity, Sec. 2.3): its leaves are the
    cells that hold points, at most all cells and at most N.
    """
    log_cells = float(np.sum(np.log1p(lifetime * np.asarray(extent, dtype=np.float64))))
    return float(min(n_points, np.exp(min(log_cells, 700.0))))


class _MemoryBudget:
    """Size estimates of a forest before it is grown, against the memory
    the system reports available (:func:`~mondrian._validation.available_memory`).

    Growing M trees on N points of D features holds at its peak: the
    forest's copy of X (8·N·D bytes), the M point permutations of the
    forest (8·M·N: a tree is grown in its own row of them, ``c/grow.c``, so
    its scratch holds no other), one stack and one copy of
    the points' rows (in the order of the tree being grown) per thread
    (8·N + 8·N·D each), a random stream per tree
    (:data:`TREE_OBJECT_BYTES`), and every node once (:func:`node_bytes`;
    the grown trees are packed, then moved into the forest as its memory
    fills, see :meth:`peak`).  A tree
    on N points has at most 2N - 1 nodes and 2·E[leaves] - 1 in
    expectation (:func:`expected_leaves_bound`).  A refusal raises
    ``MemoryError`` with the estimate and what to change.
    """

    def __init__(self, X: np.ndarray, n_trees: int, n_threads: int,
                 rotation: str | None = None, scale: np.ndarray | None = None,
                 spare_points: int = 0):
        # Only sizes and extents are kept: X may be a view of a forest,
        # which must not stay pinned (Forest.shared).
        self.n, self.d = X.shape
        self.extent = np.ptp(X, axis=0)
        self.scale = None if scale is None else np.array(scale, dtype=np.float64)
        if scale is not None:
            self.extent = self.extent / self.scale   # the trees' coordinates
        if rotation is not None:
            # A rotated tree's box is that of the rotated points: each side
            # is at most the points' Euclidean diameter, ≤ ‖extent‖₂.
            self.extent = np.full(self.d, float(np.linalg.norm(self.extent)))
        self.rotated = rotation is not None
        self.m = n_trees
        self.n_threads = n_threads
        self.spare = int(spare_points)   # room for points inserted later
        self.available = available_memory()

    def _fixed_parts(self) -> tuple[float, float]:
        """:meth:`fixed` as (bytes whatever the number of trees, bytes per
        tree)."""
        n, d = float(self.n), float(self.d)
        # X and the rows of point indices are allocated with the room for
        # spare points (untouched until written, but address space)
        room = n + float(self.spare)
        shared = 8 * room * d + (8 * n + 8 * n * d) * self.n_threads
        per_tree = 8 * room + TREE_OBJECT_BYTES + 64
        if self.rotated:
            shared += 8 * n * d * self.n_threads
            per_tree += 8 * d * d
        elif self.scale is not None:
            shared += 8 * n * d
        return shared, per_tree

    def fixed(self) -> float:
        """Bytes needed whatever the lifetime (with rotations, also each
        thread's rotated copy of the points and the M rotations; with a
        scale alone, the one scaled copy the trees share, ``c/grow.c``)."""
        shared, per_tree = self._fixed_parts()
        return shared + self.m * per_tree

    def peak(self, total_nodes: float, kept_nodes: float = 0.0) -> float:
        """Peak bytes of growing ``total_nodes`` nodes while ``kept_nodes``
        (an existing forest) stay allocated: the grown trees are held once
        (packed, then moved into the forest with their memory released as
        it fills, ``c/grow.c``), plus, on each of min(threads, M) threads,
        the tree it grows in its scratch (room for up to twice an average
        tree's nodes) and an arena chunk of at least 4 MiB."""
        nb = node_bytes(self.d)
        m = max(self.m, 1)
        busy = min(self.n_threads, m)
        in_flight = busy * (2.0 * total_nodes / m * nb + float(4 << 20))
        return self.fixed() + (total_nodes + kept_nodes) * nb + in_flight

    def check_insert(self, forest: Forest, *, copy: bool) -> None:
        """Refuse an insertion of the budget's N points into ``forest`` that
        needs more memory than is available (``c/insert.c``), on top of the
        forest itself (resident already): a copy of it if it is shared; the
        larger of its node arrays moving to a larger block (each array is
        copied, then its old block freed), or at most 2N new nodes a tree,
        stored in the forest and their boxes in the trees' scratch, with
        each tree's scratch copy of its links (72 bytes a node); and the
        points' permutations grown by doubling."""
        if self.available is None:
            return
        nb = node_bytes(self.d)
        new = 2.0 * self.n * self.m
        box = 8.0 * self.d
        need = (forest.n_nodes * nb * (1 if copy else 0)
                + max(forest.n_nodes * box, new * (nb + 2 * box) + forest.n_nodes * 72.0)
                + self._points_growth(forest, copy) + 8.0 * self.n * self.d)
        if need > self.available:
            self._refuse(f"inserting {self.n} points into n_trees={self.m} trees of "
                         f"{forest.n_nodes} nodes", need,
                         f"insert fewer points at once, use fewer trees (n_trees={self.m}) "
                         f"or a node cap (max_nodes)")

    def _points_growth(self, forest: Forest, copy: bool) -> float:
        """Bytes an insertion of the budget's N points adds to the forest's
        points: none while they fit in its room (``Forest.fit``'s
        ``spare_points``); else X and the M rows of point indices move to
        blocks of max(2·capacity, need) points (``c/forest.c``), and a copy
        (of a shared forest) first holds its own, of the same capacity."""
        n_points = float(forest.n_points)
        capacity = float(forest.point_capacity)
        held = 8.0 * (self.m + self.d) * capacity if copy else 0.0
        need = n_points + self.n
        if need <= capacity:
            return held
        return held + 8.0 * (self.m + self.d) * max(2.0 * capacity, need)

    def _refuse(self, what: str, need: float, advice: str) -> None:
        raise MemoryError(
            f"MondrianFeatures: {what} needs about {format_bytes(need)}, but only "
            f"{format_bytes(self.available)} are available; {advice}")

    def check_fixed(self) -> None:
        """Refuse if the permutations and generators alone do not fit (before
        the M generators are spawned, which alone takes minutes for 10⁹)."""
        if self.available is not None and self.fixed() > self.available:
            self._refuse(f"growing n_trees={self.m} trees on {self.n} points (the point "
                         "permutations and random streams alone, before any node)",
                         self.fixed(), "use fewer trees (n_trees) or fewer rows")

    def _advice(self, lifetime: float) -> str:
        return (f"use fewer trees (n_trees={self.m}), a smaller lifetime "
                f"({lifetime:.6g}) or fewer rows ({self.n})")

    def check_fit(self, X: np.ndarray, lifetime: float, streams) -> None:
        """Refuse a fit whose expected size exceeds the available memory.

        The bound 2·min(N, ∏(1 + λ·extent)) - 1 nodes per tree decides when
        it fits.  Otherwise (the bound is loose for sparse data in many
        dimensions) :data:`PILOT_TREES` trees are grown on copies of the
        first trees' streams -- exactly those trees, the others are iid --
        and M times their mean node count is the estimate; where their
        worst case does not fit, on a random subset of the points, scaled
        (:meth:`_pilot_nodes`).
        """
        if self.available is None:
            return
        leaves = expected_leaves_bound(self.n, self.extent, lifetime)
        bound = self.m * (2.0 * leaves - 1.0)
        if self.peak(bound) <= self.available:
            return
        k = min(self.m, PILOT_TREES)
        what = (f"growing n_trees={self.m} trees on {self.n} points to lifetime "
                f"{lifetime:.6g}")
        # The rows of a pilot that does not fit on all of them: drawn by a
        # generator of its own (the fit's streams stay as they are).
        per_tree = self._pilot_nodes(X, lifetime, copy_streams(streams[:k]), self.available,
                                     np.random.default_rng(0), 1)
        if per_tree is None:
            self._refuse(what, self.peak(bound), self._advice(lifetime))
        estimate = self.m * min(per_tree, 2.0 * leaves - 1.0)
        if self.peak(estimate) > self.available:
            self._refuse(f"{what} (about {estimate:.3g} nodes, estimated from "
                         f"{k} pilot trees)", self.peak(estimate), self._advice(lifetime))

    def _pilot_nodes(self, X: np.ndarray, lifetime: float, streams: list, room: float,
                     pick: np.random.Generator, n_threads: int) -> float | None:
        """Nodes a tree of the forest on X is expected to have at
        ``lifetime``, from pilot trees (one per stream) whose growth fits in
        ``room`` bytes: on every point if their worst case (2N - 1 nodes a
        tree) fits, else on as many points as it allows, drawn by ``pick``
        (at least :data:`PILOT_MIN_ROWS`), their count scaled by N over
        those points -- an upper bound in expectation, as a tree's leaves
        are the cells of the Mondrian partition that hold points, whose
        expected number is concave in the number of points.  None when not
        even that fits."""
        k = len(streams)
        rows = self.n
        if self._pilot_peak(k) > room:
            rows = int((room - self.fixed() * k / self.m) / (4.0 * k * node_bytes(self.d)))
            if rows < PILOT_MIN_ROWS:
                return None
            X = X[np.sort(pick.choice(self.n, rows, replace=False))]
        return self._pilot(X, lifetime, streams, n_threads).n_nodes / k * (self.n / rows)

    def _pilot_peak(self, k: int) -> float:
        """Peak bytes of k pilot trees: their share of :meth:`fixed` and at
        most 2N - 1 nodes each, twice (grown, then packed)."""
        return self.fixed() * k / self.m + 2.0 * k * (2.0 * self.n - 1.0) * node_bytes(self.d)

    def _pilot(self, X: np.ndarray, lifetime: float, streams: list, n_threads: int) -> Forest:
        """The pilot trees, one per stream, grown on X to ``lifetime``
        (rotated if the budget's forest is)."""
        pilot = Forest(len(streams), self.d)
        pilot.fit(X, lifetime, streams, n_threads, rotation="uniform" if self.rotated else None,
                  scale=self.scale)
        return pilot

    def largest_lifetime(self, X: np.ndarray, lifetime: float, random_state,
                         bytes_per_node: float, n_final: int | None = None,
                         share: float = MEMORY_SHARE) -> tuple[float, bool]:
        """The largest λ ≤ ``lifetime`` whose forest fits in memory.

        The forest is the one that ``MondrianFeatures(n_trees=M,
        random_state=random_state).fit(X)`` grows (X: the budget's N points), once its
        trees hold ``n_final`` >= N points (points inserted later add nodes
        in proportion); it must need at most ``share`` of the available
        memory, at ``bytes_per_node`` bytes a node (the caller's whole peak
        per node: the forest's storage and whatever it keeps per node) plus
        the growth's overhead (:meth:`fixed`, the trees in flight of
        :meth:`peak`).  If the bound 2·min(N, ∏(1 + λ·extent)) - 1 nodes a
        tree fits, that is ``lifetime``.  Otherwise :data:`PILOT_TREES`
        trees are grown to ``lifetime`` on copies of the first trees'
        streams (drawn from a copy of ``random_state``, which is not
        advanced; distributed as the forest's trees,
        though not the same: a tree grown to a smaller lifetime draws its
        cuts in another order), their nodes at every λ counted from their
        split times (a tree pruned at λ has 1 + 2·#{splits at times ≤ λ}
        nodes), and the answer is the largest ``lifetime``·2^(-j/16) below
        the split time at which M times their mean count reaches the room
        (on a grid, so that the small changes of the available memory from
        one run to the next leave it where it is).

        Returns
        -------
        lifetime : float
        capped : bool
            True when the memory lowered the lifetime.  (``lifetime`` is
            returned unchanged, uncapped, where even the pilot does not fit
            or one split would not: the fit's own check then refuses it.)
        """
        if self.available is None or not lifetime > 0.0 or self.m == 0:
            return lifetime, False
        n_final = self.n if n_final is None else max(int(n_final), self.n)
        # Nodes that fit: the growth's own overhead (fixed, and on each
        # thread a tree in flight and an arena chunk, as in peak) first.
        busy = min(self.n_threads, self.m)
        room = ((share * self.available - self.fixed() - busy * float(4 << 20))
                / (float(bytes_per_node) + busy * 2.0 * node_bytes(self.d) / self.m))
        leaves = expected_leaves_bound(n_final, self.extent, lifetime)
        if self.m * (2.0 * leaves - 1.0) <= room:
            return lifetime, False
        k = min(self.m, PILOT_TREES)
        if self._pilot_peak(k) > share * self.available:
            return lifetime, False
        rng = check_random_generator(copy.deepcopy(random_state))
        tau = np.asarray(self._pilot(X, lifetime, rng.bit_generator.spawn(k),
                                     min(k, self.n_threads)).tau)
        times = np.sort(tau[np.isfinite(tau)])
        # M/k pilot-sized groups, each node count scaled by n_final/N.
        scale = self.m / k * n_final / self.n
        splits = int(np.floor((room / scale - k) / 2.0))
        if splits >= times.size or splits < 1:
            return lifetime, False
        # Down to the grid lifetime·2^(-j/GRID_STEPS): the available memory
        # moves from run to run, the grid value only when it crosses a step.
        fits = float(times[splits - 1])
        j = math.ceil(GRID_STEPS * math.log2(lifetime / fits))
        while lifetime * 2.0 ** (-j / GRID_STEPS) > fits:
            j += 1
        return lifetime * 2.0 ** (-j / GRID_STEPS), True

    def most_trees(self, X: np.ndarray, lifetime: float, random_state,
                   bytes_per_tree: float = 0.0, bytes_per_node: float = 0.0,
                   share: float = MEMORY_SHARE) -> int:
        """The most trees, at most the budget's M, whose forest grown on X
        (the budget's N points) to ``lifetime`` fits in ``share`` of the
        available memory, together with the caller's own ``bytes_per_tree``
        and ``bytes_per_node`` (what it keeps per tree and per node of the
        forest, e.g. a learner's tables): the growth's overhead
        (:meth:`fixed`, the trees in flight of :meth:`peak`) and the nodes.

        The nodes a tree are bounded by 2·min(N, ∏(1 + λ·extent)) - 1; if M
        trees fit by that bound, M is the answer.  Otherwise (the bound is
        loose for sparse data in many dimensions) :data:`PILOT_TREES` trees
        are grown to ``lifetime`` on streams drawn from a copy of
        ``random_state`` (not advanced) and their mean node count is a
        tree's; if their worst case, 2N - 1 nodes a tree, does not fit, they
        are grown on as many random points as it allows (at least
        :data:`PILOT_MIN_ROWS`, else the bound's count stands) and their
        nodes scaled by N over those points (an upper bound in expectation:
        the cells holding points grow at most in proportion to them), at
        most the bound.  Returns M when nothing is
        known of the memory, and 0 when not even one tree fits (the caller's
        fit then refuses with its own message).
        """
        if self.available is None or self.m == 0:
            return self.m
        shared, tree_fixed = self._fixed_parts()
        nb = node_bytes(self.d)
        busy = min(self.n_threads, self.m)
        room = share * self.available - shared - busy * float(4 << 20)

        def count(nodes: float) -> int:
            # each busy thread also holds a tree in flight, room for twice a
            # tree's nodes (peak)
            tree = (tree_fixed + float(bytes_per_tree) + nodes * (nb + float(bytes_per_node)))
            fits = (room - busy * 2.0 * nodes * nb) / tree
            return int(max(0.0, min(float(self.m), math.floor(fits))))

        bound = 2.0 * expected_leaves_bound(self.n, self.extent, lifetime) - 1.0
        by_bound = count(bound)
        if by_bound >= self.m:
            return self.m
        k = min(self.m, PILOT_TREES)
        rng = check_random_generator(copy.deepcopy(random_state))
        streams = rng.bit_generator.spawn(k)
        nodes = self._pilot_nodes(X, lifetime, streams, share * self.available, rng,
                                  min(k, self.n_threads))
        if nodes is None:
            return by_bound     # no room for a pilot: the bound's count
        return count(min(bound, nodes))

    def check_extend(self, forest: Forest, lifetime: float, *, copy: bool) -> None:
        """Refuse an extension whose expected size exceeds the available memory.

        The forest's nodes at lifetime Λ grow to about n_nodes·r at λ, with
        r = ∏(1 + λ·extent)/∏(1 + Λ·extent) the ratio of the expected cell
        counts, capped by the bound at λ; the old nodes stay allocated
        during the growth (twice if the forest is shared and copied).
        """
        if self.available is None:
            return
        extent = self.extent
        log_ratio = float(np.sum(np.log1p(lifetime * extent) - np.log1p(forest.lifetime * extent)))
        bound = self.m * (2.0 * expected_leaves_bound(self.n, extent, lifetime) - 1.0)
        estimate = min(bound, forest.n_nodes * np.exp(min(log_ratio, 700.0)))
        kept = forest.n_nodes * (2 if copy else 1)
        if self.peak(estimate, kept) > self.available:
            self._refuse(f"extending n_trees={self.m} trees on {self.n} points from lifetime "
                         f"{forest.lifetime:.6g} to {lifetime:.6g} (about {estimate:.3g} nodes)",
                         self.peak(estimate, kept), self._advice(lifetime))


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
         shape: tuple[int, int], *, sorted_rows: bool = True) -> sp.csr_array:
    """A csr_array over the C core's buffers (no copies); ``sorted_rows``:
    the indices are sorted within rows."""
    out = sp.csr_array((data, indices, indptr), shape=shape, copy=False)
    out.has_sorted_indices = sorted_rows
    return out


def _dense_real(a, name: str) -> np.ndarray:
    """``a`` as a dense in-memory numpy array of real numbers (bool, int or
    float), else a ``TypeError`` naming it."""
    if sp.issparse(a) or is_dask_collection(a):
        raise TypeError(f"{name} must be a dense in-memory array")
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    return a


def _column_rank(forest: Forest, lifetime: float) -> np.ndarray | None:
    """Stable column of each of the forest's natural columns at ``lifetime``.

    The C core numbers the active nodes in global-id order, which an
    insertion changes (it renumbers the trees).  The stable numbering is
    by column key (``c/forest.h``, ``c/insert.h``): the rank of each active
    node's key among the active nodes' keys.  None for a forest grown in
    batch, whose two numberings agree.
    """
    if not forest.has_column_keys:
        return None
    col_of_node, _ = forest.active_columns(lifetime)
    keys = forest.column_keys[col_of_node >= 0]
    rank = np.empty(keys.size, dtype=np.int64)
    rank[np.argsort(keys, kind="stable")] = np.arange(keys.size)
    return rank


def _check_max_nodes(max_nodes) -> int | None:
    """``max_nodes``: None or an integer >= 1.  A cap of 2**62 nodes or more
    can never bind (no tree can be stored that large), so it means no cap."""
    if max_nodes is None:
        return None
    max_nodes = check_int(max_nodes, "max_nodes")
    return None if max_nodes >= 2**62 else max_nodes


def _check_joint_range(forest: Forest, X: np.ndarray) -> None:
    """Reject new points whose range together with the forest's overflows
    double precision (as ``check_array_input`` does for one data set)."""
    roots = forest.roots
    if forest.scale is not None and forest.rotation is None:
        with np.errstate(over="ignore"):
            X = X / forest.scale   # the trees' coordinates, as their boxes
    lo = np.minimum(forest.lower[roots].min(axis=0), X.min(axis=0))
    hi = np.maximum(forest.upper[roots].max(axis=0), X.max(axis=0))
    del roots
    with np.errstate(over="ignore"):
        total = np.sum(hi - lo)
    if not np.isfinite(total):
        raise ValueError("X: the feature ranges of X and the fitted points together "
                         "overflow double precision; rescale X")
