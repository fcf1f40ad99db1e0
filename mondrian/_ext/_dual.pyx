# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam over ``c/dual.h``: the Mondrian kernel matrix from cell labels;
and the symmetric eigendecomposition of the dual solver, by LAPACK without
the GIL."""
from libc.stdint cimport uint16_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_lapack cimport dsyevd

import numpy as np

from ._c cimport mt_forest, mt_index, mt_threads_release
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cdef extern from "c/dual.h" nogil:
    int MT_LABEL_MAX_TREES
    int mt_label_kernel(const void *a, size_t n_a, const void *b, size_t n_b, size_t n_trees,
                        int width, double scale, double *K, int n_threads)
    int mt_forest_cell_labels(const mt_forest *f, const mt_index *col_of_node,
                              const mt_index *col_offset, void *labels, int width,
                              int n_threads)

__all__ = ["label_kernel", "cell_labels", "symmetric_eigh", "LABEL_MAX_TREES"]

#: Largest number of trees (columns of the label tables) label_kernel accepts.
LABEL_MAX_TREES = MT_LABEL_MAX_TREES


def label_kernel(A, B=None, double scale=1.0, n_threads=1):
    """K[i, j] = scale · #{m : A[i, m] == B[j, m]} (B=None: B = A, symmetric).

    ``A`` and ``B`` hold one row of per-tree cell labels per point: C-ordered
    uint16, or uint8 (both of the same type).
    """
    A = np.asarray(A)
    if A.dtype not in (np.uint8, np.uint16) or A.ndim != 2 or not A.flags.c_contiguous:
        raise TypeError(f"A must be a C-contiguous 2-d uint8 or uint16 array, got "
                        f"{A.dtype} with shape {A.shape}")
    cdef size_t n_a = A.shape[0], n_b = A.shape[0], m = A.shape[1]
    cdef int width = A.dtype.itemsize
    if B is not None:
        B = np.asarray(B)
        if B.dtype != A.dtype or B.ndim != 2 or not B.flags.c_contiguous:
            raise TypeError(f"B must be a C-contiguous 2-d {A.dtype} array like A, got "
                            f"{B.dtype} with shape {B.shape}")
        if <size_t>B.shape[1] != m:
            raise ValueError(f"B has {B.shape[1]} trees, A has {m}")
        n_b = B.shape[0]
    K = np.empty((n_a, n_b), dtype=np.float64)
    if n_a == 0 or n_b == 0:
        return K
    cdef const void *pa = <const void *><size_t>A.ctypes.data
    cdef const void *pb = NULL
    if B is not None:
        pb = <const void *><size_t>B.ctypes.data
    cdef double[:, ::1] Kv = K
    cdef int status
    cdef int nt = check_threads(n_threads)
    with nogil:
        status = mt_label_kernel(pa, n_a, pb, n_b, m, width, scale, &Kv[0, 0], nt)
        mt_threads_release()
    check_status(status, "label_kernel", arg=f"need 1 to {MT_LABEL_MAX_TREES} trees")
    return K


def cell_labels(Forest forest, double lifetime, n_threads=1):
    """(N, M) table: the cell of each training point in each tree at
    ``lifetime``, numbered within the tree (``c/dual.h``): uint8 when no
    tree has more than 256 cells there (the kernel then compares twice the
    trees per instruction), else uint16."""
    col_of_node, col_offset = forest.active_columns(lifetime)
    cdef const mt_index[::1] cn = np.ascontiguousarray(col_of_node)
    cdef const mt_index[::1] co = col_offset
    cdef size_t n = forest.f.n_points, m = forest.f.n_trees
    cdef int width = 1 if np.max(np.diff(col_offset)) <= 256 else 2
    labels = np.empty((n, m), dtype=np.uint8 if width == 1 else np.uint16)
    if n == 0:
        return labels
    cdef void *pl = <void *><size_t>labels.ctypes.data
    cdef int status
    cdef int nt = check_threads(n_threads)
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_cell_labels(&forest.f, &cn[0], &co[0], pl, width, nt)
            mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "cell_labels", arg="the dual solver needs fewer than 65536 cells "
                 "per tree: use solver='cg' for data this large")
    return labels


def symmetric_eigh(double[:, ::1] A):
    """Eigenvalues and eigenvectors of the symmetric matrix ``A``, in place.

    LAPACK's divide-and-conquer ``dsyevd`` (scipy's own, through
    ``scipy.linalg.cython_lapack``), the routine of
    ``scipy.linalg.eigh(A, driver='evd')``, on the same input with the same
    optimal workspace: the same numbers, bit for bit.  It runs without the
    GIL, so that independent decompositions can run on Python threads (one
    BLAS thread each) at once; the BLAS thread count is the caller's
    (threadpoolctl).

    Parameters
    ----------
    A : C-contiguous float64 array of shape (n, n)
        Symmetric (only its upper triangle, in C order, is read); it is
        overwritten by the eigenvectors.

    Returns
    -------
    w : ndarray of shape (n,)
        Eigenvalues in ascending order.
    U : ndarray of shape (n, n)
        A view of ``A`` (Fortran order) whose column k is the unit
        eigenvector of ``w[k]``.
    """
    cdef int n = <int>A.shape[0]
    if A.shape[1] != A.shape[0]:
        raise ValueError(f"A must be square, got shape ({A.shape[0]}, {A.shape[1]})")
    if <Py_ssize_t>n != A.shape[0]:
        raise ValueError(f"A has {A.shape[0]} rows, more than LAPACK's int")
    w = np.empty(n, dtype=np.float64)
    out = np.asarray(A)
    if n == 0:
        return w, out.T
    cdef double[::1] wv = w
    cdef char jobz = b'V'
    cdef char uplo = b'L'   # of the column-major view: A's upper triangle in C order
    cdef int lda = n, lwork = -1, liwork = -1, info = 0, iwork_query = 0
    cdef double work_query = 0.0
    cdef double *work = NULL
    cdef int *iwork = NULL
    with nogil:
        dsyevd(&jobz, &uplo, &n, &A[0, 0], &lda, &wv[0], &work_query, &lwork,
               &iwork_query, &liwork, &info)
    if info != 0:
        raise ValueError(f"symmetric_eigh: LAPACK dsyevd workspace query failed (info={info})")
    lwork = <int>work_query + 1
    liwork = iwork_query
    work = <double *>malloc(<size_t>lwork * sizeof(double))
    iwork = <int *>malloc(<size_t>(liwork if liwork > 0 else 1) * sizeof(int))
    if work == NULL or iwork == NULL:
        free(work)
        free(iwork)
        raise MemoryError("symmetric_eigh: out of memory while allocating LAPACK's workspace")
    with nogil:
        dsyevd(&jobz, &uplo, &n, &A[0, 0], &lda, &wv[0], work, &lwork, iwork, &liwork, &info)
    free(work)
    free(iwork)
    if info < 0:
        raise ValueError(f"symmetric_eigh: argument {-info} of LAPACK dsyevd is invalid")
    if info > 0:
        raise np.linalg.LinAlgError(f"symmetric_eigh: the eigendecomposition did not "
                                    f"converge (dsyevd info={info})")
    return w, out.T
