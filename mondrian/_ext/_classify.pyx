# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/classify.h``: the cell-column table of a forest's
points at a lifetime, and the products Φ W and Φᵀ V of the Newton solver
(:mod:`mondrian.path.classify`)."""
from libc.stdint cimport int32_t

import numpy as np

from ._c cimport mt_forest, mt_index, mt_threads_release
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cdef extern from "c/classify.h" nogil:
    int mt_forest_cell_columns(const mt_forest *f, const mt_index *col_of_node,
                               size_t n_cols, int32_t *cols, int n_threads)
    int mt_cells_matvec(const int32_t *cols, size_t n, size_t n_trees, const double *W,
                        size_t n_cols, size_t K, double scale, double *Z, int n_threads)
    int mt_cells_rmatvec(const int32_t *cols, size_t n, size_t n_trees, const double *V,
                         const mt_index *col_offset, size_t K, double scale, double *G,
                         int n_threads)

__all__ = ["cell_columns", "cells_matvec", "cells_rmatvec", "release_threads"]


def release_threads():
    """Hand the OpenMP worker threads back (``c/threads.h``).  The products
    keep the pool between calls -- a Newton solve makes hundreds of them --
    so their caller releases it when the solve is done."""
    with nogil:
        mt_threads_release()


def cell_columns(Forest forest, double lifetime, n_threads=1):
    """(M, N) int32 table (tree-major) of the global column of each
    training point's active cell in each tree at ``lifetime``, and the
    (M + 1,) int64 column offsets of the trees."""
    col_of_node, col_offset = forest.active_columns(lifetime)
    cdef const mt_index[::1] cn = np.ascontiguousarray(col_of_node)
    cdef size_t n = forest.f.n_points, m = forest.f.n_trees
    cdef size_t n_cols = <size_t>col_offset[m]
    cols = np.empty((m, n), dtype=np.int32)
    if n == 0:
        return cols, col_offset
    cdef int32_t[:, ::1] cv = cols
    cdef int status
    cdef int nt = check_threads(n_threads)
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_cell_columns(&forest.f, &cn[0], n_cols, &cv[0, 0], nt)
            mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "cell_columns", arg="more than 2**31 - 1 cells in the forest")
    return cols, col_offset


def cells_matvec(const int32_t[:, ::1] cols, const double[:, ::1] W, double scale,
                 double[:, ::1] out, n_threads=1):
    """out = scale·Φ W: out[i, k] = scale·Σₘ W[cols[m, i], k].  Leaves the
    OpenMP pool running: call :func:`release_threads` after a series."""
    cdef size_t n = cols.shape[1], m = cols.shape[0], k = W.shape[1]
    if <size_t>out.shape[0] != n or <size_t>out.shape[1] != k:
        raise ValueError(f"out must have shape ({n}, {k})")
    if n == 0:
        return
    if m == 0 or W.shape[0] == 0:
        raise ValueError("W has no rows")
    cdef int status
    cdef int nt = check_threads(n_threads)
    with nogil:
        status = mt_cells_matvec(&cols[0, 0], n, m, &W[0, 0], W.shape[0], k, scale,
                                 &out[0, 0], nt)
    check_status(status, "cells_matvec", arg="a cell column is out of the range of W")


def cells_rmatvec(const int32_t[:, ::1] cols, const double[:, ::1] V,
                  const mt_index[::1] col_offset, double scale, double[:, ::1] out,
                  n_threads=1):
    """out = scale·Φᵀ V: out[c, k] = scale·Σ_{(m, i): cols[m, i] = c} V[i, k].
    Leaves the OpenMP pool running: call :func:`release_threads` after a
    series."""
    cdef size_t n = cols.shape[1], m = cols.shape[0], k = V.shape[1]
    if <size_t>V.shape[0] != n:
        raise ValueError(f"V has {V.shape[0]} rows, cols has {n}")
    if <size_t>col_offset.shape[0] != m + 1:
        raise ValueError(f"col_offset must have {m + 1} entries")
    if <size_t>out.shape[0] != <size_t>col_offset[m] or <size_t>out.shape[1] != k:
        raise ValueError(f"out must have shape ({col_offset[m]}, {k})")
    if out.shape[0] == 0:
        return
    cdef const int32_t *pc = &cols[0, 0] if n > 0 else NULL
    cdef const double *pv = &V[0, 0] if n > 0 else NULL
    cdef int status
    cdef int nt = check_threads(n_threads)
    with nogil:
        status = mt_cells_rmatvec(pc, n, m, pv, &col_offset[0], k, scale, &out[0, 0], nt)
    check_status(status, "cells_rmatvec", arg="a cell column is outside its tree's range")
