# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/debias.h``: the sum of squared weights of the
debiased Mondrian forest (:mod:`mondrian.forest.debiased`)."""
from libc.stdint cimport int64_t

import numpy as np

from ._c cimport mt_forest, mt_index, mt_threads_release
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cdef extern from "c/debias.h" nogil:
    int mt_debias_sum_squares(const mt_forest *f, const int64_t *indptr,
                              const mt_index *nodes, const double *coef, size_t n_rows,
                              double *out, int n_threads)

__all__ = ["sum_squared_weights"]


def sum_squared_weights(Forest forest, const int64_t[::1] indptr, const mt_index[::1] nodes,
                        const double[::1] coef, n_threads=1):
    """out[x] = Σ_i (Σ_{e in row x: i in node_e's points} coef_e)², rows
    given CSR style by ``indptr`` over (``nodes``, ``coef``)."""
    cdef size_t n_rows = indptr.shape[0] - 1 if indptr.shape[0] > 0 else 0
    if indptr.shape[0] == 0:
        raise ValueError("indptr must have at least one entry")
    if nodes.shape[0] != coef.shape[0] or <size_t>indptr[n_rows] != <size_t>nodes.shape[0]:
        raise ValueError("nodes and coef must have indptr[-1] entries each")
    forest._require_points("sum_squared_weights")
    out = np.zeros(n_rows, dtype=np.float64)
    if n_rows == 0:
        return out
    cdef double[::1] ov = out
    cdef const mt_index *np_ = &nodes[0] if nodes.shape[0] > 0 else NULL
    cdef const double *cp = &coef[0] if coef.shape[0] > 0 else NULL
    cdef int status
    cdef int nt = check_threads(n_threads)
    forest._begin_read()
    try:
        with nogil:
            status = mt_debias_sum_squares(&forest.f, &indptr[0], np_, cp, n_rows, &ov[0], nt)
            mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "sum_squared_weights", arg="a node id is out of range")
    return out


cdef extern from "c/debias.h" nogil:
    ctypedef struct mt_debias_events:
        pass
    int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows,
                        const double *lambdas, size_t n_lambdas, mt_index *leaf, double *stay,
                        int64_t *offset, mt_debias_events **events, int n_threads)
    void mt_debias_events_gather(const mt_debias_events *events, size_t n_trees, size_t r,
                                 const int64_t *offset, mt_index *event_node,
                                 double *event_prob, int n_threads)
    void mt_debias_events_free(mt_debias_events *events)


def paths(Forest forest, const double[:, ::1] X, lifetimes, n_threads=1):
    """Active node, stay probability and empty-cell events of every point of
    X in every tree pruned at each of ``lifetimes`` (``c/debias.h``: one
    descent of each (point, tree) pair serves every lifetime).

    Returns
    -------
    list, one tuple per lifetime, of
    leaf : (n, M) int64
    stay : (n, M) float64
    offset : (n·M + 1,) int64
        Pair p = row·M + tree has the events ``offset[p]:offset[p + 1]``.
    event_node, event_prob : (offset[-1],) int64 and float64
        Node j cut away from, and the probability q_j.
    """
    cdef const double[::1] lam = np.ascontiguousarray(lifetimes, dtype=np.float64).reshape(-1)
    cdef size_t n = X.shape[0], m = forest.f.n_trees, k = lam.shape[0], r
    if k == 0:
        raise ValueError("lifetimes must hold at least one lifetime")
    if n > 0 and <size_t>X.shape[1] != forest.f.n_features:
        raise ValueError(f"X has {X.shape[1]} features, the forest {forest.f.n_features}")
    leaf = np.zeros((k, n, m), dtype=np.int64)
    stay = np.ones((k, n, m), dtype=np.float64)
    offset = np.zeros((k, n * m + 1), dtype=np.int64)
    if n == 0 or m == 0:
        for v in lam:
            if not 0.0 <= v <= forest.f.lifetime:
                raise ValueError(f"paths: a lifetime out of range ({v})")
        return [(leaf[r], stay[r], offset[r], np.empty(0, np.int64), np.empty(0))
                for r in range(k)]
    cdef mt_index[:, :, ::1] lv = leaf
    cdef double[:, :, ::1] sv = stay
    cdef int64_t[:, ::1] ov = offset
    cdef mt_index[::1] env
    cdef double[::1] epv
    cdef mt_debias_events *events = NULL
    cdef int status
    cdef int nt = check_threads(n_threads)
    out = []
    forest._begin_read()
    try:
        with nogil:
            status = mt_debias_paths(&forest.f, &X[0, 0], n, &lam[0], k, &lv[0, 0, 0],
                                     &sv[0, 0, 0], &ov[0, 0], &events, nt)
        check_status(status, "paths", arg="a lifetime out of range")
        for r in range(k):
            total = offset[r, n * m]
            event_node = np.empty(total, dtype=np.int64)
            event_prob = np.empty(total, dtype=np.float64)
            if total > 0:
                env = event_node
                epv = event_prob
                with nogil:
                    mt_debias_events_gather(events, m, r, &ov[r, 0], &env[0], &epv[0], nt)
            out.append((leaf[r], stay[r], offset[r], event_node, event_prob))
    finally:
        mt_debias_events_free(events)
        forest._end_read()
        with nogil:
            mt_threads_release()
    return out
