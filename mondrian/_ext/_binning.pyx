# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over the C random-binning core (``c/binning.h``).

Allocates the output arrays, releases the GIL around the C kernels and turns
C status codes into Python exceptions.  Argument validation of user input
happens in :mod:`mondrian.binning`; the checks here guard memory safety only.
"""
import numpy as np

from ._c cimport mt_index, MT_OK, mt_threads_release
from ._status cimport check_status, check_threads

cdef extern from "c/binning.h" nogil:
    int mt_binning_fit(const double *X, size_t n, size_t d,
                       const double *inv_pitch, const double *shift, size_t P,
                       int n_threads, mt_index *rep, mt_index *n_bins, mt_index *codes)
    int mt_binning_lookup(const double *X_fit, size_t n_fit, const double *X, size_t n,
                          size_t d, const double *inv_pitch, const double *shift, size_t P,
                          const mt_index *rep, const mt_index *bin_offsets, int n_threads,
                          mt_index *codes)

__all__ = ["binning_fit", "binning_lookup"]


cdef int _check(int status, str what) except -1:
    return check_status(
        status, what,
        arg="a bin coordinate exceeds the int64 range; the grid pitch is too small for "
            "the data's range (lifetime too large or data unscaled)",
        state="inconsistent fitted binning state")


def _check_shapes(X, inv_pitch, shift):
    if X.shape[1] != inv_pitch.shape[1] or inv_pitch.shape[0] != shift.shape[0] \
            or inv_pitch.shape[1] != shift.shape[1]:
        raise ValueError("binning: inconsistent shapes of X, inv_pitch and shift")


def binning_fit(const double[:, ::1] X, const double[:, ::1] inv_pitch,
                const double[:, ::1] shift, n_threads):
    """Number the occupied bins of every grid.

    Returns ``(rep, n_bins, codes)``: ``rep`` (P, n) first training row of
    each bin (first ``n_bins[g]`` entries of row g valid), ``n_bins`` (P,),
    ``codes`` (P, n) bin number of each training row within its grid.
    """
    _check_shapes(X, inv_pitch, shift)
    cdef int nt = check_threads(n_threads)
    cdef size_t n = X.shape[0], d = X.shape[1], P = inv_pitch.shape[0]
    if n == 0 or d == 0 or P == 0:
        raise ValueError("binning_fit: empty input")
    rep = np.empty((P, n), dtype=np.int64)
    n_bins = np.empty(P, dtype=np.int64)
    codes = np.empty((P, n), dtype=np.int64)
    cdef mt_index[:, ::1] rep_v = rep
    cdef mt_index[::1] nb_v = n_bins
    cdef mt_index[:, ::1] codes_v = codes
    cdef int status
    with nogil:
        status = mt_binning_fit(&X[0, 0], n, d, &inv_pitch[0, 0], &shift[0, 0], P,
                                nt, &rep_v[0, 0], &nb_v[0], &codes_v[0, 0])
        mt_threads_release()   # see c/threads.h
    _check(status, "binning_fit")
    return rep, n_bins, codes


def binning_lookup(const double[:, ::1] X_fit, const double[:, ::1] X,
                   const double[:, ::1] inv_pitch, const double[:, ::1] shift,
                   const mt_index[::1] rep, const mt_index[::1] bin_offsets, n_threads):
    """Global bin number (or -1 for a bin no training row occupies) of each
    row of X in each grid, as an int64 array of shape (P, n)."""
    _check_shapes(X, inv_pitch, shift)
    _check_shapes(X_fit, inv_pitch, shift)
    cdef int nt = check_threads(n_threads)
    cdef size_t n = X.shape[0], d = X.shape[1], P = inv_pitch.shape[0]
    if bin_offsets.shape[0] != <Py_ssize_t>P + 1 or bin_offsets[0] != 0 or bin_offsets[P] != rep.shape[0]:
        raise ValueError("binning_lookup: inconsistent bin offsets")
    codes = np.empty((P, n), dtype=np.int64)
    if n == 0:
        return codes
    cdef mt_index[:, ::1] codes_v = codes
    cdef const mt_index *rep_p = &rep[0] if rep.shape[0] > 0 else NULL
    cdef int status
    with nogil:
        status = mt_binning_lookup(&X_fit[0, 0], X_fit.shape[0], &X[0, 0], n, d,
                                   &inv_pitch[0, 0], &shift[0, 0], P, rep_p,
                                   &bin_offsets[0], nt, &codes_v[0, 0])
        mt_threads_release()
    _check(status, "binning_lookup")
    return codes
