# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Mondrian forest: one C struct (``c/forest.h``) behind one extension type.

:class:`Forest` owns the C forest -- the M trees in one global node
numbering, its own copy of the points they were grown on, the per-tree point
permutations -- and the M streams the trees draw from: numpy bit generators,
or numpy's PCG64 held in C (``c/pcg64.h``) when they are given as seed
words (:func:`mondrian._streams.spawn_streams`).  It grows
the trees (``c/grow.h``, GIL released, one stream per tree so results do not
depend on the thread count), inserts new points into them (``c/insert.h``,
online learning), computes the feature matrix and Gram matrix
(``c/features.h``) and what the kernel-width path reads (``c/events.h``),
pickles, and validates pickled state in C (``mt_forest_check``).  Other
Cython modules ``cimport`` it (``_forest.pxd``) and read the C arrays
directly; Python reads them through read-only numpy views.

Views and growth.  A view is created on every property access, without a
copy: its memory is the C array's and its ``base`` is the Forest, which it
keeps alive.  Growing in place (:meth:`Forest.extend`, :meth:`Forest.fit`,
``reserve_*``) may move the arrays, so -- as ``bytearray`` refuses to resize
while buffers are exported -- it raises ``BufferError`` while any object
that reads the arrays lives: the views (tracked by weak references; a slice
of a view keeps the view alive, so it counts too), the split events and the
path learners (registered with :meth:`Forest.pin`).  Callers that must grow
a shared forest grow a :meth:`Forest.copy` instead
(``MondrianFeatures.extend`` does), so every existing view, event list and
learner keeps reading the trees it was made from.

Argument validation of user input happens in the Python layer
(:mod:`mondrian.features`); the checks here guard memory safety.
"""
import copy as _copy
import weakref

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
from libc.math cimport isinf, sqrt
from libc.stdint cimport int32_t, uint8_t, uint64_t

import numpy as np
cimport numpy as cnp

from ._status cimport check_status, check_threads
from ._c cimport (
    bitgen_t, mt_index, mt_forest, MT_OK, mt_forest_init, mt_forest_free,
    mt_pcg64, mt_pcg64_seed, mt_pcg64_bitgen,
    mt_forest_reserve_nodes, mt_forest_reserve_points, mt_forest_append_points,
    mt_forest_clear, mt_forest_copy, mt_forest_check, mt_forest_fit, mt_forest_extend,
    mt_forest_insert, mt_forest_drop_points,
    mt_forest_draw_rotations, mt_forest_drop_transform, mt_forest_set_scale,
    mt_forest_transform,
    mt_forest_active_columns, mt_forest_features, mt_forest_features_dot,
    mt_forest_features_fitted,
    mt_forest_gram, mt_forest_gram_points, mt_forest_n_events, mt_forest_events, mt_forest_node_sums,
    mt_forest_train_slices, mt_threads_release,
)

cnp.import_array()

__all__ = ["Forest"]

_STATE_VERSION = 2
_INDEX_ARRAYS = ("tree_of", "parent", "left", "right", "feature", "start", "end")
_DOUBLE_ARRAYS = ("threshold", "tau")


cdef class Forest:
    """M Mondrian trees grown on data, stored in C in one node numbering.

    Parameters
    ----------
    n_trees : int
        Number of trees M.
    n_features : int
        Input dimension D.

    Node j of the forest belongs to tree ``tree_of[j]``; tree m's nodes are
    ``node_offset[m] <= j < node_offset[m + 1]``, its root first.  The node
    arrays (``parent``, ``left``, ``right``: global ids, -1 for none;
    ``feature``, ``threshold``, ``tau`` (split time, inf for a leaf),
    ``lower``/``upper`` (data boxes), ``start``/``end`` (the node's points
    are ``perm[m, start:end]``)), the points ``X`` and the permutations
    ``perm`` (M x n_points) are read-only views of the C memory (see the
    module docstring for their lifetime rules).
    """

    def __cinit__(self, Py_ssize_t n_trees, Py_ssize_t n_features):
        if n_trees < 1 or n_features < 1:
            raise ValueError(f"a forest needs n_trees >= 1 and n_features >= 1, got "
                             f"{n_trees} and {n_features}")
        self._pins = []
        self._prune_at = 64
        self._bit_generators = ()
        self._pcg = NULL
        self._pcg_gens = NULL
        self._events = None
        check_status(mt_forest_init(&self.f, <size_t>n_trees, <size_t>n_features),
                     f"Forest({n_trees} trees, {n_features} features)")

    def __dealloc__(self):
        mt_forest_free(&self.f)
        self._free_pcg()

    cdef void _free_pcg(self) noexcept:
        free(self._pcg)
        free(self._pcg_gens)
        self._pcg = NULL
        self._pcg_gens = NULL

    cdef int _set_pcg(self, const cnp.uint64_t[:, ::1] rows, bint seed) except -1:
        """Hold the trees' streams in C: PCG64 seeded from ``rows`` (M x 4
        seed words) if ``seed``, else restored from them (M x 6 states,
        validated by the caller)."""
        cdef size_t m, M = self.f.n_trees
        cdef mt_pcg64 *pcg = <mt_pcg64 *>malloc(M * sizeof(mt_pcg64))
        cdef bitgen_t *gens = <bitgen_t *>malloc(M * sizeof(bitgen_t))
        if pcg == NULL or gens == NULL:
            free(pcg)
            free(gens)
            raise MemoryError(f"Forest: the PCG64 states of {M} trees")
        for m in range(M):
            if seed:
                mt_pcg64_seed(&pcg[m], <const uint64_t *>&rows[m, 0])
            else:
                pcg[m].state_hi, pcg[m].state_lo = rows[m, 0], rows[m, 1]
                pcg[m].inc_hi, pcg[m].inc_lo = rows[m, 2], rows[m, 3]
                pcg[m].has_uint32, pcg[m].uinteger = rows[m, 4], rows[m, 5]
            mt_pcg64_bitgen(&pcg[m], &gens[m])
        self._free_pcg()
        self._pcg, self._pcg_gens = pcg, gens
        self._bit_generators = ()
        return 0

    cdef int _set_streams(self, streams) except -1:
        """The trees' streams from a validated :func:`_check_streams` value."""
        if isinstance(streams, np.ndarray):
            self._set_pcg(streams, True)
        else:
            self._free_pcg()
            self._bit_generators = streams
        return 0

    def _pcg_states(self):
        """The C-held PCG64 states (M x 6: state hi, lo, inc hi, lo,
        has_uint32, uinteger), or None for numpy bit generators."""
        if self._pcg == NULL:
            return None
        cdef size_t m, M = self.f.n_trees
        out = np.empty((M, 6), dtype=np.uint64)
        cdef cnp.uint64_t[:, ::1] o = out
        # Not while a growth draws from them (another thread's).
        self._begin_read()
        try:
            for m in range(M):
                o[m, 0], o[m, 1] = self._pcg[m].state_hi, self._pcg[m].state_lo
                o[m, 2], o[m, 3] = self._pcg[m].inc_hi, self._pcg[m].inc_lo
                o[m, 4], o[m, 5] = self._pcg[m].has_uint32, self._pcg[m].uinteger
        finally:
            self._end_read()
        return out

    # -- sizes -------------------------------------------------------------
    @property
    def n_trees(self):
        return self.f.n_trees

    @property
    def n_features(self):
        return self.f.n_features

    @property
    def n_nodes(self):
        return self.f.n_nodes

    @property
    def n_leaves(self):
        """Number of leaves (cells at the forest's lifetime)."""
        return (self.f.n_nodes + self.f.n_trees) // 2 if self.f.n_nodes else 0

    @property
    def n_points(self):
        return self.f.n_points

    @property
    def node_capacity(self):
        return self.f.node_capacity

    @property
    def point_capacity(self):
        return self.f.point_capacity

    @property
    def lifetime(self):
        """The time up to which the trees are grown."""
        return self.f.lifetime

    @property
    def bit_generators(self):
        """The trees' numpy bit generators (tree m draws from the m-th): the
        forest's own, or, for streams held in C, new ``numpy.random.PCG64``
        objects at their current states (copies: drawing from them leaves
        the trees' streams as they are)."""
        states = self._pcg_states()
        if states is None:
            return self._bit_generators
        return tuple(_pcg64_object(row) for row in states)

    def __sizeof__(self):
        """Bytes of the object and of its C arrays (nodes at capacity, points,
        permutations, keys), so that ``sys.getsizeof`` sees the forest."""
        cdef size_t d = self.f.n_features, M = self.f.n_trees
        nodes = self.f.node_capacity * (7 * 8 + 2 * 8 + 2 * 8 * d
                                        + (8 if self.f.key != NULL else 0))
        points = self.f.point_capacity * 8 * (d + M)
        streams = M * (sizeof(mt_pcg64) + sizeof(bitgen_t)) if self._pcg != NULL else 0
        return object.__sizeof__(self) + 8 * (M + 1) + nodes + points + streams

    # -- pins and views ----------------------------------------------------
    cpdef pin(self, object obj):
        """Register ``obj`` as reading this forest's arrays: growth in place
        raises ``BufferError`` while ``obj`` lives (held by weak reference)."""
        if len(self._pins) >= self._prune_at:
            self._pins = [r for r in self._pins if r() is not None]
            self._prune_at = max(64, 2 * len(self._pins))
        self._pins.append(weakref.ref(obj))

    @property
    def shared(self):
        """True while a view, event list or learner of the arrays lives."""
        return any(r() is not None for r in self._pins)

    cdef int _begin_read(self) except -1:
        if self._growing:
            raise RuntimeError("the forest is being grown by another thread")
        self._readers += 1
        return 0

    cdef void _end_read(self) noexcept:
        self._readers -= 1

    cdef int _begin_growth(self) except -1:
        if self._growing or self._readers:
            raise RuntimeError("the forest is in use by another thread")
        live = sum(r() is not None for r in self._pins)
        if live:
            raise BufferError(
                f"cannot grow the forest in place: {live} view(s), event list(s) or "
                f"learner(s) read its arrays; delete them or grow a copy()")
        self._pins = []
        self._growing = True
        self._events = None
        self._columns = None
        return 0

    cdef object _view(self, void *data, int typenum, int nd, cnp.npy_intp *shape,
                      cnp.npy_intp *strides):
        """A read-only ndarray over C memory, base = self, pinned."""
        cdef cnp.npy_intp size = 1
        cdef int k
        for k in range(nd):
            size *= shape[k]
        if size == 0 or data == NULL:
            out = np.empty(tuple(shape[k] for k in range(nd)),
                           dtype=np.int64 if typenum == cnp.NPY_INT64 else np.float64)
            out.flags.writeable = False
            return out
        arr = cnp.PyArray_New(np.ndarray, nd, shape, typenum, strides, data, 0, 0, None)
        cnp.set_array_base(arr, self)
        cnp.PyArray_CLEARFLAGS(arr, cnp.NPY_ARRAY_WRITEABLE)
        self.pin(arr)
        return arr

    cdef object _index_view(self, mt_index *data, size_t n):
        cdef cnp.npy_intp shape[1]
        cdef cnp.npy_intp strides[1]
        shape[0] = <cnp.npy_intp>n
        strides[0] = sizeof(mt_index)
        return self._view(data, cnp.NPY_INT64, 1, shape, strides)

    cdef object _double_view(self, double *data, size_t n, size_t d):
        cdef cnp.npy_intp shape[2]
        cdef cnp.npy_intp strides[2]
        shape[0] = <cnp.npy_intp>n
        shape[1] = <cnp.npy_intp>d
        strides[0] = <cnp.npy_intp>(d * sizeof(double))
        strides[1] = sizeof(double)
        if d == 0:
            strides[0] = sizeof(double)
            return self._view(data, cnp.NPY_FLOAT64, 1, shape, strides)
        return self._view(data, cnp.NPY_FLOAT64, 2, shape, strides)

    @property
    def node_offset(self):
        """Tree m's nodes are ``node_offset[m] <= j < node_offset[m + 1]``."""
        return self._index_view(self.f.node_offset, self.f.n_trees + 1)

    @property
    def roots(self):
        """Global id of every tree's root (``node_offset[:-1]``)."""
        return self._index_view(self.f.node_offset, self.f.n_trees)

    @property
    def tree_of(self):
        """Tree of each node."""
        return self._index_view(self.f.tree_of, self.f.n_nodes)

    @property
    def parent(self):
        """Parent of each node (global id); -1 for a root."""
        return self._index_view(self.f.parent, self.f.n_nodes)

    @property
    def left(self):
        """Child with ``x[feature] <= threshold`` (global id); -1 for a leaf."""
        return self._index_view(self.f.left, self.f.n_nodes)

    @property
    def right(self):
        """Child with ``x[feature] > threshold`` (global id); -1 for a leaf."""
        return self._index_view(self.f.right, self.f.n_nodes)

    @property
    def feature(self):
        """Split dimension of each node; -1 for a leaf."""
        return self._index_view(self.f.feature, self.f.n_nodes)

    @property
    def start(self):
        """First position of each node's points in its tree's row of :attr:`perm`."""
        return self._index_view(self.f.start, self.f.n_nodes)

    @property
    def end(self):
        """One past the last position of each node's points."""
        return self._index_view(self.f.end, self.f.n_nodes)

    @property
    def threshold(self):
        """Cut location of each split (0 for a leaf)."""
        return self._double_view(self.f.threshold, self.f.n_nodes, 0)

    @property
    def tau(self):
        """Split time of each node; ``inf`` for a leaf."""
        return self._double_view(self.f.tau, self.f.n_nodes, 0)

    @property
    def lower(self):
        """Lower corner of each node's data box, shape (n_nodes, D)."""
        return self._double_view(self.f.lower, self.f.n_nodes, self.f.n_features)

    @property
    def upper(self):
        """Upper corner of each node's data box, shape (n_nodes, D)."""
        return self._double_view(self.f.upper, self.f.n_nodes, self.f.n_features)

    @property
    def stores_points(self):
        """False once :meth:`drop_points` freed the points and permutations."""
        return self.f.X != NULL or self.f.n_nodes == 0

    cdef int _require_points(self, str what) except -1:
        if self.f.n_nodes > 0 and self.f.X == NULL:
            raise ValueError(f"{what}: this forest keeps no training points "
                             f"(store_points=False)")
        return 0

    @property
    def X(self):
        """The forest's own copy of the points, shape (n_points, D)."""
        self._require_points("Forest.X")
        return self._double_view(self.f.X, self.f.n_points, self.f.n_features)

    @property
    def perm(self):
        """Point permutations, shape (M, n_points): node j of tree m holds
        the points ``perm[m, start[j]:end[j]]``."""
        self._require_points("Forest.perm")
        cdef cnp.npy_intp shape[2]
        cdef cnp.npy_intp strides[2]
        shape[0] = <cnp.npy_intp>self.f.n_trees
        shape[1] = <cnp.npy_intp>self.f.n_points
        strides[0] = <cnp.npy_intp>(self.f.point_capacity * sizeof(mt_index))
        strides[1] = sizeof(mt_index)
        return self._view(self.f.perm, cnp.NPY_INT64, 2, shape, strides)

    @property
    def has_column_keys(self):
        """True once points were inserted (:meth:`insert`): the nodes have
        stored :attr:`column_keys`."""
        return self.f.key != NULL

    @property
    def column_keys(self):
        """Column key of each node (``c/forest.h``): the columns of the
        feature matrix at any lifetime, numbered by key, keep their index
        when points are inserted (:meth:`insert`).  A view of the stored
        keys after an insertion; before it (a batch forest) the global ids,
        as a new array."""
        if self.f.key == NULL:
            out = np.arange(self.f.n_nodes, dtype=np.int64)
            out.flags.writeable = False
            return out
        return self._index_view(self.f.key, self.f.n_nodes)

    @property
    def scale(self):
        """The per-feature scale l, shape (D,), or None: the trees work on the
        coordinates x / l (before any rotation), so that the forest's kernel
        is exp(-λ Σ_b ∣x_b - x'_b∣ / l_b)."""
        if self.f.scale == NULL:
            return None
        return self._double_view(self.f.scale, self.f.n_features, 0)

    @property
    def rotation(self):
        """The trees' linear maps P_m, shape (M, D, D), or None for axis-aligned
        trees: tree m works on the coordinates ``(x - center) @ rotation[m]``
        (its split dimensions, thresholds and boxes are in them).  P_m is
        the tree's Haar rotation Q_m, with row b divided by ``scale[b]``
        when the forest has a scale."""
        cdef cnp.npy_intp shape[3]
        cdef cnp.npy_intp strides[3]
        cdef size_t d = self.f.n_features
        if self.f.rotation == NULL:
            return None
        shape[0] = <cnp.npy_intp>self.f.n_trees
        shape[1] = <cnp.npy_intp>d
        shape[2] = <cnp.npy_intp>d
        strides[0] = <cnp.npy_intp>(d * d * sizeof(double))
        strides[1] = <cnp.npy_intp>(d * sizeof(double))
        strides[2] = sizeof(double)
        return self._view(self.f.rotation, cnp.NPY_FLOAT64, 3, shape, strides)

    @property
    def center(self):
        """The centre c of the rotations, shape (D,), or None."""
        if self.f.center == NULL:
            return None
        return self._double_view(self.f.center, self.f.n_features, 0)

    def transform(self, X, Py_ssize_t m):
        """Points ``X`` (C-contiguous float64, shape (n, D)) in tree ``m``'s
        coordinates: ``(X - center) @ rotation[m]`` computed by the C core
        (``mt_forest_transform``, bitwise what the trees use), ``X / scale``
        for axis-aligned trees with a scale, or a copy of ``X``."""
        cdef const double[:, ::1] Xv = X
        cdef size_t d = self.f.n_features
        if not 0 <= m < <Py_ssize_t>self.f.n_trees:
            raise IndexError(f"tree index {m} out of range for {self.f.n_trees} trees")
        if <size_t>Xv.shape[1] != d:
            raise ValueError(f"X has {Xv.shape[1]} features, the forest has {d}")
        out = np.empty((Xv.shape[0], d), dtype=np.float64)
        cdef double[:, ::1] ov = out
        if Xv.shape[0] > 0:
            self._begin_read()
            try:
                with nogil:
                    mt_forest_transform(&self.f, <size_t>m, &Xv[0, 0], <size_t>Xv.shape[0],
                                        &ov[0, 0])
            finally:
                self._end_read()
        return out

    def tree(self, Py_ssize_t m):
        """Tree ``m`` as a :class:`TreeView` (node ids local to the tree)."""
        if not 0 <= m < <Py_ssize_t>self.f.n_trees:
            raise IndexError(f"tree index {m} out of range for {self.f.n_trees} trees")
        return TreeView(self, m)

    # -- growth ------------------------------------------------------------
    def fit(self, X, double lifetime, bit_generators, n_threads=1, rotation=None,
            Py_ssize_t spare_nodes=0, scale=None, Py_ssize_t spare_points=0):
        """Copy ``X`` (C-contiguous float64, shape (n, D)) into the forest
        and grow every tree on it up to ``lifetime``, tree m drawing from
        ``bit_generators[m]``: numpy BitGenerators (kept by the forest), or
        a uint64 array of shape (M, 4) whose row m is the seed words of
        tree m's PCG64 (``SeedSequence.generate_state(4, np.uint64)``,
        :func:`mondrian._streams.spawn_streams`): the forest then holds
        numpy's PCG64 streams in C (``c/pcg64.h``), the same draws without
        a Python object per tree.

        ``spare_nodes``: room for that many more nodes in the node arrays,
        for an insertion to come (of n points into M trees: at most 2nM
        nodes), which then grows the trees where they are instead of moving
        every array to a larger block; the room costs no memory until it is
        written (``c/grow.h``), and is dropped if it cannot be allocated.
        ``spare_points``: room for that many more points in X and in the
        trees' rows of point indices, so that the insertion does not move
        them to blocks of twice the size (on 10⁶ points and 100 trees, 1.6
        GB more at the insertion's peak); untouched until written.

        ``rotation='uniform'`` first gives tree m a Haar-random rotation
        Q_m of SO(D) drawn from its own generator, about the centre c =
        the mean of ``X`` (``c/grow.h``); the tree then grows on, and
        later looks points up in, its coordinates (X - c) @ Q_m.  ``None``
        (the default) grows axis-aligned trees.

        ``scale`` (D finite positive values, or None): the trees see every
        point (of this fit and of every later insertion and lookup) as
        x / scale, before any rotation (``c/forest.h``).  Returns self."""
        cdef const double[:, ::1] Xv = X
        if Xv.shape[0] < 1 or <size_t>Xv.shape[1] != self.f.n_features:
            raise ValueError(f"X must have shape (n >= 1, {self.f.n_features}), got "
                             f"{tuple(X.shape)}")
        if not (lifetime >= 0.0) or isinf(lifetime):
            raise ValueError(f"lifetime must be finite and >= 0, got {lifetime}")
        if rotation is not None and not (isinstance(rotation, str) and rotation == "uniform"):
            raise ValueError(f"rotation must be None or 'uniform', got {rotation!r}")
        if spare_nodes < 0:
            raise ValueError(f"spare_nodes must be >= 0, got {spare_nodes}")
        if spare_points < 0:
            raise ValueError(f"spare_points must be >= 0, got {spare_points}")
        gens = _check_streams(bit_generators, self.f.n_trees)
        cdef const double[::1] sv
        cdef const double *sp = NULL
        if scale is not None:
            # checked here, before the forest is cleared (mt_forest_set_scale
            # checks again for its C callers)
            scale = np.ascontiguousarray(scale, dtype=np.float64)
            if scale.shape != (self.f.n_features,):
                raise ValueError(f"scale must have shape ({self.f.n_features},), got "
                                 f"{scale.shape}")
            if not np.all(np.isfinite(scale) & (scale > 0)):
                raise ValueError("scale must be finite and > 0")
            sv = scale
            sp = &sv[0]
        center = None
        if rotation is not None:
            center = np.ascontiguousarray(np.mean(X, axis=0), dtype=np.float64)
            if not np.all(np.isfinite(center)):
                raise ValueError("X: the mean of the points (the rotations' centre) is "
                                 "not finite")
        cdef int status
        cdef int nt = check_threads(n_threads)
        self._begin_growth()
        try:
            mt_forest_clear(&self.f)
            mt_forest_drop_transform(&self.f)
            check_status(mt_forest_set_scale(&self.f, sp), "Forest.fit: the scale")
            if spare_points > 0:
                check_status(mt_forest_reserve_points(&self.f, <size_t>Xv.shape[0]
                                                      + <size_t>spare_points),
                             f"Forest.fit: room for {Xv.shape[0]} + {spare_points} points")
            check_status(mt_forest_append_points(&self.f, &Xv[0, 0], <size_t>Xv.shape[0]),
                         f"Forest.fit: copying {Xv.shape[0]} x {Xv.shape[1]} points")
            self._set_streams(gens)
            self._grow(lifetime, nt, False, center, <size_t>spare_nodes)
        finally:
            self._growing = False
        return self

    def extend(self, double lifetime, n_threads=1):
        """Continue every tree up to ``lifetime`` (>= :attr:`lifetime`), each
        from its own stream (memorylessness, ``c/grow.h``).  Node ids within
        a tree are kept, so a global id moves by its tree's change of
        ``node_offset``.  Raises ``BufferError`` if the forest is shared."""
        if self.f.n_nodes == 0:
            raise ValueError("the forest has no trees to extend; fit it first")
        self._require_points("Forest.extend")
        if not (lifetime >= self.f.lifetime) or isinf(lifetime):
            raise ValueError(f"lifetime must be finite and >= {self.f.lifetime}, got "
                             f"{lifetime}")
        cdef int nt = check_threads(n_threads)
        self._begin_growth()
        try:
            self._grow(lifetime, nt, True)
        finally:
            self._growing = False
        return self

    def insert(self, X, n_threads=1, Py_ssize_t max_nodes=0):
        """Insert the points ``X`` (C-contiguous float64, shape (n, D),
        finite) into every tree by the conditional Mondrian and append them
        to the forest's points (``c/insert.h``): the trees are then
        distributed as if grown in batch on all the points.  Tree m draws
        from its own stream, so the result does not depend on ``n_threads``
        nor on how a stream of points is cut into batches.  Every tree is
        renumbered (its nodes stay contiguous, a parent before its
        children) and the nodes get :attr:`column_keys`.  Raises
        ``BufferError`` if the forest is shared.  ``max_nodes`` > 0 caps
        every tree's nodes (``c/insert.h``: at the cap points only enlarge
        boxes and join leaves).  Returns self."""
        cdef const double[:, ::1] Xv = X
        if max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0, got {max_nodes}")
        if self.f.n_nodes == 0:
            raise ValueError("the forest has no trees to insert into; fit it first")
        if <size_t>Xv.shape[1] != self.f.n_features:
            raise ValueError(f"X has {Xv.shape[1]} features, the forest has "
                             f"{self.f.n_features}")
        cdef size_t n = Xv.shape[0]
        if n == 0:
            return self
        cdef int nt = check_threads(n_threads)
        cdef Py_ssize_t M = self.f.n_trees
        cdef int status
        cdef bitgen_t **rngs
        self._begin_growth()
        try:
            locks = []
            rngs = self._lock_streams(locks)
            try:
                with nogil:
                    status = mt_forest_insert(&self.f, &Xv[0, 0], n, <size_t>max_nodes,
                                              rngs, nt)
            finally:
                mt_threads_release()
                _release_streams(rngs, locks)
        finally:
            self._growing = False
        check_status(status, f"Forest.insert: {n} points of {self.f.n_features} features "
                             f"into {M} trees",
                     "X must be finite")
        return self

    def drop_points(self):
        """Free the forest's points and permutations, keeping the nodes
        (boxes, times, counts as slices of a virtual permutation): memory
        O(nodes).  The forest still gives features of any point and takes
        insertions, but no longer the training points' features, the Gram
        matrix, split-event sums nor growth.  Raises ``BufferError`` if
        shared."""
        if self.f.n_nodes == 0:
            raise ValueError("the forest has no trees; fit it first")
        self._begin_growth()
        try:
            mt_forest_drop_points(&self.f)
        finally:
            self._growing = False
        return self

    cdef bitgen_t **_lock_streams(self, list locks) except NULL:
        """The trees' bit generators as C pointers, each one's lock held (and
        appended to ``locks``) until :func:`_release_streams`."""
        cdef Py_ssize_t m, M = self.f.n_trees
        cdef bitgen_t **rngs = <bitgen_t **>malloc(max(M, 1) * sizeof(bitgen_t *))
        if rngs == NULL:
            raise MemoryError(f"Forest: {M} bit-generator pointers")
        if self._pcg_gens != NULL:
            # The forest's own states: no object to share, nothing to lock.
            for m in range(M):
                rngs[m] = &self._pcg_gens[m]
            return rngs
        try:
            for m in range(M):
                rngs[m] = <bitgen_t *>PyCapsule_GetPointer(
                    self._bit_generators[m].capsule, "BitGenerator")
            for m in range(M):
                lock = self._bit_generators[m].lock
                lock.acquire()
                locks.append(lock)
        except BaseException:
            _release_streams(rngs, locks)
            raise
        return rngs

    cdef _grow(self, double lifetime, int n_threads, bint extend, center=None,
               size_t spare_nodes=0):
        cdef Py_ssize_t M = self.f.n_trees
        cdef const double[::1] cv
        cdef const double *cp = NULL
        cdef int status = MT_OK
        if center is not None:
            cv = center
            cp = &cv[0]
        locks = []
        cdef bitgen_t **rngs = self._lock_streams(locks)
        try:
            with nogil:
                if extend:
                    status = mt_forest_extend(&self.f, lifetime, rngs, n_threads)
                else:
                    # The rotations first: tree m's stream draws Q_m, then cuts.
                    if cp != NULL:
                        status = mt_forest_draw_rotations(&self.f, cp, rngs, n_threads)
                    if status == MT_OK:
                        status = mt_forest_fit(&self.f, lifetime, rngs, n_threads,
                                               spare_nodes)
        finally:
            mt_threads_release()
            _release_streams(rngs, locks)
        check_status(status, f"Forest.{'extend' if extend else 'fit'}: growing {M} trees on "
                             f"{self.f.n_points} points of {self.f.n_features} features to "
                             f"lifetime {lifetime:g}",
                     "the forest has no points or the lifetime is invalid")

    def reserve_nodes(self, Py_ssize_t capacity):
        """Make room for ``capacity`` nodes (raises ``BufferError`` if shared)."""
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self._begin_growth()
        try:
            status = mt_forest_reserve_nodes(&self.f, <size_t>capacity)
        finally:
            self._growing = False
        nbytes = capacity * (7 * 8 + 2 * 8 + 2 * 8 * self.f.n_features)
        check_status(status, f"Forest.reserve_nodes: {capacity} nodes ({nbytes} bytes)")

    def reserve_points(self, Py_ssize_t capacity):
        """Make room for ``capacity`` points in X and in every permutation
        row (raises ``BufferError`` if shared)."""
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self._begin_growth()
        try:
            status = mt_forest_reserve_points(&self.f, <size_t>capacity)
        finally:
            self._growing = False
        nbytes = capacity * 8 * (self.f.n_features + self.f.n_trees)
        check_status(status, f"Forest.reserve_points: {capacity} points ({nbytes} bytes "
                             f"for X and the {self.f.n_trees} permutations)")

    def copy(self):
        """An independent deep copy (C arrays and bit generators)."""
        cdef Forest out = Forest.__new__(Forest, self.f.n_trees, self.f.n_features)
        mt_forest_free(&out.f)
        check_status(mt_forest_copy(&out.f, &self.f), "Forest.copy")
        states = self._pcg_states()
        if states is not None:
            out._set_pcg(states, False)
        else:
            out._bit_generators = tuple(copy_bit_generator(g) for g in self._bit_generators)
        return out

    # -- reading -----------------------------------------------------------
    cdef int _check_lifetime(self, double lifetime) except -1:
        if self.f.n_nodes == 0:
            raise ValueError("the forest has no trees; fit it first")
        if not (0.0 <= lifetime <= self.f.lifetime):
            raise ValueError(f"lifetime must be in [0, {self.f.lifetime}], got {lifetime}")
        return 0

    def active_columns(self, double lifetime):
        """Column numbering of the active nodes at ``lifetime`` (``c/lookup.h``).

        Returns
        -------
        col_of_node : ndarray of int64, shape (n_nodes,)
            Column of each node, -1 if not active; columns follow global ids.
        col_offset : ndarray of int64, shape (M + 1,)
            Tree m's cells are the columns ``col_offset[m]:col_offset[m + 1]``.

        Both read-only: the last lifetime's are kept until the trees change,
        so that a transform or prediction of a few rows does not pay the
        O(nodes) numbering each time (a single-row prediction of a
        2000-tree path estimator took 3.9 ms, nearly all of it here).
        """
        self._check_lifetime(lifetime)
        cached = self._columns
        if cached is not None and cached[0] == lifetime:
            return cached[1], cached[2]
        col_of_node = np.empty(max(self.f.n_nodes, <size_t>1), dtype=np.int64)
        col_offset = np.empty(self.f.n_trees + 1, dtype=np.int64)
        cdef mt_index[::1] cn = col_of_node, co = col_offset
        cdef int status
        self._begin_read()
        try:
            with nogil:
                status = mt_forest_active_columns(&self.f, lifetime, &cn[0], &co[0])
        finally:
            self._end_read()
        check_status(status, "Forest.active_columns")
        col_of_node = col_of_node[: self.f.n_nodes]
        col_of_node.flags.writeable = False
        col_offset.flags.writeable = False
        self._columns = (lifetime, col_of_node, col_offset)
        return col_of_node, col_offset

    def active_nodes(self, double lifetime):
        """Global ids of the active nodes at ``lifetime``, increasing (the
        column order of the feature matrix)."""
        return np.flatnonzero(self.active_columns(lifetime)[0] >= 0)

    def features(self, X, double lifetime, n_threads=1):
        """CSR arrays of the Mondrian feature matrix at ``lifetime``.

        ``X=None`` gives the rows of the forest's own points (exact, read off
        the node slices); otherwise every row of ``X`` (C-contiguous float64,
        shape (n, D)) is looked up with the expected-feature value.

        Returns ``(data, indices, indptr, n_columns)``; indices and indptr are
        int32 when they fit, else int64.
        """
        cdef int nt = check_threads(n_threads)
        if X is None:
            self._require_points("the training points' features")
        col_of_node, col_offset = self.active_columns(lifetime)
        cdef const mt_index[::1] co = col_offset, cn = col_of_node
        cdef const double[:, ::1] Xv
        cdef size_t M = self.f.n_trees, n, d = self.f.n_features
        if X is None:
            n = self.f.n_points
        else:
            Xv = X
            n = Xv.shape[0]
            if <size_t>Xv.shape[1] != d:
                raise ValueError(f"X has {Xv.shape[1]} features, the forest has {d}")
        # 32-bit indices (scipy's and liblinear's native ones) whenever every
        # column number and every row pointer fits.
        cdef size_t nnz = n * M
        cdef bint small = col_offset[M] < 2**31 - 1 and nnz < 2**31 - 1
        index_dtype = np.int32 if small else np.int64
        indices = np.empty(max(nnz, <size_t>1), dtype=index_dtype)
        data = np.empty(max(nnz, <size_t>1), dtype=np.float64)
        cdef int32_t[::1] iv32
        cdef mt_index[::1] iv64
        cdef int32_t *p32 = NULL
        cdef mt_index *p64 = NULL
        if small:
            iv32 = indices
            p32 = &iv32[0]
        else:
            iv64 = indices
            p64 = &iv64[0]
        cdef double[::1] dv = data
        cdef double scale = 1.0 / sqrt(<double>M)
        cdef int status = MT_OK
        if n > 0:
            self._begin_read()
            try:
                if X is None:
                    with nogil:
                        status = mt_forest_features_fitted(
                            &self.f, lifetime, &cn[0], &co[0], scale, p32, p64, &dv[0],
                            nt)
                else:
                    with nogil:
                        status = mt_forest_features(
                            &self.f, &Xv[0, 0], n, d, lifetime, &cn[0], &co[0], scale,
                            p32, p64, &dv[0], nt)
            finally:
                mt_threads_release()
                self._end_read()
        check_status(status, "Forest.features")
        indptr = np.arange(0, nnz + 1, M, dtype=index_dtype)
        return data[:nnz], indices[:nnz], indptr, int(col_offset[M])

    def features_dot(self, X, double lifetime, coef, n_threads=1):
        """Φ(X)·coef at ``lifetime`` without forming Φ (memory O(n·k)).

        ``X`` is C-contiguous float64 (n, D); ``coef`` float64 (n_columns,)
        or (n_columns, k), rows in the column numbering of :meth:`features`.
        Each row sums its trees in tree order: the numbers of
        ``csr(*features(X, lifetime)) @ coef``, for any thread count.
        """
        cdef int nt = check_threads(n_threads)
        col_of_node, col_offset = self.active_columns(lifetime)
        cdef const mt_index[::1] cn = col_of_node
        cdef mt_index n_columns = int(col_offset[self.f.n_trees])
        C = np.ascontiguousarray(coef, dtype=np.float64)
        if C.ndim not in (1, 2) or C.shape[0] != n_columns or (C.ndim == 2 and C.shape[1] == 0):
            raise ValueError(f"coef must have shape ({n_columns},) or ({n_columns}, k >= 1), "
                             f"got {C.shape}")
        cdef const double[:, ::1] Cv = C.reshape(n_columns, -1)
        cdef const double[:, ::1] Xv = X
        cdef size_t n = Xv.shape[0], d = self.f.n_features, k = Cv.shape[1]
        if <size_t>Xv.shape[1] != d:
            raise ValueError(f"X has {Xv.shape[1]} features, the forest has {d}")
        out = np.zeros((n, k), dtype=np.float64)
        cdef double[:, ::1] ov = out
        cdef double scale = 1.0 / sqrt(<double>self.f.n_trees)
        cdef int status = MT_OK
        if n > 0:
            self._begin_read()
            try:
                with nogil:
                    status = mt_forest_features_dot(
                        &self.f, &Xv[0, 0], n, d, lifetime, &cn[0], scale, &Cv[0, 0], k,
                        &ov[0, 0], nt)
            finally:
                mt_threads_release()
                self._end_read()
        check_status(status, "Forest.features_dot")
        return out[:, 0] if C.ndim == 1 else out

    def gram(self, double lifetime, n_threads=1):
        """Dense Gram matrix ΦᵀΦ of the forest's points at ``lifetime``.

        Entry (a, b) is the number of points in both cells a and b, divided
        by M; columns are numbered as in :meth:`features`.  Memory: one
        (C, C) float64 array plus N·M int32 labels.
        """
        cdef int nt = check_threads(n_threads)
        self._require_points("the Gram matrix")
        col_of_node, col_offset = self.active_columns(lifetime)
        cdef Py_ssize_t C = int(col_offset[self.f.n_trees])
        gram = np.zeros((C, C), dtype=np.float64)
        cdef const mt_index[::1] co = col_offset, cn = col_of_node
        cdef double[:, ::1] gv = gram
        cdef int status
        self._begin_read()
        try:
            with nogil:
                status = mt_forest_gram(&self.f, lifetime, &cn[0], &co[0],
                                        &gv[0, 0] if C > 0 else NULL, nt)
        finally:
            mt_threads_release()
            self._end_read()
        check_status(status, "Forest.gram")
        return gram

    def gram_points(self, X, double lifetime, y=None, n_threads=1):
        """ΦᵀΦ of the features of the rows of ``X`` at ``lifetime`` (dense,
        columns as in :meth:`features`), and with ``y`` (n, k) also Φᵀy
        (C, k) and Φᵀ1 (C,), in one walk of every tree per row.

        The features are those of :meth:`features` for ``X`` (with the
        expected-feature value outside the boxes); the forest's points are
        not needed.  Returns ``gram`` or ``(gram, Pty, Pt1)``.
        """
        cdef int nt = check_threads(n_threads)
        cdef const double[:, ::1] Xv = X
        cdef size_t n = Xv.shape[0], d = self.f.n_features, k = 0
        if <size_t>Xv.shape[1] != d:
            raise ValueError(f"X has {Xv.shape[1]} features, the forest has {d}")
        cdef const double[:, ::1] yv
        if y is not None:
            yv = y
            if <size_t>yv.shape[0] != n:
                raise ValueError(f"y has {yv.shape[0]} rows and X {n}")
            k = yv.shape[1]
            if k == 0:
                raise ValueError("y has no columns")
        col_of_node, col_offset = self.active_columns(lifetime)
        cdef const mt_index[::1] co = col_offset, cn = col_of_node
        cdef Py_ssize_t C = int(col_offset[self.f.n_trees])
        gram = np.zeros((C, C), dtype=np.float64)
        Pty = np.zeros((C, max(k, <size_t>1)), dtype=np.float64)
        Pt1 = np.zeros(C, dtype=np.float64)
        cdef double[:, ::1] gv = gram
        cdef double[:, ::1] pv = Pty
        cdef double[::1] ov = Pt1
        cdef int status = MT_OK
        if n > 0 and C > 0:
            self._begin_read()
            try:
                with nogil:
                    status = mt_forest_gram_points(
                        &self.f, &Xv[0, 0], n, d, lifetime, &cn[0], &co[0],
                        &yv[0, 0] if k > 0 else NULL, k, &gv[0, 0],
                        &pv[0, 0] if k > 0 else NULL, &ov[0] if k > 0 else NULL, nt)
            finally:
                mt_threads_release()
                self._end_read()
        check_status(status, "Forest.gram_points")
        if y is None:
            return gram
        return gram, Pty, Pt1

    cdef tuple _split_events(self):
        if self._events is not None:
            return self._events
        if self.f.n_nodes == 0:
            raise ValueError("the forest has no trees; fit it first")
        cdef size_t E = mt_forest_n_events(&self.f)
        nodes = np.empty(max(E, <size_t>1), dtype=np.int64)
        times = np.empty(max(E, <size_t>1), dtype=np.float64)
        left = np.empty(max(E, <size_t>1), dtype=np.int64)
        right = np.empty(max(E, <size_t>1), dtype=np.int64)
        tree = np.empty(max(E, <size_t>1), dtype=np.int64)
        cdef mt_index[::1] nv = nodes, lv = left, rv = right, tv = tree
        cdef double[::1] timev = times
        cdef int status
        self._begin_read()
        try:
            with nogil:
                status = mt_forest_events(&self.f, &nv[0], &timev[0], &lv[0], &rv[0], &tv[0])
        finally:
            self._end_read()
        check_status(status, "Forest.split_events")
        out = []
        for a in (nodes, times, left, right, tree):
            a = a[:E]
            a.flags.writeable = False
            out.append(a)
        self._events = tuple(out)
        return self._events

    def split_events(self):
        """The split events sorted by time, ties by global id (``c/events.h``).

        Returns read-only ``(nodes, times, left, right, tree)``: the internal
        nodes, their split times, children (global ids) and trees; computed
        once per growth of the forest.
        """
        return self._split_events()

    def node_sums(self, values):
        """Σ of ``values`` (one per point) over every node's points, shape
        (n_nodes,) (prefix sums along each tree's permutation)."""
        self._require_points("Forest.node_sums")
        cdef const double[::1] v = np.ascontiguousarray(values, dtype=np.float64)
        if <size_t>v.shape[0] != self.f.n_points or self.f.n_nodes == 0:
            raise ValueError(f"values must have shape ({self.f.n_points},), got "
                             f"({v.shape[0]},)")
        out = np.empty(self.f.n_nodes, dtype=np.float64)
        cdef double[::1] o = out
        cdef int status
        self._begin_read()
        try:
            with nogil:
                status = mt_forest_node_sums(&self.f, &v[0], &o[0])
        finally:
            self._end_read()
        check_status(status, "Forest.node_sums")
        return out

    def train_slices(self, is_train):
        """Every tree's permutation restricted to the points with
        ``is_train`` (M x N_train, int32) and every node's slice of it
        (tstart, tend: int64, shape (n_nodes,))."""
        self._require_points("Forest.train_slices")
        mask = np.ascontiguousarray(is_train, dtype=np.uint8)
        if mask.shape != (self.f.n_points,) or self.f.n_nodes == 0:
            raise ValueError(f"is_train must have shape ({self.f.n_points},)")
        cdef const uint8_t[::1] mv = mask
        cdef size_t n_train = int(np.count_nonzero(mask))
        ptrain = np.zeros((self.f.n_trees, max(n_train, <size_t>1)), dtype=np.int32)
        tstart = np.empty(self.f.n_nodes, dtype=np.int64)
        tend = np.empty(self.f.n_nodes, dtype=np.int64)
        cdef int32_t[:, ::1] pv = ptrain
        cdef mt_index[::1] sv = tstart, ev = tend
        cdef int status
        self._begin_read()
        try:
            with nogil:
                status = mt_forest_train_slices(&self.f, &mv[0], n_train, &pv[0, 0],
                                                &sv[0], &ev[0])
        finally:
            self._end_read()
        check_status(status, "Forest.train_slices")
        return tstart, tend, np.ascontiguousarray(ptrain[:, :n_train])

    # -- pickling ----------------------------------------------------------
    def __reduce__(self):
        return (Forest, (self.f.n_trees, self.f.n_features), self.__getstate__())

    def __getstate__(self):
        state = {"version": _STATE_VERSION, "lifetime": self.f.lifetime,
                 "node_offset": np.array(self.node_offset),
                 "bit_generators": list(self._bit_generators),
                 "pcg64": self._pcg_states(),
                 "n_points": self.f.n_points,
                 "X": np.array(self.X) if self.f.X != NULL else None,
                 "perm": np.array(self.perm) if self.f.X != NULL else None,
                 "lower": np.array(self.lower), "upper": np.array(self.upper),
                 "rotation": None, "center": None,
                 "scale": None if self.f.scale == NULL else np.array(self.scale),
                 "key": None if self.f.key == NULL else np.array(self.column_keys)}
        for name in _INDEX_ARRAYS + _DOUBLE_ARRAYS:
            state[name] = np.array(getattr(self, name))
        cdef size_t d = self.f.n_features
        if self.f.rotation != NULL:
            state["rotation"] = np.asarray(
                <double[:self.f.n_trees * d * d]>self.f.rotation).reshape(
                    self.f.n_trees, d, d).copy()
            state["center"] = np.asarray(<double[:d]>self.f.center).copy()
        return state

    def __setstate__(self, state):
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError("Forest state has an unknown format")
        cdef size_t M = self.f.n_trees, d = self.f.n_features
        arrays = {}
        points = state.get("X") is not None or state.get("perm") is not None
        for name, dtype in ([(k, np.int64) for k in _INDEX_ARRAYS + ("node_offset", "perm")]
                            + [(k, np.float64) for k in _DOUBLE_ARRAYS
                               + ("lower", "upper", "X")]):
            if name in ("X", "perm") and not points:
                continue
            a = state[name]
            if not isinstance(a, np.ndarray) or a.dtype != dtype:
                raise ValueError(f"Forest state: {name} must be a {np.dtype(dtype)} array")
            arrays[name] = np.ascontiguousarray(a)
        n_nodes = arrays["parent"].shape[0]
        if points:
            n_points = arrays["X"].shape[0]
        else:
            n_points = state.get("n_points")
            if not isinstance(n_points, (int, np.integer)) or n_points < 1:
                raise ValueError("Forest state: a forest without points needs n_points >= 1")
        shapes = {k: (n_nodes,) for k in _INDEX_ARRAYS + _DOUBLE_ARRAYS}
        shapes.update(node_offset=(M + 1,), lower=(n_nodes, d), upper=(n_nodes, d))
        if points:
            shapes.update(perm=(M, n_points), X=(n_points, d))
        for name, shape in shapes.items():
            if arrays[name].shape != shape:
                raise ValueError(f"Forest state: {name} must have shape {shape}, got "
                                 f"{arrays[name].shape}")
        pcg = state.get("pcg64")
        if pcg is not None:
            pcg = _check_pcg_states(pcg, M)
            if len(state.get("bit_generators") or ()):
                raise ValueError("Forest state: give bit_generators or pcg64 states, not both")
        else:
            gens = _check_bit_generators(state["bit_generators"], M)
        rotation, center = state.get("rotation"), state.get("center")
        if (rotation is None) != (center is None):
            raise ValueError("Forest state: rotation and center must be given together")
        if rotation is not None:
            rotation = np.ascontiguousarray(rotation, dtype=np.float64)
            center = np.ascontiguousarray(center, dtype=np.float64)
            if rotation.shape != (M, d, d) or center.shape != (d,):
                raise ValueError(f"Forest state: rotation must have shape {(M, d, d)} and "
                                 f"center {(d,)}")
        scale = state.get("scale")
        if scale is not None:
            scale = np.ascontiguousarray(scale, dtype=np.float64)
            if scale.shape != (d,):
                raise ValueError(f"Forest state: scale must have shape {(d,)}")
        key = state.get("key")
        if key is not None:
            if not isinstance(key, np.ndarray) or key.dtype != np.int64 or \
                    key.shape != (n_nodes,):
                raise ValueError(f"Forest state: key must be an int64 array of shape "
                                 f"({n_nodes},)")
            arrays["key"] = np.ascontiguousarray(key)
        lifetime = float(state["lifetime"])
        self._begin_growth()
        try:
            self._load(arrays, n_nodes, n_points, lifetime, rotation, center, scale)
        finally:
            self._growing = False
        if pcg is not None:
            self._set_pcg(pcg, False)
        else:
            self._set_streams(gens)

    cdef _load(self, dict arrays, size_t n_nodes, size_t n_points, double lifetime,
               rotation, center, scale):
        cdef size_t M = self.f.n_trees, d = self.f.n_features
        mt_forest_free(&self.f)
        check_status(mt_forest_init(&self.f, M, d), "Forest state")
        cdef bint points = "X" in arrays
        cdef int status = mt_forest_reserve_nodes(&self.f, n_nodes)
        if status == MT_OK and points:
            status = mt_forest_reserve_points(&self.f, n_points)
        check_status(status, f"Forest state: {n_nodes} nodes and {n_points} points")
        cdef mt_index *index_ptrs[7]
        index_ptrs[:] = [self.f.tree_of, self.f.parent, self.f.left, self.f.right,
                         self.f.feature, self.f.start, self.f.end]
        cdef Py_ssize_t k
        for k, name in enumerate(_INDEX_ARRAYS):
            _copy_index(index_ptrs[k], arrays[name])
        _copy_double(self.f.threshold, arrays["threshold"])
        _copy_double(self.f.tau, arrays["tau"])
        _copy_double(self.f.lower, arrays["lower"].reshape(-1))
        _copy_double(self.f.upper, arrays["upper"].reshape(-1))
        _copy_index(self.f.node_offset, arrays["node_offset"])
        if points:
            _copy_double(self.f.X, arrays["X"].reshape(-1))
            perm = arrays["perm"]
            for k in range(<Py_ssize_t>M):
                _copy_index(self.f.perm + k * self.f.point_capacity, perm[k])
        if "key" in arrays:
            self.f.key = <mt_index *>calloc(max(self.f.node_capacity, <size_t>1),
                                            sizeof(mt_index))
            if self.f.key == NULL:
                mt_forest_free(&self.f)
                mt_forest_init(&self.f, M, d)
                raise MemoryError("Forest state: the column keys")
            _copy_index(self.f.key, arrays["key"])
        if rotation is not None:
            self.f.rotation = <double *>malloc(M * d * d * sizeof(double))
            self.f.center = <double *>malloc(d * sizeof(double))
            if self.f.rotation == NULL or self.f.center == NULL:
                mt_forest_free(&self.f)
                mt_forest_init(&self.f, M, d)
                raise MemoryError("Forest state: the rotations")
            _copy_double(self.f.rotation, rotation.reshape(-1))
            _copy_double(self.f.center, center)
        if scale is not None:
            self.f.scale = <double *>malloc(d * sizeof(double))
            if self.f.scale == NULL:
                mt_forest_free(&self.f)
                mt_forest_init(&self.f, M, d)
                raise MemoryError("Forest state: the scale")
            _copy_double(self.f.scale, scale)
        self.f.n_nodes = n_nodes
        self.f.n_points = n_points
        self.f.lifetime = lifetime
        status = mt_forest_check(&self.f)
        if status != MT_OK:
            mt_forest_free(&self.f)
            mt_forest_init(&self.f, M, d)
        check_status(status, "Forest state", None, "inconsistent forest structure")


cdef void _release_streams(bitgen_t **rngs, list locks):
    """Undo :meth:`Forest._lock_streams`."""
    for lock in locks:
        lock.release()
    free(rngs)


class TreeView:
    """One tree of a :class:`Forest`, in node ids local to the tree.

    Attributes are read-only arrays indexed by local node id (0 is the
    root): ``parent``, ``left``, ``right`` (-1 for none; computed), and
    views of the forest's ``feature``, ``threshold``, ``split_time``,
    ``lower``, ``upper``, ``start``, ``end``; ``perm`` is the tree's point
    permutation.  For a rotated forest, split dimensions, thresholds and
    boxes are in the tree's coordinates (:meth:`Forest.transform`).
    """

    def __init__(self, forest, m):
        self.forest = forest
        self.index = int(m)
        off = forest.node_offset
        self.offset = int(off[m])
        self.n_nodes = int(off[m + 1] - off[m])
        self.lifetime = forest.lifetime

    def _slice(self, name):
        return getattr(self.forest, name)[self.offset: self.offset + self.n_nodes]

    def _local(self, name):
        ids = self._slice(name)
        out = np.where(ids >= 0, ids - self.offset, -1)
        out.flags.writeable = False
        return out

    parent = property(lambda self: self._local("parent"))
    left = property(lambda self: self._local("left"))
    right = property(lambda self: self._local("right"))
    feature = property(lambda self: self._slice("feature"))
    threshold = property(lambda self: self._slice("threshold"))
    split_time = property(lambda self: self._slice("tau"))
    lower = property(lambda self: self._slice("lower"))
    upper = property(lambda self: self._slice("upper"))
    start = property(lambda self: self._slice("start"))
    end = property(lambda self: self._slice("end"))
    perm = property(lambda self: self.forest.perm[self.index])


def copy_bit_generator(g):
    """An independent copy of the numpy BitGenerator ``g``: the same state
    (the next draws are g's) and an equal seed sequence (its spawns are
    g's).  ``copy.deepcopy`` does the same through a pickle round trip of
    both, four times slower (100 against 25 µs: 0.2 s for the 2000 trees a
    forest of the width path copies); a seedless generator (built from a
    raw key or state) is deep-copied.  The trees' own sequences are
    SeedSequences restored from their state (``mondrian._streams``)."""
    seq = getattr(g, "seed_seq", None)
    if not isinstance(seq, np.random.SeedSequence):
        return _copy.deepcopy(g)
    out = type(g)(_copy.copy(seq))
    out.state = g.state
    return out


def _check_streams(streams, size_t n_trees):
    """The trees' streams as given to :meth:`Forest.fit`: an (n_trees, 4)
    C-contiguous uint64 array of PCG64 seed words, or (else) n_trees
    distinct numpy BitGenerators (:func:`_check_bit_generators`)."""
    if isinstance(streams, np.ndarray):
        if streams.dtype != np.uint64 or streams.shape != (n_trees, 4):
            raise ValueError(f"PCG64 seed words must be a uint64 array of shape "
                             f"({n_trees}, 4), got {streams.dtype} {streams.shape}")
        return np.ascontiguousarray(streams)
    return _check_bit_generators(streams, n_trees)


def _check_pcg_states(states, size_t n_trees):
    """PCG64 states of a pickled forest: (n_trees, 6) uint64 rows (state
    hi, lo, inc hi, lo, has_uint32, uinteger) with an odd increment,
    has_uint32 0 or 1 and a 32-bit buffered word."""
    if not isinstance(states, np.ndarray) or states.dtype != np.uint64 or \
            states.shape != (n_trees, 6):
        raise ValueError(f"Forest state: pcg64 must be a uint64 array of shape ({n_trees}, 6)")
    if not np.all(states[:, 3] & np.uint64(1)):
        raise ValueError("Forest state: a pcg64 increment is even (PCG64's is odd)")
    if not np.all(states[:, 4] <= 1):
        raise ValueError("Forest state: a pcg64 has_uint32 is not 0 or 1")
    if not np.all(states[:, 5] < np.uint64(1 << 32)):
        raise ValueError("Forest state: a pcg64 uinteger is not below 2**32")
    return np.ascontiguousarray(states)


def _pcg64_draws(words, kinds):
    """Draws of numpy's PCG64 held in C (``c/pcg64.h``), for testing it
    against numpy: seeded from ``words`` (4 uint64 seed words), one draw per
    entry of ``kinds`` through its ``bitgen_t`` -- 0: next_uint64, 1:
    next_uint32, 2: next_double, 3: next_raw.  Returns (the integer draws as
    uint64, 0 where a double was drawn; the double draws, 0 elsewhere; the
    final state as a row of :meth:`Forest._pcg_states`)."""
    cdef const cnp.uint64_t[::1] w = np.ascontiguousarray(words, dtype=np.uint64)
    if w.shape[0] != 4:
        raise ValueError("words must hold 4 seed words")
    cdef const cnp.int64_t[::1] k = np.ascontiguousarray(kinds, dtype=np.int64)
    cdef Py_ssize_t i, n = k.shape[0]
    cdef mt_pcg64 s
    cdef bitgen_t g
    ints = np.zeros(n, dtype=np.uint64)
    reals = np.zeros(n, dtype=np.float64)
    cdef cnp.uint64_t[::1] iv = ints
    cdef double[::1] rv = reals
    mt_pcg64_seed(&s, <const uint64_t *>&w[0])
    mt_pcg64_bitgen(&s, &g)
    for i in range(n):
        if k[i] == 0:
            iv[i] = g.next_uint64(g.state)
        elif k[i] == 1:
            iv[i] = g.next_uint32(g.state)
        elif k[i] == 2:
            rv[i] = g.next_double(g.state)
        elif k[i] == 3:
            iv[i] = g.next_raw(g.state)
        else:
            raise ValueError(f"kinds must be 0, 1, 2 or 3, got {k[i]}")
    state = np.array([s.state_hi, s.state_lo, s.inc_hi, s.inc_lo, s.has_uint32, s.uinteger],
                     dtype=np.uint64)
    return ints, reals, state


def _pcg64_object(row):
    """A numpy PCG64 at the state of one row of :meth:`Forest._pcg_states`."""
    g = np.random.PCG64(0)
    g.state = {"bit_generator": "PCG64",
               "state": {"state": (int(row[0]) << 64) | int(row[1]),
                         "inc": (int(row[2]) << 64) | int(row[3])},
               "has_uint32": int(row[4]), "uinteger": int(row[5])}
    return g


def _check_bit_generators(bit_generators, size_t n_trees):
    """A tuple of n_trees distinct numpy BitGenerators with valid capsules."""
    gens = tuple(bit_generators)
    if <size_t>len(gens) != n_trees:
        raise ValueError(f"need one bit generator per tree ({n_trees}), got {len(gens)}")
    for g in gens:
        if not isinstance(g, np.random.BitGenerator) or not PyCapsule_IsValid(
                g.capsule, "BitGenerator"):
            raise TypeError("bit_generators must be numpy BitGenerator instances")
    # Trees grow in parallel, each drawing from its own generator.
    if len({id(g) for g in gens}) != len(gens):
        raise ValueError("every tree needs its own bit generator (got one twice)")
    return gens


cdef void _copy_index(mt_index *dst, const mt_index[::1] src) noexcept:
    if src.shape[0] > 0:
        memcpy(dst, &src[0], src.shape[0] * sizeof(mt_index))


cdef void _copy_double(double *dst, const double[::1] src) noexcept:
    if src.shape[0] > 0:
        memcpy(dst, &src[0], src.shape[0] * sizeof(double))
