# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/fourier.h``: cos/sin pairs with one range reduction."""
import numpy as np

from ._c cimport mt_threads_release
from ._status cimport check_threads

cdef extern from "c/fourier.h" nogil:
    void mt_cos_sin_pairs(const double *t, size_t n, double scale, int n_threads, double *out)

__all__ = ["cos_sin_pairs"]


def cos_sin_pairs(const double[:, ::1] T, double scale, n_threads=1):
    """(n, m) angles -> (n, 2m) array with columns 2j, 2j+1 = scale·cos, scale·sin of T[:, j].

    ``n_threads`` OpenMP threads share the work; the result does not depend
    on their number.
    """
    cdef int nt = check_threads(n_threads)
    cdef size_t n = T.shape[0], m = T.shape[1]
    out = np.empty((n, 2 * m), dtype=np.float64)
    if n == 0 or m == 0:
        return out
    cdef double[:, ::1] out_v = out
    with nogil:
        mt_cos_sin_pairs(&T[0, 0], n * m, scale, nt, &out_v[0, 0])
        if nt > 1:
            mt_threads_release()   # see c/threads.h
    return out
