# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam of the aggregation over pruned subtrees (AMF, ``c/amf.h``).

The per-node state arrays (one row per node in the forest's global
numbering: log-weight, count and target sums, or class counts) belong to
the estimator (:mod:`mondrian.forest.aggregation`); these functions update
them in place, carry them over an insertion's renumbering, and predict.
The GIL is released around every kernel; each call marks the forest as
read.  The checks here guard memory safety; user input is validated in
:mod:`mondrian.forest`.
"""
import numpy as np
cimport numpy as cnp

from ._c cimport mt_index, mt_forest, mt_threads_release
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cdef extern from "c/amf.h" nogil:
    int mt_amf_update_regression(const mt_forest *f, const double *X, const double *y,
                                 size_t n, int n_threads, double *state)
    int mt_amf_update_classes(const mt_forest *f, const double *X, const mt_index *labels,
                              size_t n, size_t n_classes, double dirichlet, int n_threads,
                              double *state)
    int mt_amf_carry(const mt_forest *f, size_t old_n_nodes, const mt_index *old_offset,
                     const mt_index *old_key, const double *old_tau, size_t width,
                     const double *old_state, int n_threads, double *state)
    int mt_amf_weights(const mt_forest *f, double lam, const double *state, size_t width,
                       double step, int n_threads, double *log_wbar, double *coef)
    int mt_amf_predict(const mt_forest *f, const double *X, size_t n, double lam,
                       const double *coef, size_t K, const double *comp, int separate,
                       int n_threads, double *out)

cnp.import_array()

__all__ = ["REGRESSION_WIDTH", "update_regression", "update_classes", "carry", "weights",
           "predict"]

#: Columns of the regression state: log-weight, count, sum, sum of squares.
REGRESSION_WIDTH = 4


cdef double[:, ::1] _state_view(Forest forest, state, Py_ssize_t width):
    if (not isinstance(state, np.ndarray) or state.dtype != np.float64
            or not state.flags.c_contiguous or not state.flags.writeable
            or state.ndim != 2 or <size_t>state.shape[0] != forest.f.n_nodes
            or state.shape[1] != width or forest.f.n_nodes == 0):
        raise ValueError(f"state must be a writeable C-contiguous float64 array of shape "
                         f"(n_nodes={forest.f.n_nodes}, {width})")
    return state


cdef const double[:, ::1] _points(Forest forest, X):
    cdef const double[:, ::1] xv = np.ascontiguousarray(X, dtype=np.float64)
    if <size_t>xv.shape[1] != forest.f.n_features:
        raise ValueError(f"X must have {forest.f.n_features} columns, got {xv.shape[1]}")
    return xv


def update_regression(Forest forest, X, y, state, n_threads=1):
    """Take the points (X, y) in order through every tree: ``state``
    (n_nodes x 4: -L, count, sum, sum of squares) is updated in place
    (square loss, running-mean nodes)."""
    cdef int nt = check_threads(n_threads)
    cdef const double[:, ::1] xv = _points(forest, X)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef double[:, ::1] sv = _state_view(forest, state, REGRESSION_WIDTH)
    cdef size_t n = <size_t>xv.shape[0]
    if <size_t>yv.shape[0] != n:
        raise ValueError(f"y has {yv.shape[0]} entries, X {n} rows")
    if n == 0:
        return state
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_amf_update_regression(&forest.f, &xv[0, 0], &yv[0], n, nt, &sv[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "update_regression",
                 arg="need a fitted forest and finite X and y")
    return state


def update_classes(Forest forest, X, labels, Py_ssize_t n_classes, state, double dirichlet,
                   n_threads=1):
    """Take the points (X, labels) in order through every tree: ``state``
    (n_nodes x (n_classes + 2): -L, count, class counts) is updated in
    place (log loss, Dirichlet nodes)."""
    cdef int nt = check_threads(n_threads)
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    cdef const double[:, ::1] xv = _points(forest, X)
    cdef const mt_index[::1] lv = np.ascontiguousarray(labels, dtype=np.int64)
    cdef double[:, ::1] sv = _state_view(forest, state, n_classes + 2)
    cdef size_t n = <size_t>xv.shape[0]
    if <size_t>lv.shape[0] != n:
        raise ValueError(f"labels has {lv.shape[0]} entries, X {n} rows")
    if n == 0:
        return state
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_amf_update_classes(&forest.f, &xv[0, 0], &lv[0], n, <size_t>n_classes,
                                           dirichlet, nt, &sv[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "update_classes",
                 arg=f"need a fitted forest, finite X, labels in [0, {n_classes}) and a "
                     f"finite dirichlet > 0")
    return state


def carry(Forest forest, old_offset, old_key, old_tau, old_state, n_threads=1):
    """The state of the forest after an insertion from the state before it
    (rows of the old nodes found by (key, split time); new parents take the
    row of the node they were inserted above, new leaves zeros)."""
    cdef int nt = check_threads(n_threads)
    cdef const mt_index[::1] ov = np.ascontiguousarray(old_offset, dtype=np.int64)
    cdef const mt_index[::1] kv = np.ascontiguousarray(old_key, dtype=np.int64)
    cdef const double[::1] tv = np.ascontiguousarray(old_tau, dtype=np.float64)
    cdef const double[:, ::1] osv = np.ascontiguousarray(old_state, dtype=np.float64)
    cdef size_t old_n = <size_t>osv.shape[0]
    cdef size_t width = <size_t>osv.shape[1]
    if (<size_t>ov.shape[0] != forest.f.n_trees + 1 or <size_t>kv.shape[0] != old_n
            or <size_t>tv.shape[0] != old_n or old_n == 0 or width == 0
            or forest.f.n_nodes == 0):
        raise ValueError("old_offset must have n_trees + 1 entries, old_key and old_tau "
                         "one per row of old_state")
    state = np.empty((forest.f.n_nodes, width), dtype=np.float64)
    cdef double[:, ::1] sv = state
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_amf_carry(&forest.f, old_n, &ov[0], &kv[0], &tv[0], width,
                                  &osv[0, 0], nt, &sv[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "carry", arg="old_offset does not partition the old nodes",
                 state="the forest is not the old one after insertions")
    return state


def weights(Forest forest, double lam, state, double step, n_threads=1, out=None):
    """(log_wbar, coef) of the tree pruned at ``lam`` with log w = step *
    state[:, 0]: log wbar of every node and the prediction's coefficients
    (a_j, 1 - a_j) (n_nodes x 2); NaN below the pruned tree.  Written into
    ``out`` = (log_wbar, coef) (C-contiguous, writeable float64 arrays of
    those shapes, not overlapping) if given: a selection trying many
    lifetimes reuses their pages (3 doubles a node of fresh memory a call
    otherwise)."""
    cdef int nt = check_threads(n_threads)
    cdef const double[:, ::1] sv = np.ascontiguousarray(state, dtype=np.float64)
    cdef size_t nn = forest.f.n_nodes
    if <size_t>sv.shape[0] != nn or sv.shape[1] < 1 or nn == 0:
        raise ValueError("state must have one row per node of a fitted forest")
    if out is None:
        log_wbar = np.empty(nn, dtype=np.float64)
        coef = np.empty((nn, 2), dtype=np.float64)
    else:
        log_wbar, coef = out
        if not (isinstance(log_wbar, np.ndarray) and isinstance(coef, np.ndarray)
                and log_wbar.dtype == np.float64 and coef.dtype == np.float64
                and log_wbar.shape == (nn,) and coef.shape == (nn, 2)
                and log_wbar.flags.c_contiguous and coef.flags.c_contiguous
                and log_wbar.flags.writeable and coef.flags.writeable):
            raise ValueError("out must be two writeable, C-contiguous float64 arrays of "
                             "n_nodes and n_nodes x 2 entries")
        if np.shares_memory(log_wbar, coef):
            raise ValueError("out must be two arrays that do not overlap")
        if np.shares_memory(log_wbar, np.asarray(sv)) or np.shares_memory(coef, np.asarray(sv)):
            raise ValueError("out must not overlap state")
    cdef double[::1] wv = log_wbar
    cdef double[:, ::1] cv = coef
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_amf_weights(&forest.f, lam, &sv[0, 0], <size_t>sv.shape[1], step, nt,
                                    &wv[0], &cv[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "weights",
                 arg="need 0 <= lifetime <= the forest's and a finite step > 0")
    return log_wbar, coef


def predict(Forest forest, X, double lam, coef, comp, n_threads=1, bint separate=False):
    """The aggregated prediction of the node components ``comp`` (n_nodes x K)
    at the rows of X, averaged over the trees (n x K), with ``coef`` of
    :func:`weights` at ``lam``; ``separate``: a point outside a root's box
    separates from it with the conditional Mondrian's probability and then
    predicts the root's component (``c/amf.h``)."""
    cdef int nt = check_threads(n_threads)
    cdef const double[:, ::1] xv = _points(forest, X)
    cdef const double[:, ::1] wv = np.ascontiguousarray(coef, dtype=np.float64)
    cdef const double[:, ::1] cv = np.ascontiguousarray(comp, dtype=np.float64)
    cdef size_t nn = forest.f.n_nodes, n = <size_t>xv.shape[0], K = <size_t>cv.shape[1]
    if (<size_t>wv.shape[0] != nn or wv.shape[1] != 2 or <size_t>cv.shape[0] != nn
            or K == 0 or nn == 0):
        raise ValueError("coef (n_nodes x 2) and comp must have one row per node")
    out = np.zeros((n, K), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef int status
    cdef int sep = 1 if separate else 0
    forest._begin_read()
    try:
        with nogil:
            status = mt_amf_predict(&forest.f, &xv[0, 0], n, lam, &wv[0, 0], K, &cv[0, 0],
                                    sep, nt, &ov[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "predict", arg="need 0 <= lifetime <= the forest's")
    return out
