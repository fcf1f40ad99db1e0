# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over the C Mondrian-forest core (``c/tree.h``, ``c/features.h``).

This module owns C memory through :class:`MondrianTree`, converts C status
codes into Python exceptions, and releases the GIL around every C kernel.
Argument validation of user input happens in the Python layer
(:mod:`mondrian.features`); the checks here guard memory safety only.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport isinf
from libc.stdint cimport int32_t

import numpy as np

from ._status cimport check_status
from ._c cimport (
    bitgen_t, mt_index, mt_tree, MT_OK, mt_tree_init, mt_tree_free,
    mt_tree_reserve, mt_tree_reserve_points, mt_tree_check, mt_forest_grow,
    mt_tree_active_columns, mt_forest_columns, mt_forest_features,
    mt_forest_features_fitted, mt_forest_gram,
)

__all__ = ["MondrianTree", "grow_forest", "forest_columns", "forest_features", "forest_gram"]

_STATE_VERSION = 1


cdef void _copy_index(mt_index *dst, const mt_index[::1] src):
    if src.shape[0] > 0:
        memcpy(dst, &src[0], src.shape[0] * sizeof(mt_index))


cdef void _copy_double(double *dst, const double[::1] src):
    if src.shape[0] > 0:
        memcpy(dst, &src[0], src.shape[0] * sizeof(double))


cdef class MondrianTree:
    """One Mondrian tree grown on data, stored in C (read-only from Python).

    Nodes are numbered from 0 (the root).  Every array returned by the
    properties is a read-only copy, indexed by node id.

    Attributes
    ----------
    n_features : int
        Input dimension D.
    n_nodes : int
        Number of nodes (internal nodes and leaves).
    n_points : int
        Number of training points the tree was grown on.
    lifetime : float
        The time up to which the tree has been grown.
    """

    cdef mt_tree tree

    def __cinit__(self, Py_ssize_t n_features):
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
        mt_tree_init(&self.tree, <size_t>n_features)

    def __dealloc__(self):
        mt_tree_free(&self.tree)

    @property
    def n_features(self):
        return self.tree.n_features

    @property
    def n_nodes(self):
        return self.tree.n_nodes

    @property
    def n_points(self):
        return self.tree.n_points

    @property
    def lifetime(self):
        return self.tree.lifetime

    cdef object _index_array(self, mt_index *ptr, size_t n):
        out = np.empty(n, dtype=np.int64)
        cdef mt_index[::1] view = out
        if n > 0:
            memcpy(&view[0], ptr, n * sizeof(mt_index))
        out.flags.writeable = False
        return out

    cdef object _double_array(self, double *ptr, size_t n, size_t d):
        cdef size_t total = n * (d if d > 0 else 1)
        if d > 0:
            shape = (n, d)
        else:
            shape = (n,)
        out = np.empty(shape, dtype=np.float64)
        cdef double[::1] view = out.reshape(-1)
        if total > 0:
            memcpy(&view[0], ptr, total * sizeof(double))
        out.flags.writeable = False
        return out

    @property
    def parent(self):
        """Parent of each node; -1 for the root."""
        return self._index_array(self.tree.parent, self.tree.n_nodes)

    @property
    def left(self):
        """Child with ``x[feature] <= threshold``; -1 for a leaf."""
        return self._index_array(self.tree.left, self.tree.n_nodes)

    @property
    def right(self):
        """Child with ``x[feature] > threshold``; -1 for a leaf."""
        return self._index_array(self.tree.right, self.tree.n_nodes)

    @property
    def feature(self):
        """Split dimension of each node; -1 for a leaf."""
        return self._index_array(self.tree.feature, self.tree.n_nodes)

    @property
    def threshold(self):
        """Cut location of each split (meaningless for leaves)."""
        return self._double_array(self.tree.threshold, self.tree.n_nodes, 0)

    @property
    def split_time(self):
        """Split time tau of each node; ``inf`` for a leaf."""
        return self._double_array(self.tree.tau, self.tree.n_nodes, 0)

    @property
    def lower(self):
        """Lower corner of each node's training-data box, shape (n_nodes, D)."""
        return self._double_array(self.tree.lower, self.tree.n_nodes, self.tree.n_features)

    @property
    def upper(self):
        """Upper corner of each node's training-data box, shape (n_nodes, D)."""
        return self._double_array(self.tree.upper, self.tree.n_nodes, self.tree.n_features)

    @property
    def start(self):
        """First position of each node's points in :attr:`perm`."""
        return self._index_array(self.tree.start, self.tree.n_nodes)

    @property
    def end(self):
        """One past the last position of each node's points in :attr:`perm`."""
        return self._index_array(self.tree.end, self.tree.n_nodes)

    @property
    def perm(self):
        """Permutation of the training points; node j holds ``perm[start[j]:end[j]]``."""
        return self._index_array(self.tree.perm, self.tree.n_points)

    def active_columns(self, double lifetime):
        """Number the active cells at ``lifetime``.

        Returns an int64 array over nodes: the cell's column within this tree,
        or -1 for nodes that are not active at ``lifetime``.
        """
        if not (0.0 <= lifetime <= self.tree.lifetime):
            raise ValueError(
                f"lifetime must be in [0, {self.tree.lifetime}], got {lifetime}")
        out = np.empty(self.tree.n_nodes, dtype=np.int64)
        cdef mt_index[::1] view = out
        if self.tree.n_nodes > 0:
            with nogil:
                mt_tree_active_columns(&self.tree, lifetime, &view[0])
        return out

    # -- pickling ---------------------------------------------------------
    def __reduce__(self):
        return (MondrianTree, (self.tree.n_features,), self.__getstate__())

    def __getstate__(self):
        return {
            "version": _STATE_VERSION,
            "lifetime": self.tree.lifetime,
            "parent": self.parent, "left": self.left, "right": self.right,
            "feature": self.feature, "start": self.start, "end": self.end,
            "threshold": self.threshold, "split_time": self.split_time,
            "lower": self.lower, "upper": self.upper, "perm": self.perm,
        }

    def __setstate__(self, state):
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError("MondrianTree state has an unknown format")
        cdef size_t d = self.tree.n_features
        ints = {k: np.ascontiguousarray(state[k])
                for k in ("parent", "left", "right", "feature", "start", "end", "perm")}
        dbls = {k: np.ascontiguousarray(state[k])
                for k in ("threshold", "split_time", "lower", "upper")}
        for k, a in ints.items():
            if a.dtype != np.int64 or a.ndim != 1:
                raise ValueError(f"MondrianTree state: {k} must be a 1-d int64 array")
        for k, a in dbls.items():
            if a.dtype != np.float64:
                raise ValueError(f"MondrianTree state: {k} must be float64")
        n = ints["parent"].shape[0]
        for k in ("left", "right", "feature", "start", "end", "threshold", "split_time"):
            a = ints[k] if k in ints else dbls[k]
            if a.shape != (n,):
                raise ValueError(f"MondrianTree state: {k} must have shape ({n},)")
        for k in ("lower", "upper"):
            if dbls[k].shape != (n, d):
                raise ValueError(f"MondrianTree state: {k} must have shape ({n}, {d})")
        cdef size_t n_nodes = n, n_points = ints["perm"].shape[0]
        mt_tree_free(&self.tree)
        check_status(mt_tree_reserve(&self.tree, n_nodes if n_nodes > 0 else 1), "MondrianTree")
        check_status(mt_tree_reserve_points(&self.tree, n_points), "MondrianTree")
        _copy_index(self.tree.parent, ints["parent"])
        _copy_index(self.tree.left, ints["left"])
        _copy_index(self.tree.right, ints["right"])
        _copy_index(self.tree.feature, ints["feature"])
        _copy_index(self.tree.start, ints["start"])
        _copy_index(self.tree.end, ints["end"])
        _copy_index(self.tree.perm, ints["perm"])
        _copy_double(self.tree.threshold, dbls["threshold"])
        _copy_double(self.tree.tau, dbls["split_time"])
        _copy_double(self.tree.lower, dbls["lower"].reshape(-1))
        _copy_double(self.tree.upper, dbls["upper"].reshape(-1))
        self.tree.n_nodes = n_nodes
        self.tree.lifetime = float(state["lifetime"])
        status = mt_tree_check(&self.tree)
        if status != MT_OK:
            mt_tree_free(&self.tree)
        check_status(status, "MondrianTree state")


cdef class _TreeArray:
    """A C array of the mt_tree pointers of a sequence of MondrianTree."""
    cdef mt_tree **ptr
    cdef Py_ssize_t n
    cdef object keep

    def __cinit__(self, trees):
        self.keep = list(trees)
        self.n = len(self.keep)
        self.ptr = <mt_tree **>malloc((self.n if self.n else 1) * sizeof(mt_tree *))
        if self.ptr == NULL:
            raise MemoryError()
        for i, t in enumerate(self.keep):
            if not isinstance(t, MondrianTree):
                raise TypeError("trees must be MondrianTree instances")
            self.ptr[i] = &(<MondrianTree>t).tree

    def __dealloc__(self):
        free(self.ptr)


def grow_forest(trees, bit_generators, const double[:, ::1] X, double lifetime,
                bint extend=False, int n_threads=1):
    """Grow (or extend) every tree on ``X`` up to ``lifetime``, in parallel.

    Tree ``m`` draws only from ``bit_generators[m]`` (a numpy BitGenerator),
    so the forest does not depend on ``n_threads``.
    """
    cdef _TreeArray arr = _TreeArray(trees)
    cdef Py_ssize_t m, M = arr.n
    if len(bit_generators) != M:
        raise ValueError("need one bit generator per tree")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError("X must have at least one row and one column")
    if not (lifetime >= 0.0) or isinf(lifetime):
        raise ValueError(f"lifetime must be finite and >= 0, got {lifetime}")
    cdef bitgen_t **rngs = <bitgen_t **>malloc((M if M else 1) * sizeof(bitgen_t *))
    if rngs == NULL:
        raise MemoryError()
    locks = []
    cdef int status
    try:
        for m in range(M):
            bg = bit_generators[m]
            capsule = bg.capsule
            if not PyCapsule_IsValid(capsule, "BitGenerator"):
                raise TypeError("bit_generators must be numpy BitGenerator instances")
            rngs[m] = <bitgen_t *>PyCapsule_GetPointer(capsule, "BitGenerator")
        for m in range(M):
            lock = bit_generators[m].lock
            lock.acquire()
            locks.append(lock)
        with nogil:
            status = mt_forest_grow(arr.ptr, rngs, <size_t>M, &X[0, 0],
                                    <size_t>X.shape[0], <size_t>X.shape[1],
                                    lifetime, extend, n_threads)
    finally:
        for lock in locks:
            lock.release()
        free(rngs)
    check_status(status, "grow_forest")


def forest_columns(trees, double lifetime):
    """Column numbering of the active cells of every tree at ``lifetime``.

    Returns
    -------
    node_offset : ndarray of int64, shape (M + 1,)
        Prefix sums of the trees' node counts.
    col_of_node : ndarray of int64, shape (node_offset[-1],)
        Local column of each node within its tree, or -1 if not active.
    col_offset : ndarray of int64, shape (M + 1,)
        Prefix sums of the trees' active-cell counts; tree m's cells are
        global columns ``col_offset[m] + col_of_node[...]``.
    """
    cdef _TreeArray arr = _TreeArray(trees)
    node_offset, col_of_node, col_offset = _columns(arr, lifetime)
    return node_offset, col_of_node[: node_offset[arr.n]], col_offset


cdef tuple _columns(_TreeArray arr, double lifetime):
    """forest_columns over a pointer array; col_of_node has >= 1 entry."""
    cdef Py_ssize_t M = arr.n
    node_offset = np.zeros(M + 1, dtype=np.int64)
    cdef mt_index[::1] no = node_offset
    cdef Py_ssize_t m
    for m in range(M):
        no[m + 1] = no[m] + <mt_index>arr.ptr[m].n_nodes
    col_of_node = np.empty(max(int(no[M]), 1), dtype=np.int64)
    col_offset = np.empty(M + 1, dtype=np.int64)
    cdef mt_index[::1] cn = col_of_node, co = col_offset
    cdef int status
    with nogil:
        status = mt_forest_columns(arr.ptr, <size_t>M, lifetime, &no[0], &cn[0], &co[0])
    check_status(status, "forest_columns")
    return node_offset, col_of_node, col_offset


def forest_features(trees, X, double lifetime, int n_threads=1):
    """CSR arrays of the Mondrian feature matrix at ``lifetime``.

    ``X=None`` gives the rows of the trees' own training points (exact, read
    off the node slices); otherwise every row of ``X`` (C-contiguous float64,
    shape (n, D)) is looked up with the expected-feature value.

    Returns ``(data, indices, indptr, n_columns)``; indices and indptr are
    int32 when they fit, else int64.
    """
    cdef _TreeArray arr = _TreeArray(trees)
    cdef Py_ssize_t M = arr.n
    if M < 1:
        raise ValueError("need at least one tree")
    node_offset, col_of_node, col_offset = _columns(arr, lifetime)
    cdef mt_index[::1] no = node_offset, co = col_offset, cn = col_of_node
    cdef const double[:, ::1] Xv
    cdef size_t n, d = (<MondrianTree>arr.keep[0]).tree.n_features
    if X is None:
        n = (<MondrianTree>arr.keep[0]).tree.n_points
    else:
        Xv = X
        n = Xv.shape[0]
        if <size_t>Xv.shape[1] != d:
            raise ValueError(f"X has {Xv.shape[1]} features, the trees have {d}")
    # 32-bit indices (scipy's and liblinear's native ones) whenever every
    # column number and every row pointer fits.
    cdef size_t nnz = n * <size_t>M
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
    cdef double scale = 1.0 / np.sqrt(M)
    cdef int status = MT_OK
    if n > 0:
        if X is None:
            with nogil:
                status = mt_forest_features_fitted(
                    arr.ptr, <size_t>M, lifetime, &no[0], &cn[0], &co[0], scale,
                    p32, p64, &dv[0], n_threads)
        else:
            with nogil:
                status = mt_forest_features(
                    arr.ptr, <size_t>M, &Xv[0, 0], n, d, lifetime, &no[0], &cn[0],
                    &co[0], scale, p32, p64, &dv[0], n_threads)
    check_status(status, "forest_features")
    indptr = np.arange(0, nnz + 1, M, dtype=index_dtype)
    return data[:nnz], indices[:nnz], indptr, int(col_offset[M])


def forest_gram(trees, double lifetime, int n_threads=1):
    """Dense Gram matrix ΦᵀΦ of the trees' training points at ``lifetime``.

    Entry (a, b) is the number of training points in both cells a and b,
    divided by M; columns are numbered as in :func:`forest_features`.
    Memory: one (C, C) float64 array plus N·M int32 labels.
    """
    cdef _TreeArray arr = _TreeArray(trees)
    cdef Py_ssize_t M = arr.n
    if M < 1:
        raise ValueError("need at least one tree")
    node_offset, col_of_node, col_offset = _columns(arr, lifetime)
    cdef Py_ssize_t C = int(col_offset[M])
    gram = np.zeros((C, C), dtype=np.float64)
    cdef mt_index[::1] no = node_offset, co = col_offset, cn = col_of_node
    cdef double[:, ::1] gv = gram
    cdef int status
    with nogil:
        status = mt_forest_gram(arr.ptr, <size_t>M, lifetime, &no[0], &cn[0], &co[0],
                                &gv[0, 0], n_threads)
    check_status(status, "forest_gram")
    return gram
