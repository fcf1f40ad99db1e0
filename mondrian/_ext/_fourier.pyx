# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/fourier.h``: cos/sin pairs with one range reduction."""
import numpy as np

from ._c cimport mt_threads_release
from ._status cimport check_status, check_threads

cdef extern from "c/fourier.h" nogil:
    void mt_cos_sin_pairs(const double *t, size_t n, double scale, int n_threads, double *out)
    int mt_fourier_features(const double *X, size_t n, size_t D, const double *omega, size_t p,
                            double scale, const double *y, double *phity, int n_threads,
                            double *out)
    void mt_ssgp_pairing(const double *E, const double *phi, size_t n, size_t p,
                         const double *y, const double *alpha, double *H)

__all__ = ["cos_sin_pairs", "fourier_features", "ssgp_pairing"]


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


def fourier_features(const double[:, ::1] X, const double[:, ::1] omega, double[:, ::1] out,
                     double scale=1.0, const double[::1] y=None, double[::1] phity=None,
                     n_threads=1):
    """Write into ``out`` (n, 2p) the pairs scale·cos, scale·sin of the angles X·omega.

    ``X`` (n, D), ``omega`` (D, p); the angles are computed in C a tile of
    rows at a time (never stored).  With ``y`` (n,), also adds Φᵀy to
    ``phity`` (2p,), row after row on one thread; without it ``n_threads``
    OpenMP threads share the rows (the result does not depend on their
    number).  Returns ``out``.
    """
    cdef int nt = check_threads(n_threads)
    cdef size_t n = X.shape[0], D = X.shape[1], p = omega.shape[1]
    if omega.shape[0] != X.shape[1]:
        raise ValueError(f"omega must have X.shape[1] = {X.shape[1]} rows, got {omega.shape[0]}")
    if out.shape[0] != X.shape[0] or out.shape[1] != 2 * omega.shape[1]:
        raise ValueError(f"out must have shape ({n}, {2 * p}), got "
                         f"({out.shape[0]}, {out.shape[1]})")
    if (y is None) != (phity is None):
        raise ValueError("y and phity go together")
    if y is not None and (y.shape[0] != X.shape[0] or phity.shape[0] != 2 * omega.shape[1]):
        raise ValueError(f"y must have length {n} and phity length {2 * p}")
    if n == 0 or p == 0:
        return np.asarray(out)
    cdef const double *yp = NULL
    cdef double *bp = NULL
    if y is not None:
        yp = &y[0]
        bp = &phity[0]
    cdef int status
    with nogil:
        status = mt_fourier_features(&X[0, 0], n, D, &omega[0, 0], p, scale, yp, bp, nt,
                                     &out[0, 0])
        if nt > 1 and yp == NULL:
            mt_threads_release()   # see c/threads.h
    check_status(status, "fourier_features")
    return np.asarray(out)


def ssgp_pairing(const double[:, ::1] E, const double[:, ::1] phi, double[:, ::1] H,
                 const double[::1] y=None, const double[::1] alpha=None):
    """H[i, j] = E'[i, 2j+1]·phi[i, 2j] - E'[i, 2j]·phi[i, 2j+1], E' = E - y·alphaᵀ.

    ``E``, ``phi`` (n, 2p), ``H`` (n, p) written; ``y`` (n,) and ``alpha``
    (2p,) give the rank-one correction (both or neither).  One thread.
    Returns ``H``.
    """
    cdef size_t n = E.shape[0], p = H.shape[1]
    if (phi.shape[0] != E.shape[0] or H.shape[0] != E.shape[0]
            or E.shape[1] != 2 * H.shape[1] or phi.shape[1] != E.shape[1]):
        raise ValueError("E and phi must have shape (n, 2p) and H (n, p)")
    if (y is None) != (alpha is None):
        raise ValueError("y and alpha go together")
    if y is not None and (y.shape[0] != E.shape[0] or alpha.shape[0] != E.shape[1]):
        raise ValueError(f"y must have length {n} and alpha length {2 * p}")
    if n == 0 or p == 0:
        return np.asarray(H)
    cdef const double *yp = NULL
    cdef const double *ap = NULL
    if y is not None:
        yp = &y[0]
        ap = &alpha[0]
    with nogil:
        mt_ssgp_pairing(&E[0, 0], &phi[0, 0], n, p, yp, ap, &H[0, 0])
    return np.asarray(H)
