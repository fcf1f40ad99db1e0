# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/debias.h``: the sum of squared weights of the
debiased Mondrian forest (:mod:`mondrian.forest.debiased`)."""
from libc.stdint cimport int64_t

import numpy as np

from ._c cimport (mt_entries, mt_entries_free, mt_entries_gather, mt_forest, mt_index,
                 mt_threads_release)
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
    int mt_debias_paths(const mt_forest *f, const double *X, size_t n_rows,
                        const double *lambdas, size_t n_lambdas, mt_index *leaf, double *stay,
                        int64_t *offset, mt_entries **events, int n_threads)


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
    cdef bint pairs = n > 0 and m > 0
    # No pairs: the C call only checks the lifetimes (X, leaf, stay unread).
    cdef mt_index[:, :, ::1] lv = leaf
    cdef double[:, :, ::1] sv = stay
    cdef const double *xp = &X[0, 0] if pairs else NULL
    cdef mt_index *lp = &lv[0, 0, 0] if pairs else NULL
    cdef double *sp = &sv[0, 0, 0] if pairs else NULL
    cdef int64_t[:, ::1] ov = offset
    cdef mt_index[::1] env
    cdef double[::1] epv
    cdef mt_entries *events = NULL
    cdef int status
    cdef int nt = check_threads(n_threads)
    out = []
    forest._begin_read()
    try:
        with nogil:
            status = mt_debias_paths(&forest.f, xp, n, &lam[0], k, lp, sp, &ov[0, 0], &events,
                                     nt)
        check_status(status, "paths", arg="a lifetime out of range")
        for r in range(k):
            total = offset[r, n * m]
            event_node = np.empty(total, dtype=np.int64)
            event_prob = np.empty(total, dtype=np.float64)
            if total > 0:
                env = event_node
                epv = event_prob
                with nogil:
                    mt_entries_gather(events, r, m, &ov[r, 0], &env[0], &epv[0], nt)
            out.append((leaf[r], stay[r], offset[r], event_node, event_prob))
    finally:
        mt_entries_free(events)
        forest._end_read()
        with nogil:
            mt_threads_release()
    return out
