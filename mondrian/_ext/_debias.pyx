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
