# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython seam of the Mondrian forest estimators (``mondrian/forest.py``).

Node statistics of the targets (``c/nodestats.h``), the smoothed node
posteriors (Gaussian belief propagation, interpolated Kneser-Ney class
smoothing) and the conditional-Mondrian mixture at any point
(``c/mforest.h``), on a :class:`~mondrian._ext._forest.Forest` (cimported;
its C arrays are read directly).  The arrays returned are new numpy arrays
owned by the caller (the estimator), one row per node in the forest's
global numbering.  The GIL is released around every kernel; each call
marks the forest as read, so it cannot be grown meanwhile.  The checks here
guard memory safety; user input is validated in :mod:`mondrian.forest`.
"""
import numpy as np
cimport numpy as cnp

from ._c cimport (
    mt_index, mt_threads_release, mt_node_stats_regression, mt_node_stats_classes,
    mt_forest_gauss_posterior, mt_forest_class_posterior, mt_forest_mixture,
    mt_forest_gauss_mixture, mt_forest_gauss_loo, mt_entries, mt_entries_gather,
    mt_entries_free, mt_forest_paths_walk,
    mt_forest_gauss_mixture_paths, mt_forest_mixture_paths,
)
from ._forest cimport Forest
from ._status cimport check_status, check_threads

cnp.import_array()

__all__ = ["regression_stats", "class_stats", "gauss_posterior", "gauss_loo",
           "class_posterior", "mixture", "gauss_mixture", "Paths", "mixture_paths",
           "gauss_mixture_paths"]

_NO_POINTS = "the forest keeps no training points (store_points=False)"


def regression_stats(Forest forest, y, n_threads=1):
    """(count, sum, sumsq) of the targets y over every node (n_nodes each)."""
    cdef int nt = check_threads(n_threads)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef size_t nn = forest.f.n_nodes
    if <size_t>yv.shape[0] != forest.f.n_points:
        raise ValueError(f"y has {yv.shape[0]} entries, the forest {forest.f.n_points} points")
    count = np.zeros(nn, dtype=np.float64)
    total = np.zeros(nn, dtype=np.float64)
    sumsq = np.zeros(nn, dtype=np.float64)
    cdef double[::1] c = count, s = total, s2 = sumsq
    cdef const double *yp = &yv[0] if yv.shape[0] > 0 else NULL
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_node_stats_regression(&forest.f, yp, nt, &c[0], &s[0], &s2[0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "regression_stats", arg=_NO_POINTS)
    return count, total, sumsq


def class_stats(Forest forest, labels, Py_ssize_t n_classes, n_threads=1):
    """Class counts of every node (n_nodes x n_classes); labels in [0, n_classes)."""
    cdef int nt = check_threads(n_threads)
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    cdef const mt_index[::1] lv = np.ascontiguousarray(labels, dtype=np.int64)
    if <size_t>lv.shape[0] != forest.f.n_points:
        raise ValueError(f"labels has {lv.shape[0]} entries, the forest {forest.f.n_points} points")
    counts = np.zeros((forest.f.n_nodes, n_classes), dtype=np.float64)
    cdef double[:, ::1] cv = counts
    cdef const mt_index *lp = &lv[0] if lv.shape[0] > 0 else NULL
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_node_stats_classes(&forest.f, lp, <size_t>n_classes, nt, &cv[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "class_stats",
                 arg=f"{_NO_POINTS}, or a label outside [0, {n_classes})")
    return counts


def gauss_posterior(Forest forest, double lam, count, total, double prior_mean,
                    double prior_var, double time_scale, double noise_var, n_threads=1,
                    out=None, work=None, bint reuse_increments=False):
    """Posterior (mean, var, cov) of the node means at ``lam``, cov[j] =
    Cov(mu_parent(j), mu_j) (NaN below the pruned tree); written into
    ``out`` (three float64 arrays of n_nodes, C-contiguous and writeable:
    a selection scoring many candidates reuses their pages) if given.
    ``work``: the computation's scratch (a C-contiguous, writeable float64
    array of 5·n_nodes entries, not overlapping ``out``; its content is
    overwritten) if given, else allocated for the call -- for the same
    reason: 5·n_nodes fresh doubles a call (0.8 GB on 2·10⁷ nodes) are
    pages the kernel clears.  ``reuse_increments``: take the prior
    increments that the previous call left in ``work`` (valid only if it had
    the same forest, ``lam``, ``prior_var`` and ``time_scale``;
    ``c/mforest.h``)."""
    cdef int nt = check_threads(n_threads)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[::1] c = np.ascontiguousarray(count, dtype=np.float64)
    cdef const double[::1] s = np.ascontiguousarray(total, dtype=np.float64)
    if <size_t>c.shape[0] != nn or <size_t>s.shape[0] != nn or nn == 0:
        raise ValueError("count and total must have one entry per node of a fitted forest")
    if out is None:
        mean = np.empty(nn, dtype=np.float64)
        var = np.empty(nn, dtype=np.float64)
        cov = np.empty(nn, dtype=np.float64)
    else:
        mean, var, cov = out
        for a in (mean, var, cov):
            if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 1
                    and <size_t>a.shape[0] == nn and a.flags.c_contiguous
                    and a.flags.writeable):
                raise ValueError("out must be three writeable, C-contiguous float64 "
                                 "arrays of n_nodes entries")
        if (np.shares_memory(mean, var) or np.shares_memory(mean, cov)
                or np.shares_memory(var, cov)):
            raise ValueError("out must be three arrays that do not overlap")
        stats = (np.asarray(c), np.asarray(s))
        if any(np.shares_memory(a, b) for a in (mean, var, cov) for b in stats):
            raise ValueError("out must not overlap count or total")
    cdef double[::1] wv
    cdef double *wp = NULL
    if reuse_increments and work is None:
        raise ValueError("reuse_increments needs the work of an earlier call")
    if work is not None:
        if not (isinstance(work, np.ndarray) and work.dtype == np.float64 and work.ndim == 1
                and <size_t>work.shape[0] == 5 * nn and work.flags.c_contiguous
                and work.flags.writeable):
            raise ValueError("work must be a writeable, C-contiguous float64 array of "
                             "5 * n_nodes entries")
        if any(np.shares_memory(work, a) for a in (mean, var, cov)):
            raise ValueError("work must not overlap out")
        if np.shares_memory(work, np.asarray(c)) or np.shares_memory(work, np.asarray(s)):
            raise ValueError("work must not overlap count or total")
        wv = work
        wp = &wv[0]
    cdef double[::1] mv = mean, vv = var, cv = cov
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_gauss_posterior(&forest.f, lam, &c[0], &s[0], prior_mean,
                                               prior_var, time_scale, noise_var, nt,
                                               &mv[0], &vv[0], &cv[0], wp,
                                               1 if reuse_increments else 0)
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "gauss_posterior",
                 arg="need 0 <= lifetime <= the forest's, prior_var >= 0, time_scale > 0 "
                     "and noise_var > 0")
    return mean, var, cov


def gauss_loo(Forest forest, double lam, count, total, y, double prior_mean, double prior_var,
              time_scales, noise_vars, n_threads=1):
    """Leave-one-out predictive (mean, second moment) of every training
    target y[i] under the Gaussian smoothing at ``lam``, averaged over the
    trees, for each candidate (time_scales[c], noise_vars[c]):
    (n_candidates x n_points x 2); count and total are regression_stats' of y."""
    cdef int nt = check_threads(n_threads)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[::1] c = np.ascontiguousarray(count, dtype=np.float64)
    cdef const double[::1] s = np.ascontiguousarray(total, dtype=np.float64)
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const double[::1] tv = np.ascontiguousarray(time_scales, dtype=np.float64).ravel()
    cdef const double[::1] nv = np.ascontiguousarray(noise_vars, dtype=np.float64).ravel()
    cdef size_t k = <size_t>tv.shape[0]
    if <size_t>c.shape[0] != nn or <size_t>s.shape[0] != nn or nn == 0:
        raise ValueError("count and total must have one entry per node of a fitted forest")
    if <size_t>yv.shape[0] != forest.f.n_points:
        raise ValueError(f"y has {yv.shape[0]} entries, the forest {forest.f.n_points} points")
    if k == 0 or <size_t>nv.shape[0] != k:
        raise ValueError("time_scales and noise_vars must be non-empty, of one length")
    out = np.empty((k, forest.f.n_points, 2), dtype=np.float64)
    if forest.f.n_points == 0:
        return out
    cdef double[:, :, ::1] ov = out
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_gauss_loo(&forest.f, lam, &c[0], &s[0], &yv[0], prior_mean,
                                         prior_var, k, &tv[0], &nv[0], nt, &ov[0, 0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "gauss_loo",
                 arg=f"{_NO_POINTS}, or not 0 <= lifetime <= the forest's, prior_var >= 0, "
                     "time_scale > 0 and noise_var > 0")
    return out


def class_posterior(Forest forest, double lam, counts, base, double rate, n_threads=1,
                    out=None, work=None):
    """Smoothed class probabilities of the nodes at ``lam`` (n_nodes x K),
    written into ``out`` (a C-contiguous, writeable float64 array of that
    shape) if given; ``work``: the computation's scratch (C-contiguous,
    writeable float64, n_nodes·K entries, not overlapping ``out``), else
    allocated for the call.  A selection scoring many candidates passes the
    same arrays each time (as :func:`gauss_posterior`'s)."""
    cdef int nt = check_threads(n_threads)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[:, ::1] c = np.ascontiguousarray(counts, dtype=np.float64)
    cdef const double[::1] b = np.ascontiguousarray(base, dtype=np.float64)
    cdef size_t K = <size_t>b.shape[0]
    if <size_t>c.shape[0] != nn or <size_t>c.shape[1] != K or nn == 0 or K == 0:
        raise ValueError("counts must be n_nodes x n_classes, base n_classes")
    if out is None:
        prob = np.empty((nn, K), dtype=np.float64)
    else:
        prob = out
        if not (isinstance(prob, np.ndarray) and prob.dtype == np.float64 and prob.ndim == 2
                and <size_t>prob.shape[0] == nn and <size_t>prob.shape[1] == K
                and prob.flags.c_contiguous and prob.flags.writeable):
            raise ValueError("out must be a writeable, C-contiguous float64 array of "
                             "n_nodes x n_classes")
        if np.shares_memory(prob, np.asarray(c)):
            raise ValueError("out must not overlap counts")
    cdef double[::1] wv
    cdef double *wp = NULL
    if work is not None:
        if not (isinstance(work, np.ndarray) and work.dtype == np.float64 and work.ndim == 1
                and <size_t>work.shape[0] == nn * K and work.flags.c_contiguous
                and work.flags.writeable):
            raise ValueError("work must be a writeable, C-contiguous float64 array of "
                             "n_nodes * n_classes entries")
        if np.shares_memory(work, prob):
            raise ValueError("work must not overlap out")
        if np.shares_memory(work, np.asarray(c)):
            raise ValueError("work must not overlap counts")
        wv = work
        wp = &wv[0]
    cdef double[:, ::1] pv = prob
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_class_posterior(&forest.f, lam, &c[0, 0], K, &b[0], rate, nt,
                                               &pv[0, 0], wp)
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "class_posterior",
                 arg="need 0 <= lifetime <= the forest's and rate >= 0")
    return prob


def mixture(Forest forest, X, double lam, leaf, branch, branch0, n_threads=1):
    """The conditional-Mondrian mixture of the components at the rows of X,
    averaged over the trees (n x K)."""
    cdef int nt = check_threads(n_threads)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[:, ::1] xv = np.ascontiguousarray(X, dtype=np.float64)
    cdef const double[:, ::1] lv = np.ascontiguousarray(leaf, dtype=np.float64)
    cdef const double[:, ::1] bv = np.ascontiguousarray(branch, dtype=np.float64)
    cdef const double[::1] b0 = np.ascontiguousarray(branch0, dtype=np.float64)
    cdef size_t K = <size_t>b0.shape[0]
    cdef size_t n = <size_t>xv.shape[0]
    if (<size_t>xv.shape[1] != forest.f.n_features or <size_t>lv.shape[0] != nn
            or <size_t>bv.shape[0] != nn or <size_t>lv.shape[1] != K
            or <size_t>bv.shape[1] != K or nn == 0 or K == 0):
        raise ValueError("X must be n x n_features, leaf and branch n_nodes x K, branch0 K")
    out = np.zeros((n, K), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_mixture(&forest.f, &xv[0, 0], n, lam, K, &lv[0, 0], &bv[0, 0],
                                       &b0[0], nt, &ov[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "mixture", arg="need 0 <= lifetime <= the forest's")
    return out


def gauss_mixture(Forest forest, X, double lam, mean, var, cov, double prior_mean,
                  double prior_var, double time_scale, double noise_var, n_threads=1):
    """Mean and second moment (n x 2) of the smoothed forest's Gaussian
    mixture at the rows of X, from gauss_posterior's (mean, var, cov)."""
    cdef int nt = check_threads(n_threads)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[:, ::1] xv = np.ascontiguousarray(X, dtype=np.float64)
    cdef const double[::1] mv = np.ascontiguousarray(mean, dtype=np.float64)
    cdef const double[::1] vv = np.ascontiguousarray(var, dtype=np.float64)
    cdef const double[::1] cv = np.ascontiguousarray(cov, dtype=np.float64)
    cdef size_t n = <size_t>xv.shape[0]
    if (<size_t>xv.shape[1] != forest.f.n_features or <size_t>mv.shape[0] != nn
            or <size_t>vv.shape[0] != nn or <size_t>cv.shape[0] != nn or nn == 0):
        raise ValueError("X must be n x n_features, mean, var and cov one entry per node")
    out = np.zeros((n, 2), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_gauss_mixture(&forest.f, &xv[0, 0], n, lam, &mv[0], &vv[0],
                                             &cv[0], prior_mean, prior_var, time_scale,
                                             noise_var, nt, &ov[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "gauss_mixture",
                 arg="need 0 <= lifetime <= the forest's, prior_var >= 0, time_scale > 0 "
                     "and noise_var >= 0")
    return out


cdef class Paths:
    """The paths of fixed points down every tree of a forest, with their gaps
    to the boxes on the way (``c/mforest.h``): ``mixture`` and
    ``gauss_mixture`` given ``paths=`` read them instead of walking the
    trees, with the same results.  Made for held-out points scored at many
    lifetimes and hyperparameters.  The forest is pinned while the paths
    live (growing or inserting works on a copy) and must still have the
    nodes it had."""

    cdef readonly Forest forest
    cdef readonly object offset, node, gap
    cdef readonly Py_ssize_t n_points
    cdef size_t n_nodes
    cdef object __weakref__

    def __init__(self, Forest forest, X, n_threads=1, max_entries=None):
        cdef int nt = check_threads(n_threads)
        cdef const double[:, ::1] xv = np.ascontiguousarray(X, dtype=np.float64)
        cdef size_t n = <size_t>xv.shape[0], M = forest.f.n_trees
        if <size_t>xv.shape[1] != forest.f.n_features or forest.f.n_nodes == 0:
            raise ValueError("X must be n x n_features, the forest fitted")
        offset = np.zeros(n * M + 1, dtype=np.int64)
        cdef mt_index[::1] ov = offset
        cdef mt_index[::1] nv
        cdef double[::1] gv
        cdef mt_entries *walk = NULL
        cdef int status = 0
        forest._begin_read()
        try:
            if n > 0:
                with nogil:
                    status = mt_forest_paths_walk(&forest.f, &xv[0, 0], n, nt, &ov[0], &walk)
            check_status(status, "Paths", arg="the forest has no nodes")
            entries = int(offset[n * M])
            if max_entries is not None and entries > max_entries:
                raise OverflowError(f"the paths have {entries} entries, more than "
                                    f"max_entries={max_entries}")
            node = np.empty(entries, dtype=np.int64)
            gap = np.empty(entries, dtype=np.float64)
            if entries > 0:
                nv = node
                gv = gap
                with nogil:
                    mt_entries_gather(walk, 0, M, &ov[0], &nv[0], &gv[0], nt)
        finally:
            mt_entries_free(walk)
            forest._end_read()
            with nogil:
                mt_threads_release()
        self.forest = forest
        self.offset, self.node, self.gap = offset, node, gap
        self.n_points = <Py_ssize_t>n
        self.n_nodes = forest.f.n_nodes
        forest.pin(self)

    cdef check(self, Forest forest):
        if forest is not self.forest or forest.f.n_nodes != self.n_nodes:
            raise ValueError("the paths were made on another forest, or it has changed")


def mixture_paths(Forest forest, Paths paths, double lam, leaf, branch, branch0, n_threads=1):
    """``mixture`` at the points of ``paths`` (the same numbers)."""
    cdef int nt = check_threads(n_threads)
    paths.check(forest)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[:, ::1] lv = np.ascontiguousarray(leaf, dtype=np.float64)
    cdef const double[:, ::1] bv = np.ascontiguousarray(branch, dtype=np.float64)
    cdef const double[::1] b0 = np.ascontiguousarray(branch0, dtype=np.float64)
    cdef size_t K = <size_t>b0.shape[0]
    cdef size_t n = <size_t>paths.n_points
    if (<size_t>lv.shape[0] != nn or <size_t>bv.shape[0] != nn or <size_t>lv.shape[1] != K
            or <size_t>bv.shape[1] != K or K == 0):
        raise ValueError("leaf and branch must be n_nodes x K, branch0 K")
    out = np.zeros((n, K), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef const mt_index[::1] off = paths.offset
    cdef const mt_index[::1] nodes = paths.node
    cdef const double[::1] gaps = paths.gap
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_mixture_paths(&forest.f, &off[0], &nodes[0], &gaps[0], n, lam, K,
                                             &lv[0, 0], &bv[0, 0], &b0[0], nt, &ov[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "mixture_paths", arg="need 0 <= lifetime <= the forest's")
    return out


def gauss_mixture_paths(Forest forest, Paths paths, double lam, mean, var, cov,
                        double prior_mean, double prior_var, double time_scale,
                        double noise_var, n_threads=1):
    """``gauss_mixture`` at the points of ``paths`` (the same numbers)."""
    cdef int nt = check_threads(n_threads)
    paths.check(forest)
    cdef size_t nn = forest.f.n_nodes
    cdef const double[::1] mv = np.ascontiguousarray(mean, dtype=np.float64)
    cdef const double[::1] vv = np.ascontiguousarray(var, dtype=np.float64)
    cdef const double[::1] cv = np.ascontiguousarray(cov, dtype=np.float64)
    cdef size_t n = <size_t>paths.n_points
    if <size_t>mv.shape[0] != nn or <size_t>vv.shape[0] != nn or <size_t>cv.shape[0] != nn:
        raise ValueError("mean, var and cov must have one entry per node")
    out = np.zeros((n, 2), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef const mt_index[::1] off = paths.offset
    cdef const mt_index[::1] nodes = paths.node
    cdef const double[::1] gaps = paths.gap
    cdef int status
    forest._begin_read()
    try:
        with nogil:
            status = mt_forest_gauss_mixture_paths(&forest.f, &off[0], &nodes[0], &gaps[0], n,
                                                   lam, &mv[0], &vv[0], &cv[0], prior_mean,
                                                   prior_var, time_scale, noise_var, nt,
                                                   &ov[0, 0])
        mt_threads_release()
    finally:
        forest._end_read()
    check_status(status, "gauss_mixture_paths",
                 arg="need 0 <= lifetime <= the forest's, prior_var >= 0, time_scale > 0 "
                     "and noise_var >= 0")
    return out
